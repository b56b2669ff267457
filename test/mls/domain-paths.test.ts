/**
 * DomainMember's refusal, resync and snapshot paths, on real ts-mls groups and
 * the blind sequencer: what a member reports before it joins and after it is
 * removed; a member kept and restored; every refusal of `change`, `receive`
 * and `resync` as the exact typed error, with the member's state unchanged;
 * key packages that do not open, are not an admin's, or would replace a
 * generation already held. Provider failures the real library never produces
 * on these inputs are injected by a forwarding provider that fails one call.
 */
import { describe, expect, it } from 'vitest';
import { toHex, utf8 } from '../../src/core/bytes.js';
import { checkBundle, commitAuthenticatedData, decodeBundle, encodeBundle } from '../../src/core/mls/bundle.js';
import {
  DomainMember,
  offerToJoin,
  type DomainError,
  type DomainSnapshot,
  type History,
} from '../../src/core/mls/domain.js';
import { signKekPackage, type Generation } from '../../src/core/mls/kek.js';
import type { MlsFailure, MlsProvider } from '../../src/core/mls/provider.js';
import type { Signer } from '../../src/core/ports.js';
import { err, ok, type Result } from '../../src/core/result.js';
import { domainMesh, seededSigner, type DomainMachine } from '../helpers/mls-domains.js';
import { privateMessage, welcomeMessage } from '../helpers/mls-frames.js';

const TOPIC = new Uint8Array(32).fill(5);
const DOMAIN = 'PATHS';
const GROUP = utf8('paths-group');
const NO_SUMMARY: MlsFailure = { type: 'MlsRejected', reason: 'test: no summary of this state' };

function value<T>(r: Result<T, DomainError | MlsFailure>): T {
  if (!r.ok) throw new Error(`${r.error.type}: ${'reason' in r.error ? r.error.reason : ''}`);
  return r.value;
}

/** A provider that forwards every call to `inner`; a test replaces the calls it makes fail. */
function forwarding(inner: MlsProvider): MlsProvider {
  return {
    name: inner.name,
    signatureKey: () => inner.signatureKey(),
    keyPackage: (identity, key) => inner.keyPackage(identity, key),
    importKeyPackage: (publicPackage, keys) => inner.importKeyPackage(publicPackage, keys),
    createGroup: (groupId, own) => inner.createGroup(groupId, own),
    commit: (state, change) => inner.commit(state, change),
    join: (welcome, own, options) => inner.join(welcome, own, options),
    process: (state, message, options) => inner.process(state, message, options),
    encrypt: (state, message) => inner.encrypt(state, message),
    summary: (state) => inner.summary(state),
    groupInfo: (state) => inner.groupInfo(state),
    rejoin: (groupInfo, own, authenticatedData) => inner.rejoin(groupInfo, own, authenticatedData),
  };
}

/** A provider that cannot summarise the states `hides` picks out of the results of `commit` or `process`. */
function blindTo(inner: MlsProvider, hides: 'staged' | 'opened'): MlsProvider {
  const hidden = new WeakSet<Uint8Array>();
  return {
    ...forwarding(inner),
    commit: async (state, change) => {
      const staged = await inner.commit(state, change);
      if (staged.ok && hides === 'staged') hidden.add(staged.value.state);
      return staged;
    },
    process: async (state, message, options) => {
      const processed = await inner.process(state, message, options);
      if (processed.ok && processed.value.kind === 'application' && hides === 'opened') {
        hidden.add(processed.value.state);
      }
      return processed;
    },
    summary: (state) => (hidden.has(state) ? err(NO_SUMMARY) : inner.summary(state)),
  };
}

type Machine = DomainMachine;

/** Machines sharing one keyring, one admin set and one blind sequencer; `accepted` lists what it took. */
async function mesh(options: { readonly admitAnyLeaf?: boolean } = {}) {
  const { provider, machine, accepted } = await domainMesh({ topic: TOPIC, label: 'domain-paths', ...options });
  const found = async (m: Machine): Promise<DomainMember> => value(await DomainMember.found(m.deps, DOMAIN, GROUP));
  /** `admin` adds `m`, which joins from the accepted bundle. */
  const add = async (admin: DomainMember, m: Machine, history?: History) => {
    const offer = await offerToJoin(m.deps);
    const member = DomainMember.awaiting(m.deps, DOMAIN, GROUP, offer);
    const bundle = value(await admin.change({ add: [offer.keyPackage], ...(history ? { history } : {}) }));
    expect(await member.receive(bundle)).toEqual(ok('applied'));
    return { member, offer, bundle };
  };
  return { provider, machine, found, add, accepted };
}

