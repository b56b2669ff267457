/**
 * Rotation on MLS (seed 003 "Rotating keys"), with real ts-mls groups and the blind
 * sequencer: a rotation is an empty commit that mints a generation for every member; the
 * entitlement table and the generations that carry rewrapped history travel in every key
 * package, so a second admin knows how the first let machines in; a forward-only add while
 * the current generation carries history mints a new one instead of handing it over.
 */
import { describe, expect, it } from 'vitest';
import { toHex, utf8 } from '../../src/core/bytes.js';
import { DomainMember, offerToJoin } from '../../src/core/mls/domain.js';
import { domainMesh } from '../helpers/mls-domains.js';

const TOPIC = new Uint8Array(32).fill(5);
const gens = (m: DomainMember) => m.generations().map((g) => g.gen);
const table = (m: DomainMember) =>
  m
    .entitlements()
    .map((e) => `${e.machine.slice(0, 6)}:${e.history}:${e.fromGen}`)
    .sort();

describe('rotation', () => {
  it('mints a generation for every member, tells every member who was let in how, and a forward add after it mints', async () => {
    const { machine, deliver } = await domainMesh({ topic: TOPIC, label: 'rotation' });
    const [w, x, c, f] = [machine(31, 'admin'), machine(32, 'admin'), machine(33, 'member'), machine(34, 'member')];
    const group = utf8('LAB-group');
    const founded = await DomainMember.found(w.deps, 'LAB', group);
    if (!founded.ok) throw new Error(founded.error.type);
    const W = founded.value;
    const [xOffer, cOffer] = [await offerToJoin(x.deps), await offerToJoin(c.deps)];
    const X = DomainMember.awaiting(x.deps, 'LAB', group, xOffer);
    const C = DomainMember.awaiting(c.deps, 'LAB', group, cOffer);
    expect((await W.change({ add: [xOffer.keyPackage], history: 'full' })).ok).toBe(true);
    await deliver([X]);
    expect((await W.change({ add: [cOffer.keyPackage], history: 'forward' })).ok).toBe(true);
    await deliver([X, C]);
    // Routine adds mint nothing; every member learned the table from the packages.
    expect(gens(C)).toEqual([1]);
    const expected = [
      `${toHex(w.key.publicKey).slice(0, 6)}:full:1`,
      `${toHex(x.key.publicKey).slice(0, 6)}:full:1`,
      `${toHex(c.key.publicKey).slice(0, 6)}:forward:1`,
    ].sort();
    for (const m of [W, X, C]) expect(table(m)).toEqual(expected);

    // The second admin rotates: an empty commit, generation 2 for all three.
    const epoch = X.epoch!;
    expect((await X.change({ rotate: true })).ok).toBe(true);
    await deliver([W, C]);
    for (const m of [W, X, C]) {
      expect(m.epoch).toBe(epoch + 1n);
      expect(m.current()!.gen).toBe(2);
      expect(toHex(m.current()!.key)).toBe(toHex(X.current()!.key));
      expect(m.historyGens()).toEqual([2]);
      expect(table(m)).toEqual(expected);
    }

    // Generation 2 may carry older objects: a forward-only joiner gets a new generation, 3.
    const fOffer = await offerToJoin(f.deps);
    const F = DomainMember.awaiting(f.deps, 'LAB', group, fOffer);
    expect((await W.change({ add: [fOffer.keyPackage], history: 'forward' })).ok).toBe(true);
    await deliver([X, C, F]);
    expect(gens(F)).toEqual([3]);
    for (const m of [W, X, C]) expect(gens(m)).toEqual([1, 2, 3]);
    expect(F.entitlements().find((e) => e.machine === toHex(f.key.publicKey))).toEqual({
      machine: toHex(f.key.publicKey),
      history: 'forward',
      fromGen: 3,
    });
    // Generation 3 carries no history: a joiner of it sees only what is published under it.
    expect(F.historyGens()).toEqual([2]);

    // A removal carries history too; the removed machine leaves the table.
    expect((await X.change({ remove: [c.key.publicKey] })).ok).toBe(true);
    await deliver([W, C, F]);
    expect(C.removed).toBe(true);
    for (const m of [W, X, F]) {
      expect(m.historyGens()).toEqual([2, 4]);
      expect(m.entitlements().some((e) => e.machine === toHex(c.key.publicKey))).toBe(false);
    }
  }, 60_000);

  it('a rotation by a machine that is not an admin is refused', async () => {
    const { machine, deliver } = await domainMesh({ topic: TOPIC, label: 'rotation-2' });
    const [w, c] = [machine(41, 'admin'), machine(42, 'member')];
    const group = utf8('LAB2-group');
    const W = (await DomainMember.found(w.deps, 'LAB2', group)) as { ok: true; value: DomainMember };
    const cOffer = await offerToJoin(c.deps);
    const C = DomainMember.awaiting(c.deps, 'LAB2', group, cOffer);
    await W.value.change({ add: [cOffer.keyPackage], history: 'full' });
    await deliver([C]);
    const rotated = await C.change({ rotate: true });
    expect(!rotated.ok && rotated.error.type).toBe('NotAdmin');
    expect(gens(C)).toEqual([1]);
  }, 60_000);
});
