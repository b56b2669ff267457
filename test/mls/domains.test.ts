/**
 * Domains on MLS with four machines in one process (seed 003's W, C, S, A),
 * real ts-mls groups and the blind sequencer: KEK generations minted only on
 * membership-security events; forward-only and fresh joiners never receive
 * older generations; a removed member cannot open the generation minted after
 * its removal; two admins racing for one epoch — exactly one wins, the other
 * processes the winner and retries cleanly; non-admin key packages refused.
 */
import { describe, expect, it } from 'vitest';
import { toHex, utf8 } from '../../src/core/bytes.js';
import { DomainMember, offerToJoin } from '../../src/core/mls/domain.js';
import { domainMesh } from '../helpers/mls-domains.js';

const TOPIC = new Uint8Array(32).fill(3);

const mesh = () => domainMesh({ topic: TOPIC, label: 'domains' });

const gens = (m: DomainMember) => m.generations().map((g) => g.gen);

describe('domains on MLS', () => {
  it('adds with forward, full and fresh history, removes with a new generation the removed cannot open', async () => {
    const { machine, deliver } = await mesh();
    const [w, c, s, a] = [machine(1, 'admin'), machine(2, 'member'), machine(3, 'member'), machine(4, 'member')];
    const group = utf8('RESTRICTED-group');
    const founded = await DomainMember.found(w.deps, 'RESTRICTED', group);
    if (!founded.ok) throw new Error(founded.error.type);
    const W = founded.value;
    expect(gens(W)).toEqual([1]);

    // C joins with full history; an epoch change, no new generation.
    const cOffer = await offerToJoin(c.deps);
    const C = DomainMember.awaiting(c.deps, 'RESTRICTED', group, cOffer);
    expect((await W.change({ add: [cOffer.keyPackage], history: 'full' })).ok).toBe(true);
    await deliver([C]);
    expect(gens(C)).toEqual([1]);
    expect(gens(W)).toEqual([1]);

    // S must not read what exists: a fresh generation, and S holds only it.
    const sOffer = await offerToJoin(s.deps);
    const S = DomainMember.awaiting(s.deps, 'RESTRICTED', group, sOffer);
    expect((await W.change({ add: [sOffer.keyPackage], history: 'fresh' })).ok).toBe(true);
    await deliver([C, S]);
    expect(gens(W)).toEqual([1, 2]);
    expect(gens(C)).toEqual([1, 2]);
    expect(gens(S)).toEqual([2]);

    // A joins forward-only: the current generation, never an older one.
    const aOffer = await offerToJoin(a.deps);
    const A = DomainMember.awaiting(a.deps, 'RESTRICTED', group, aOffer);
    expect((await W.change({ add: [aOffer.keyPackage], history: 'forward' })).ok).toBe(true);
    await deliver([C, S, A]);
    expect(gens(A)).toEqual([2]);
    expect(W.entitlements().map((e) => [e.machine.slice(0, 4), e.history, e.fromGen])).toEqual([
      [toHex(w.key.publicKey).slice(0, 4), 'full', 1],
      [toHex(c.key.publicKey).slice(0, 4), 'full', 1],
      [toHex(s.key.publicKey).slice(0, 4), 'fresh', 2],
      [toHex(a.key.publicKey).slice(0, 4), 'forward', 2],
    ]);

    // C is revoked: MLS Remove + Commit, generation 3 to the remaining members only.
    expect((await W.change({ remove: [c.key.publicKey] })).ok).toBe(true);
    await deliver([C, S, A]);
    expect(C.removed).toBe(true);
    expect(gens(C)).toEqual([1, 2]);
    for (const m of [W, S, A]) expect(gens(m)).toEqual(m === S || m === A ? [2, 3] : [1, 2, 3]);
    expect(toHex(S.current()!.key)).toBe(toHex(W.current()!.key));
    expect(W.members()).toEqual([w, s, a].map((x) => toHex(x.key.publicKey)));
    // Every key C ever held differs from generation 3.
    expect(C.generations().some((g) => toHex(g.key) === toHex(W.current()!.key))).toBe(false);
  }, 60_000);

  it('two admins racing for one epoch: exactly one wins, the other processes it and retries', async () => {
    const { machine, deliver, accepted } = await mesh();
    const [w, x, c, s] = [machine(11, 'admin'), machine(12, 'admin'), machine(13, 'member'), machine(14, 'member')];
    const group = utf8('GENERAL-group');
    const W = (await DomainMember.found(w.deps, 'GENERAL', group)) as { ok: true; value: DomainMember };
    const xOffer = await offerToJoin(x.deps);
    const X = DomainMember.awaiting(x.deps, 'GENERAL', group, xOffer);
    await W.value.change({ add: [xOffer.keyPackage], history: 'full' });
    await deliver([X]);
    const [cOffer, sOffer] = [await offerToJoin(c.deps), await offerToJoin(s.deps)];
    const C = DomainMember.awaiting(c.deps, 'GENERAL', group, cOffer);
    const S = DomainMember.awaiting(s.deps, 'GENERAL', group, sOffer);
    const [byW, byX] = await Promise.all([
      W.value.change({ add: [cOffer.keyPackage], history: 'forward' }),
      X.change({ add: [sOffer.keyPackage], history: 'forward' }),
    ]);
    expect([byW.ok, byX.ok].filter(Boolean)).toHaveLength(1);
    const [winner, loser, loserOffer] = byW.ok ? [W.value, X, sOffer] : [X, W.value, cOffer];
    const lost = byW.ok ? byX : byW;
    if (lost.ok || lost.error.type !== 'EpochTaken') throw new Error('the loser must be told the epoch is taken');
    // The loser never adopted its staged epoch: it processes the winner, then retries.
    expect((await loser.receive(lost.error.winner.bundle)).ok).toBe(true);
    expect(loser.epoch).toBe(winner.epoch);
    expect((await loser.change({ add: [loserOffer.keyPackage], history: 'forward' })).ok).toBe(true);
    await deliver([W.value, X, C, S]);
    const epochs = new Set([W.value, X, C, S].map((m) => m.epoch));
    expect(epochs).toEqual(new Set([3n]));
    expect(accepted).toHaveLength(3);
    for (const m of [C, S]) expect(gens(m)).toEqual([1]);
  }, 60_000);

  it('refuses membership changes from a machine that is not an admin, and keys signed by one', async () => {
    const { machine, deliver } = await mesh();
    const [w, c, s] = [machine(21, 'admin'), machine(22, 'member'), machine(23, 'member')];
    const group = utf8('G3');
    const W = (await DomainMember.found(w.deps, 'G3', group)) as { ok: true; value: DomainMember };
    const cOffer = await offerToJoin(c.deps);
    const C = DomainMember.awaiting(c.deps, 'G3', group, cOffer);
    await W.value.change({ add: [cOffer.keyPackage], history: 'full' });
    await deliver([C]);
    const sOffer = await offerToJoin(s.deps);
    const byMember = await C.change({ add: [sOffer.keyPackage] });
    expect(!byMember.ok && byMember.error.type).toBe('NotAdmin');
    expect((await DomainMember.found(c.deps, 'MINE', utf8('x'))).ok).toBe(false);
  }, 60_000);
});