const gens = (m: DomainMember): number[] => m.generations().map((g) => g.gen);
const keyOf = (m: DomainMember, gen: number): string | undefined =>
  m
    .generations()
    .filter((g) => g.gen === gen)
    .map((g) => toHex(g.key))[0];

/** The group state a member holds (what it keeps at rest). */
function stateOf(m: DomainMember): Uint8Array {
  const state = m.snapshot().state;
  if (!state) throw new Error('no group state');
  return state;
}

/** A commit made from `from`'s current state outside the member (it never adopts it), no one added. */
async function stageFrom(provider: MlsProvider, from: DomainMember, endpoint: Uint8Array) {
  const staged = value(
    await provider.commit(stateOf(from), {
      add: [],
      remove: [],
      authenticatedData: commitAuthenticatedData(endpoint),
    }),
  );
  return { ...staged, epoch: Number(value(provider.summary(staged.state)).epoch) };
}

async function seal(provider: MlsProvider, state: Uint8Array, message: Uint8Array): Promise<Uint8Array> {
  return value(await provider.encrypt(state, message)).message;
}

const blankSnapshot = (overrides: Partial<DomainSnapshot> = {}): DomainSnapshot => ({
  domain: DOMAIN,
  groupId: GROUP,
  state: undefined,
  offer: undefined,
  gens: [],
  entitlements: [],
  removed: false,
  ...overrides,
});

describe('a domain member before it joins, after it is removed, and kept at rest', () => {
  it('founds only on an admin machine, and passes on a provider that cannot create the group', async () => {
    const { machine } = await mesh();
    const member = machine(1, 'member');
    expect(await DomainMember.found(member.deps, DOMAIN, GROUP)).toEqual(
      err({ type: 'NotAdmin', reason: 'domain: only an admin founds a domain' }),
    );
    const refusal: MlsFailure = { type: 'MlsRejected', reason: 'test: no group today' };
    const admin = machine(2, 'admin');
    const provider = { ...forwarding(admin.deps.provider), createGroup: async () => err(refusal) };
    expect(await DomainMember.found({ ...admin.deps, provider }, DOMAIN, GROUP)).toEqual(err(refusal));
  });

  it('reports no group, epoch or members while awaiting its Welcome, and refuses to change it', async () => {
    const { machine, found } = await mesh();
    const w = machine(3, 'admin');
    const W = await found(w);
    expect([W.awaitingWelcome, W.isMember, W.removed, W.epoch]).toEqual([false, true, false, 0n]);
    expect(W.members()).toEqual([toHex(w.key.publicKey)]);

    const c = machine(4, 'admin');
    const C = DomainMember.awaiting(c.deps, DOMAIN, GROUP, await offerToJoin(c.deps));
    expect([C.awaitingWelcome, C.isMember, C.removed, C.epoch]).toEqual([true, false, false, undefined]);
    expect(C.members()).toEqual([]);
    expect(C.current()).toBeUndefined();
    expect(await C.change({ add: [] })).toEqual(
      err({ type: 'NotAMember', reason: 'domain: not a member of this group' }),
    );

    // Neither an offer nor a group: not waiting for anything either.
    const blank = DomainMember.restore(c.deps, blankSnapshot());
    expect([blank.awaitingWelcome, blank.isMember]).toEqual([false, false]);
  });

  it('keeps a removed member out: no change, no resync, and every bundle after is `removed`', async () => {
    const { machine, found, add } = await mesh();
    const [w, c] = [machine(5, 'admin'), machine(6, 'admin')];
    const W = await found(w);
    const { member: C, bundle: joining } = await add(W, c, 'forward');
    const removal = value(await W.change({ remove: [c.key.publicKey] }));
    expect(await C.receive(removal)).toEqual(ok('removed'));
    expect([C.removed, C.isMember, C.awaitingWelcome]).toEqual([true, false, false]);
    const later = value(await W.change({ history: 'fresh', add: [] }));
    for (const bundle of [joining, removal, later]) expect(await C.receive(bundle)).toEqual(ok('removed'));
    expect(await C.change({ remove: [w.key.publicKey] })).toEqual(
      err({ type: 'NotAMember', reason: 'domain: not a member of this group' }),
    );
    expect(await C.resync(value(await w.deps.provider.groupInfo(stateOf(W))))).toEqual(
      err({ type: 'NotAMember', reason: 'domain: no leaf of ours to resync' }),
    );
    expect(gens(C)).toEqual([1]);
  });

  it('restores from its snapshot exactly as it was kept, and carries on from there', async () => {
    const { machine, found, add } = await mesh();
    const [w, c, s] = [machine(7, 'admin'), machine(8, 'member'), machine(9, 'member')];
    const W = await found(w);
    await add(W, c, 'fresh');
    const kept = W.snapshot();
    expect(kept.domain).toBe(DOMAIN);
    expect(toHex(kept.groupId)).toBe(toHex(GROUP));
    expect(kept.removed).toBe(false);
    expect(kept.gens.map((g) => g.gen)).toEqual([1, 2]);
    const R = DomainMember.restore(w.deps, kept);
    expect([R.domain, toHex(R.groupId), R.epoch, R.isMember, R.removed]).toEqual([
      DOMAIN,
      toHex(GROUP),
      1n,
      true,
      false,
    ]);
    expect(R.members()).toEqual(W.members());
    expect(R.generations().map((g) => [g.gen, toHex(g.key)])).toEqual(
      W.generations().map((g) => [g.gen, toHex(g.key)]),
    );
    expect(R.entitlements()).toEqual(W.entitlements());
    await add(R, s, 'forward');
    expect(R.epoch).toBe(2n);

    const removed = DomainMember.restore(w.deps, { ...kept, removed: true });
    expect([removed.removed, removed.isMember]).toEqual([true, false]);
  });

  it('lists generations in order of generation whatever order they were kept in', async () => {
    const { machine } = await mesh();
    const w = machine(10, 'admin');
    const key = (n: number) => new Uint8Array(32).fill(n);
    for (const order of [
      [3, 1, 2],
      [2, 3, 1],
      [1, 3, 2],
    ]) {
      const kept: Generation[] = order.map((gen) => ({ gen, key: key(gen) }));
      const R = DomainMember.restore(w.deps, blankSnapshot({ gens: kept }));
      expect(gens(R), order.join()).toEqual([1, 2, 3]);
      expect(R.current()?.gen).toBe(3);
      expect(R.snapshot().gens.map((g) => g.gen)).toEqual([1, 2, 3]);
    }
  });
});

describe('changing membership', () => {
  it('adds forward-only by default, and hands every generation with full history', async () => {
    const { machine, found, add } = await mesh();
    const [w, c, s, a] = [machine(11, 'admin'), machine(12, 'member'), machine(13, 'member'), machine(14, 'member')];
    const W = await found(w);
    const { member: C } = await add(W, c, 'fresh');
    expect(gens(W)).toEqual([1, 2]);
    const { member: S } = await add(W, s, 'full');
    expect(gens(S)).toEqual([1, 2]);
    expect(keyOf(S, 1)).toBe(keyOf(W, 1));
    const { member: A } = await add(W, a);
    expect(gens(A)).toEqual([2]);
    expect(gens(C)).toEqual([2]);
    expect(W.entitlements().map((e) => [e.machine, e.history, e.fromGen])).toEqual([
      [toHex(w.key.publicKey), 'full', 1],
      [toHex(c.key.publicKey), 'fresh', 2],
      [toHex(s.key.publicKey), 'full', 1],
      [toHex(a.key.publicKey), 'forward', 2],
    ]);
  });

  it('refuses a change from a machine that is not an admin, and a removal of a machine not in the group', async () => {
    const { machine, found, add, accepted } = await mesh();
    const [w, c] = [machine(15, 'admin'), machine(16, 'member')];
    const W = await found(w);
    const { member: C } = await add(W, c);
    expect(await C.change({ remove: [w.key.publicKey] })).toEqual(
      err({ type: 'NotAdmin', reason: 'domain: only an admin changes membership' }),
    );
    const stranger = seededSigner(99).publicKey;
    expect(await W.change({ remove: [c.key.publicKey, stranger] })).toEqual(
      err({ type: 'NotAMember', reason: `domain: ${toHex(stranger).slice(0, 8)} is not in the group` }),
    );
    expect(accepted).toHaveLength(1);
    expect(W.epoch).toBe(1n);
    expect(W.members()).toEqual([w, c].map((m) => toHex(m.key.publicKey)));
  });

  it('passes on what the provider refuses, and sequences nothing', async () => {
    const { machine, found, accepted } = await mesh();
    const w = machine(17, 'admin');
    const W = await found(w);
    const junk = utf8('not a key package');
    expect(await W.change({ add: [junk] })).toEqual(
      err({ type: 'MlsRejected', reason: 'mls: a key package to add does not decode' }),
    );
    // The state it keeps no longer decodes.
    const damaged = DomainMember.restore(w.deps, { ...W.snapshot(), state: utf8('damaged') });
    expect(await damaged.change({ remove: [w.key.publicKey] })).toEqual(
      err({ type: 'MlsRejected', reason: 'mls: group state does not decode' }),
    );
    expect(damaged.epoch).toBeUndefined();

    const c = machine(18, 'member');
    const offer = await offerToJoin(c.deps);
    const staged = machine(19, 'admin', { provider: blindTo(w.deps.provider, 'staged') });
    const X = await found(staged);
    expect(await X.change({ add: [offer.keyPackage] })).toEqual(err(NO_SUMMARY));
    expect(X.epoch).toBe(0n);

    const refusal: MlsFailure = { type: 'MlsRejected', reason: 'test: cannot seal' };
    const sealing = machine(20, 'admin', {
      provider: { ...forwarding(w.deps.provider), encrypt: async () => err(refusal) },
    });
    const Y = await found(sealing);
    expect(await Y.change({ add: [offer.keyPackage] })).toEqual(err(refusal));
    expect(Y.epoch).toBe(0n);
    expect(gens(Y)).toEqual([1]);
    expect(accepted).toHaveLength(0);
  });

  it('throws on a member that holds no generation: a broken invariant, not a refusal', async () => {
    const { machine, found } = await mesh();
    const [w, c] = [machine(21, 'admin'), machine(22, 'member')];
    const W = await found(w);
    const bare = DomainMember.restore(w.deps, { ...W.snapshot(), gens: [] });
    const offer = await offerToJoin(c.deps);
    await expect(bare.change({ add: [offer.keyPackage] })).rejects.toThrow('domain: a member without a generation');
  });

  it('records entitlements only for machines a change adds', async () => {
    const { machine, found, add } = await mesh();
    const [w, c] = [machine(23, 'admin'), machine(24, 'member')];
    const W = await found(w);
    await add(W, c);
    const R = DomainMember.restore(w.deps, { ...W.snapshot(), entitlements: [] });
    value(await R.change({ remove: [c.key.publicKey] }));
    expect(gens(R)).toEqual([1, 2]);
    expect(R.entitlements()).toEqual([]);
  });

  it('lists only members whose leaf binds a machine, and skips others when looking one up', async () => {
    const { machine, found, provider } = await mesh({ admitAnyLeaf: true });
    const w = machine(25, 'admin');
    const W = await found(w);
    const unbound = await provider.keyPackage(utf8('not a leaf binding'), await provider.signatureKey());
    value(await W.change({ add: [unbound.publicPackage] }));
    expect(value(provider.summary(stateOf(W))).members).toHaveLength(2);
    expect(W.members()).toEqual([toHex(w.key.publicKey)]);
    expect(W.entitlements().map((e) => e.machine)).toEqual([toHex(w.key.publicKey)]);
    const stranger = seededSigner(98).publicKey;
    expect(await W.change({ remove: [stranger] })).toEqual(
      err({ type: 'NotAMember', reason: `domain: ${toHex(stranger).slice(0, 8)} is not in the group` }),
    );
  });
});

describe('receiving bundles', () => {
  it('refuses bytes that are not a bundle, and a commit that is not one of this group', async () => {
    const { machine, found } = await mesh();
    const w = machine(31, 'admin');
    const W = await found(w);
    expect(await W.receive(Uint8Array.of(1, 2, 3))).toEqual(
      err({ type: 'MlsRejected', reason: 'bundle: cbor: 2 trailing bytes at byte 1' }),
    );
    const ad = commitAuthenticatedData(w.endpoint);
    const notOurs = [
      privateMessage(utf8('another-group'), 0, 'commit', ad),
      Uint8Array.of(0, 1, 0, 9),
      welcomeMessage(),
    ];
    for (const commit of notOurs) {
      expect(await W.receive(encodeBundle({ commit, welcome: undefined, kek: undefined }))).toEqual(
        err({ type: 'MlsRejected', reason: 'domain: not a commit of this group' }),
      );
    }
    expect(W.epoch).toBe(0n);
  });

  it('takes a Welcome only when waiting for one, and ignores a Welcome for others', async () => {
    const { machine, found, add, provider } = await mesh();
    const [w, c, s] = [machine(32, 'admin'), machine(33, 'member'), machine(34, 'member')];
    const W = await found(w);
    const { bundle: addsC } = await add(W, c);
    const S = DomainMember.awaiting(s.deps, DOMAIN, GROUP, await offerToJoin(s.deps));
    expect(await S.receive(addsC)).toEqual(ok('duplicate'));
    expect([S.awaitingWelcome, S.epoch, gens(S)]).toEqual([true, undefined, []]);
    const noWelcome = await stageFrom(provider, W, w.endpoint);
    const bare = encodeBundle({ commit: noWelcome.commit, welcome: undefined, kek: undefined });
    expect(await S.receive(bare)).toEqual(ok('duplicate'));
    const blank = DomainMember.restore(s.deps, blankSnapshot());
    for (const bundle of [addsC, bare]) expect(await blank.receive(bundle)).toEqual(ok('duplicate'));
    expect(blank.awaitingWelcome).toBe(false);
  });

  it('treats a bundle of an epoch already behind it as a duplicate', async () => {
    const { machine, found, add } = await mesh();
    const [w, c, s] = [machine(35, 'admin'), machine(36, 'member'), machine(37, 'member')];
    const W = await found(w);
    const { member: C, bundle: addsC } = await add(W, c);
    const { bundle: addsS } = await add(W, s);
    expect(await C.receive(addsS)).toEqual(ok('applied'));
    expect(C.epoch).toBe(2n);
    for (const bundle of [addsC, addsS]) {
      expect(await W.receive(bundle)).toEqual(ok('duplicate'));
      expect(await C.receive(bundle)).toEqual(ok('duplicate'));
    }
    expect([W.epoch, C.epoch]).toEqual([2n, 2n]);
  });

  it('passes on a commit of its epoch that does not process, and stays where it was', async () => {
    const { machine, found } = await mesh();
    const w = machine(38, 'admin');
    const W = await found(w);
    const forged = encodeBundle({
      commit: privateMessage(GROUP, 0, 'commit', commitAuthenticatedData(w.endpoint)),
      welcome: undefined,
      kek: undefined,
    });
    const r = await W.receive(forged);
    expect(!r.ok && r.error.type).toBe('MlsRejected');
    expect(!r.ok && 'reason' in r.error && r.error.reason.startsWith('mls: process: ')).toBe(true);
    expect(W.epoch).toBe(0n);
  });

  it('applies the commit but refuses keys that do not open as an application message of the new epoch', async () => {
    const { machine, found, add, provider } = await mesh();
    const [w, c] = [machine(39, 'admin'), machine(40, 'member')];
    const W = await found(w);
    const { member: C } = await add(W, c);
    const next = await stageFrom(provider, W, w.endpoint);
    const garbled = encodeBundle({
      commit: next.commit,
      welcome: undefined,
      kek: privateMessage(GROUP, 2, 'application', new Uint8Array()),
    });
    const refused = err({ type: 'KekRefused', reason: 'domain: the key message does not open in the new epoch' });
    expect(await C.receive(garbled)).toEqual(refused);
    expect(C.epoch).toBe(2n);

    // A key message that is itself a commit processes, but is no key message: its epoch is not adopted.
    const { member: C2 } = await add(W, machine(41, 'member'));
    const second = value(await W.change({ add: [] }));
    const third = value(await W.change({ add: [] }));
    const [b2, b3] = [value(decodeBundle(second)), value(decodeBundle(third))];
    expect(await C2.receive(encodeBundle({ commit: b2.commit, welcome: undefined, kek: b3.commit }))).toEqual(refused);
    expect(C2.epoch).toBe(3n);
    expect(gens(C2)).toEqual([1]);
  });

  it('refuses keys that do not decode or are not an admin’s, and never replaces a generation held', async () => {
    const { machine, found, add, provider } = await mesh();
    const [w, c] = [machine(42, 'admin'), machine(43, 'member')];
    const W = await found(w);
    const { member: C } = await add(W, c);
    const kept = C.snapshot();
    /** C, as kept, receives W's next commit with this key message. */
    const receive = async (pkg: (epoch: number) => Promise<Uint8Array>) => {
      const staged = await stageFrom(provider, W, w.endpoint);
      const kek = await seal(provider, staged.state, await pkg(staged.epoch));
      const R = DomainMember.restore(c.deps, kept);
      return { R, verdict: await R.receive(encodeBundle({ commit: staged.commit, welcome: undefined, kek })) };
    };
    const by = (who: Signer, list: Generation[]) => (epoch: number) =>
      signKekPackage({ domain: DOMAIN, group: GROUP, epoch, gens: list }, who);
    const two: Generation = { gen: 2, key: new Uint8Array(32).fill(0x77) };

    const garbage = await receive(async () => utf8('not a package'));
    expect(garbage.verdict).toEqual(err({ type: 'KekRefused', reason: 'kek: not [body, sig]' }));
    expect([garbage.R.epoch, gens(garbage.R)]).toEqual([2n, [1]]);

    const byMember = await receive(by(c.key, [two]));
    expect(byMember.verdict).toEqual(
      err({ type: 'KekRefused', reason: 'domain: the key package is not signed by an admin' }),
    );
    expect(gens(byMember.R)).toEqual([1]);

    const byAdmin = await receive(by(w.key, [{ gen: 1, key: new Uint8Array(32).fill(0x66) }, two]));
    expect(byAdmin.verdict).toEqual(ok('applied'));
    expect(byAdmin.R.generations().map((g) => [g.gen, toHex(g.key)])).toEqual([
      [1, keyOf(C, 1)],
      [2, toHex(two.key)],
    ]);
  });

  it('refuses keys when the provider cannot say which epoch the opened state is in', async () => {
    const { machine, found } = await mesh();
    const w = machine(45, 'admin');
    const W = await found(w);
    const blind = machine(46, 'member', { provider: blindTo(w.deps.provider, 'opened') });
    const offer = await offerToJoin(blind.deps);
    const X = DomainMember.awaiting(blind.deps, DOMAIN, GROUP, offer);
    const bundle = value(await W.change({ add: [offer.keyPackage] }));
    expect(await X.receive(bundle)).toEqual(err({ type: 'KekRefused', reason: 'domain: no state' }));
    expect(gens(X)).toEqual([]);
  });
});

describe('resync by external commit', () => {
  /** W founds, adds C and then S; C misses S's bundle. */
  async function behind() {
    const world = await mesh();
    const [w, c, s] = [world.machine(51, 'admin'), world.machine(52, 'member'), world.machine(53, 'member')];
    const W = await world.found(w);
    const { member: C, offer } = await world.add(W, c);
    await world.add(W, s);
    const info = value(await w.deps.provider.groupInfo(stateOf(W)));
    return { ...world, w, c, W, C, offer, info };
  }

  it('rejoins its own leaf through the sequencer; members apply it, and no key travels', async () => {
    const { W, C, c, offer, info, accepted } = await behind();
    expect(C.epoch).toBe(1n);
    const bundle = value(await C.resync(info));
    expect(accepted.at(-1)).toBe(bundle);
    const framing = value(checkBundle(bundle));
    expect([framing.external, framing.epoch, toHex(framing.poster)]).toEqual([true, 2, toHex(c.endpoint)]);
    expect([framing.bundle.welcome, framing.bundle.kek]).toEqual([undefined, undefined]);
    expect(C.epoch).toBe(3n);
    expect(await W.receive(bundle)).toEqual(ok('applied'));
    expect(W.epoch).toBe(3n);
    expect(W.members()).toContain(toHex(c.key.publicKey));
    expect(gens(C)).toEqual([1]);
    // The same leaf (identity, signature key), a new key package, kept for the next resync.
    const leaf = C.snapshot().offer;
    expect(leaf && [toHex(leaf.identity), toHex(leaf.key.publicKey)]).toEqual([
      toHex(offer.identity),
      toHex(offer.key.publicKey),
    ]);
    expect(leaf && toHex(leaf.keyPackage)).toBe(leaf && toHex(leaf.pair.publicPackage));
    expect(leaf && toHex(leaf.keyPackage)).not.toBe(toHex(offer.keyPackage));
  });

  it('keeps its state when the sequencer refuses or cannot be asked', async () => {
    const { C, c, info, accepted } = await behind();
    const offline = { type: 'SequencerUnavailable', reason: 'test: offline' } as const;
    const cut = DomainMember.restore({ ...c.deps, sequence: async () => err(offline) }, C.snapshot());
    const before = cut.snapshot();
    expect(await cut.resync(info)).toEqual(err(offline));
    expect(cut.epoch).toBe(1n);
    expect(cut.snapshot()).toEqual(before);
    // The epoch is taken by the time C posts: the loser is told, and stays where it was.
    value(await C.resync(info));
    const late = DomainMember.restore(c.deps, before);
    const taken = await late.resync(info);
    expect(!taken.ok && taken.error.type).toBe('EpochTaken');
    expect(late.epoch).toBe(1n);
    expect(accepted).toHaveLength(3);
  });

  it('refuses a GroupInfo that does not decode or is of another group, and a member with no leaf', async () => {
    const { W, C, c, w, info, accepted } = await behind();
    expect(await C.resync(utf8('not a group info'))).toEqual(
      err({ type: 'MlsRejected', reason: 'mls: not a GroupInfo' }),
    );
    const other = value(await DomainMember.found(w.deps, 'OTHER', utf8('other-group')));
    expect(await C.resync(value(await w.deps.provider.groupInfo(stateOf(other))))).toEqual(
      err({ type: 'MlsRejected', reason: 'domain: the GroupInfo is for another group' }),
    );
    expect(C.epoch).toBe(1n);
    const leafless = DomainMember.restore(c.deps, { ...C.snapshot(), offer: undefined });
    expect(await leafless.resync(info)).toEqual(
      err({ type: 'NotAMember', reason: 'domain: no leaf of ours to resync' }),
    );
    expect(accepted).toHaveLength(2);
    expect(W.epoch).toBe(2n);
  });

  it('is refused by members when it would bring in a machine that is not in the group', async () => {
    const { W, C, info, machine, provider } = await behind();
    // A machine of the mesh, never added to this domain, that got hold of a GroupInfo.
    const x = machine(54, 'member');
    const offer = await offerToJoin(x.deps);
    const staged = value(await provider.rejoin(info, offer.pair, commitAuthenticatedData(x.endpoint)));
    const bundle = encodeBundle({ commit: staged.commit, welcome: undefined, kek: undefined });
    expect(value(checkBundle(bundle)).external).toBe(true);
    const before = W.snapshot();
    expect(await W.receive(bundle)).toEqual(
      err({ type: 'MlsRejected', reason: 'domain: an external commit may only rejoin a member already in the group' }),
    );
    expect(W.snapshot()).toEqual(before);
    expect(W.members()).not.toContain(toHex(offer.identity));
    // A member's own resync still goes through.
    expect(await W.receive(value(await C.resync(info)))).toEqual(ok('applied'));
  });

  it('fails closed: an external commit whose members cannot be read is refused, even a resync', async () => {
    const { W, C, w, info, provider } = await behind();
    const bundle = value(await C.resync(info));
    // A provider that cannot summarise the state a processed commit leads to.
    const hidden = new WeakSet<Uint8Array>();
    const blind: MlsProvider = {
      ...forwarding(provider),
      process: async (state, message, options) => {
        const processed = await provider.process(state, message, options);
        if (processed.ok && processed.value.kind !== 'application') hidden.add(processed.value.state);
        return processed;
      },
      summary: (state) => (hidden.has(state) ? err(NO_SUMMARY) : provider.summary(state)),
    };
    const unsure = DomainMember.restore({ ...w.deps, provider: blind }, W.snapshot());
    expect(await unsure.receive(bundle)).toEqual(
      err({ type: 'MlsRejected', reason: 'domain: an external commit may only rejoin a member already in the group' }),
    );
    expect(unsure.epoch).toBe(W.epoch);
  });
});
