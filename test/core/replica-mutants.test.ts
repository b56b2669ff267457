/**
 * Decisions of core/replica.ts that the scenario tests pass through without pinning them:
 * what `reopen` does with an entry that must wait again, cannot apply or fails; when a batch
 * makes room in a full parking and when it retries parked envelopes; what a restarted replica
 * answers for envelopes parked before it started; the exact park and rejection records; the
 * order parked envelopes are retried in; what a batch asks a store to prefetch; and how long
 * the replica remembers the envelopes it holds.
 */
import { describe, expect, it } from 'vitest';
import { toHex } from '../../src/core/bytes.js';
import { DomainKeyring } from '../../src/core/domain-keys.js';
import { EVENT_VERSION, signEvent, ZERO_HASH, type EventBody } from '../../src/core/event.js';
import type { Signer } from '../../src/core/ports.js';
import { Replica, type EnvelopeCrypto, type IngestOutcome } from '../../src/core/replica.js';
import { decodeSealed, encodeSealed, envelopeId, sealEvent, undecodableId } from '../../src/core/seal.js';
import type { Awaitable } from '../../src/core/steps.js';
import type { Lookup, ReplicaTx } from '../../src/core/store.js';
import { everyTablePublic, type PrivacyPolicy } from '../../src/core/sync-manifest.js';
import { MemoryReplicaStore } from '../../src/storage/memory-store.js';
import {
  CrashingStore,
  InjectedFault,
  makeMachine,
  makeMesh,
  seededRandom,
  testClock,
  unsafeTestingFastSigner,
  unsafeTestingFastVerifier,
  type Machine,
  type MachineOptions,
  type Mesh,
} from '../helpers/deterministic.js';

const START = testClock().now();

/** Puts a device profile row on `m`; the envelope it logged. */
async function put(m: Machine, row: string, name: string): Promise<Uint8Array> {
  const result = await m.replica.write('device_profiles', row, { name });
  if (!result.ok) throw new Error(`fixture: ${result.error.type}`);
  const [entry] = await m.store.entriesByOuterId([result.value.outerId]);
  return entry!.sealed;
}

const idOf = (bytes: Uint8Array): string => {
  const sealed = decodeSealed(bytes);
  return sealed.ok ? envelopeId(sealed.value) : undecodableId(bytes);
};

/** An event signed as given (no chain of `signer`'s own behind it), sealed under the mesh's key. */
async function crafted(mesh: Mesh, signer: Signer, over: Partial<EventBody>): Promise<Uint8Array> {
  const body: EventBody = {
    v: EVENT_VERSION,
    domain: 'GENERAL',
    signer: signer.publicKey,
    seq: 1,
    prev: ZERO_HASH,
    table: 'device_profiles',
    row: 'crafted',
    op: 'put',
    cols: { name: 'crafted' },
    hlc: { ms: START, counter: 0 },
    ...over,
  };
  const event = await signEvent(body, signer);
  const key = mesh.keys[body.domain]!;
  return encodeSealed(sealEvent(event.bytes, body.domain, 1, key, seededRandom(toHex(event.id)), body.lane));
}

/** The first link of a chain whose `prev` names no event: refused as ChainBroken wherever it is admitted. */
const brokenLink = (mesh: Mesh, signer: Signer, over: Partial<EventBody> = {}) =>
  crafted(mesh, signer, { prev: new Uint8Array(32).fill(7), ...over });

/** Five bytes that do not decode as an envelope, different for every `n`. */
const garbage = (n: number): Uint8Array =>
  new Uint8Array([0xff, n >>> 24, (n >>> 16) & 0xff, (n >>> 8) & 0xff, n & 0xff]);

/** An in-memory store that records what batches ask it to prefetch and how often parked envelopes are read. */
class ObservedStore extends MemoryReplicaStore {
  readonly lookups: Lookup[] = [];
  readonly watermarks: [string, number][] = [];
  passes = 0;

  override transact<T>(fn: (tx: ReplicaTx) => Awaitable<T>): Promise<T> {
    return super.transact((tx) =>
      fn({
        ...tx,
        prefetch: (batch) => void this.lookups.push(batch),
        parkedAll: () => (this.passes++, tx.parkedAll()),
        setWatermark: (peer, upto) => (this.watermarks.push([peer, upto]), tx.setWatermark(peer, upto)),
      }),
    );
  }
}

/** A mesh whose anchor is A; S is a machine of it with `options`. */
function pair(seed: string, options: MachineOptions = {}) {
  const mesh = makeMesh(seed);
  const a = makeMachine('A', `${seed}/A`, mesh);
  mesh.anchors.push(a.id);
  const s = makeMachine('S', `${seed}/S`, mesh, options);
  return { mesh, a, s };
}

/** Machine `seed` started again over the store `m` kept: it remembers nothing of what it held. */
const restarted = (m: Machine, seed: string, mesh: Mesh, options: MachineOptions = {}): Machine =>
  makeMachine(m.name, seed, mesh, { ...options, clock: m.clock, wrapStore: () => m.store });

const types = (outcomes: readonly IngestOutcome[]) => outcomes.map((o) => [o.type, o.outerId]);

describe('a replica', () => {
  it('names itself by its signing key', () => {
    const { s } = pair('self');
    expect(s.replica.self).toBe(toHex(s.signer.publicKey));
  });

  /** A replica over a fresh memory store, of a mesh that has no anchor yet, with `deps` added. */
  const bare = (seed: string, deps: Partial<ConstructorParameters<typeof Replica>[0]> = {}) => {
    const store = new MemoryReplicaStore();
    const signer = unsafeTestingFastSigner(seed);
    const replica = new Replica({
      store,
      signer,
      verifier: unsafeTestingFastVerifier,
      envelopes: new DomainKeyring().envelopes(seededRandom(seed)),
      trust: { self: toHex(signer.publicKey), anchors: () => [] },
      privacy: everyTablePublic,
      clock: testClock(),
      ...deps,
    });
    return { store, replica };
  };

  it('refuses an opener that answers for a different number of envelopes, taking nothing in', async () => {
    const { store, replica } = bare('opener', { opener: { open: () => Promise.resolve([]) } });
    await expect(replica.ingest('p', [garbage(1)], 1)).rejects.toThrow(
      /^replica: opener returned the wrong number of results$/,
    );
    expect(await store.rejections(10)).toEqual([]);
    expect(await store.watermark('p')).toBe(0);
  });

  it('runs each batch inside the lock it is given (the Web Lock across tabs), and answers what ran', async () => {
    const held: string[] = [];
    const withLock = async <T>(fn: () => Promise<T>): Promise<T> => {
      held.push('lock');
      return fn();
    };
    const { replica } = bare('locked', { withLock });
    expect(await replica.ingest('p', [garbage(2)], 1)).toMatchObject([{ type: 'Rejected' }]);
    expect(await replica.reevaluate()).toEqual([]);
    expect(held).toEqual(['lock', 'lock']);
  });

  it('moves a peer’s watermark only for a batch that names one', async () => {
    const store = new ObservedStore();
    const { mesh, a } = pair('watermark');
    const s = makeMachine('S', 'watermark/S', mesh, { wrapStore: () => store });
    await s.replica.ingest('a', [await put(a, 'r', 'one')], 1);
    await s.replica.ingest('a', [await put(a, 'r', 'two')]);
    expect(store.watermarks).toEqual([['a', 1]]);
    expect(await s.store.watermark('a')).toBe(1);
  });

  it('lists a table’s rows as the store holds them', async () => {
    const { a } = pair('rows');
    await put(a, 'r', 'one');
    expect(await a.replica.rows('device_profiles')).toEqual(await a.store.rows('device_profiles'));
    expect(await a.replica.rows('device_profiles')).toHaveLength(1);
  });
});

describe('reopen', () => {
  /** S holds only CONTROL: A's device profiles reach it sealed, until `s.keyring` gets GENERAL. */
  const heldAtS = (seed: string, options: MachineOptions = {}) => pair(seed, { domains: ['CONTROL'], ...options });

  it('leaves a held entry that must wait again parked as it was', async () => {
    const { mesh, a, s } = heldAtS('reopen-wait');
    const first = await put(a, 'r', 'one');
    const second = await put(a, 'r', 'two');
    expect(types(await s.replica.ingest('a', [second]))).toEqual([['StoredOpaque', idOf(second)]]);
    s.keyring.add('GENERAL', 1, mesh.keys.GENERAL);
    expect(await s.replica.reopen()).toEqual([]);
    const parked = await s.store.parked(10);
    expect(parked).toMatchObject([{ outerId: idOf(second), reason: 'ChainGap', parkedAt: START, fill: 1 }]);
    s.clock.advance(1000);
    expect(await s.replica.reopen()).toEqual([]);
    expect(await s.store.parked(10)).toEqual(parked);
    // The missing link arrives: the waiting one fills the entry it was held in.
    expect(types(await s.replica.ingest('a', [first]))).toEqual([
      ['Applied', idOf(first)],
      ['Applied', idOf(second)],
    ]);
    expect((await s.store.entriesAfter(0, 10)).map((e) => [e.pos, e.outerId, e.seq])).toEqual([
      [1, idOf(second), 2],
      [2, idOf(first), 1],
    ]);
  });

  it('leaves a held entry that would be refused held, unrecorded', async () => {
    const { mesh, a, s } = heldAtS('reopen-refused');
    const broken = await brokenLink(mesh, a.signer);
    expect(types(await s.replica.ingest('a', [broken]))).toEqual([['StoredOpaque', idOf(broken)]]);
    s.keyring.add('GENERAL', 1, mesh.keys.GENERAL);
    expect(await s.replica.reopen()).toEqual([]);
    expect((await s.store.entriesAfter(0, 10)).map((e) => [e.outerId, e.eventId])).toEqual([[idOf(broken), undefined]]);
    expect(await s.store.rejections(10)).toEqual([]);
    expect(await s.store.parkedCount()).toBe(0);
  });

  it('fails when the store fails, and the entry stays held for the next try', async () => {
    const store = new CrashingStore(new MemoryReplicaStore());
    const { mesh, a, s } = heldAtS('reopen-fault', { wrapStore: () => store });
    const first = await put(a, 'r', 'one');
    await s.replica.ingest('a', [first]);
    s.keyring.add('GENERAL', 1, mesh.keys.GENERAL);
    store.crashAt(1);
    await expect(s.replica.reopen()).rejects.toBeInstanceOf(InjectedFault);
    expect(store.crashes).toBe(1);
    expect((await s.store.entriesAfter(0, 10)).map((e) => e.eventId)).toEqual([undefined]);
    expect(types(await s.replica.reopen())).toEqual([['Applied', idOf(first)]]);
  });

  // With room, the second parks on the first pass and is applied on the next (not reported again
  // by the retry of parked envelopes); without, the next pass over the log takes it in.
  it.each([
    ['with room to park', 8],
    ['with no room to park', 0],
  ])('takes in a chain held in reverse order %s, each envelope once', async (_, maxParked) => {
    const { mesh, a, s } = heldAtS(`reopen-reverse-${maxParked}`, { maxParked });
    const first = await put(a, 'r', 'one');
    const second = await put(a, 'r', 'two');
    await s.replica.ingest('a', [second]);
    await s.replica.ingest('a', [first]);
    s.keyring.add('GENERAL', 1, mesh.keys.GENERAL);
    expect(types(await s.replica.reopen())).toEqual([
      ['Applied', idOf(first)],
      ['Applied', idOf(second)],
    ]);
    expect(await s.store.parkedCount()).toBe(0);
    expect((await s.store.entriesAfter(0, 10)).map((e) => e.seq)).toEqual([2, 1]);
    expect((await s.store.row('device_profiles', 'r'))?.cells['name']?.value).toBe('two');
  });

  it('retries parked envelopes only once it took something in, and records their refusals as local', async () => {
    const mesh = makeMesh('reopen-retry');
    const a = makeMachine('A', 'reopen-retry/A', mesh);
    const b = makeMachine('B', 'reopen-retry/B', mesh);
    mesh.anchors.push(a.id, b.id);
    const s = makeMachine('S', 'reopen-retry/S', mesh, { domains: ['CONTROL'], maxSkewMs: 1000 });
    const held = await put(a, 'r', 'one');
    // B's setting from 5 s ahead, whose chain is broken: parked for the clock, refused once retried.
    const early = await brokenLink(mesh, b.signer, {
      domain: 'CONTROL',
      table: 'settings',
      row: 'x',
      cols: { value: 1 },
      hlc: { ms: START + 5000, counter: 0 },
    });
    expect(types(await s.replica.ingest('a', [held]))).toEqual([['StoredOpaque', idOf(held)]]);
    expect(await s.replica.ingest('b', [early])).toMatchObject([{ type: 'Parked', reason: 'ClockSkew' }]);
    s.clock.advance(5000);
    // Nothing held can be read yet: nothing is taken in, so nothing parked is retried.
    expect(await s.replica.reopen()).toEqual([]);
    expect(await s.store.parkedCount()).toBe(1);
    s.keyring.add('GENERAL', 1, mesh.keys.GENERAL);
    expect((await s.replica.reopen()).map((o) => [o.type, o.outerId, o.type === 'Rejected' && o.error])).toEqual([
      ['Applied', idOf(held), false],
      ['Rejected', idOf(early), { type: 'ChainBroken', signer: b.id, seq: 1 }],
    ]);
    expect(await s.store.rejections(10)).toEqual([
      { outerId: idOf(early), reason: 'ChainBroken', detail: '', at: START + 5000, peer: 'local' },
    ]);
  });
});

describe('re-evaluating parked envelopes', () => {
  it('records a refusal found on the retry as local', async () => {
    const { mesh, a, s } = pair('reevaluate', { maxSkewMs: 1000 });
    const early = await brokenLink(mesh, a.signer, { hlc: { ms: START + 5000, counter: 0 } });
    expect(await s.replica.ingest('a', [early])).toMatchObject([{ type: 'Parked', reason: 'ClockSkew' }]);
    s.clock.advance(5000);
    expect(types(await s.replica.reevaluate())).toEqual([['Rejected', idOf(early)]]);
    expect(await s.store.rejections(10)).toEqual([
      { outerId: idOf(early), reason: 'ChainBroken', detail: '', at: START + 5000, peer: 'local' },
    ]);
    expect(await s.store.parkedCount()).toBe(0);
  });

  it.each([
    ['its event', 'event'],
    ['its envelope', 'sealed'],
  ] as const)('throws when %s no longer decodes, leaving it parked', async (_, broken) => {
    const { a, s } = pair(`undecodable-${broken}`);
    await put(a, 'r', 'one');
    await s.replica.ingest('a', [await put(a, 'r', 'two')]);
    const [parked] = await s.store.parked(10);
    const record = { ...parked!, [broken]: garbage(1) };
    await s.store.transact((tx) => tx.park(record));
    await expect(s.replica.reevaluate()).rejects.toThrow(/^replica: a parked envelope no longer decodes$/);
    expect(await s.store.parked(10)).toEqual([record]);
  });
});

describe('a batch and the parking', () => {
  it('makes room in a full parking only for what the batch applied, and retries only after an apply', async () => {
    const { a, s } = pair('room', { maxParked: 1, maxSkewMs: 1000 });
    a.clock.advance(5000);
    const early = await put(a, 'x', 'early');
    await put(a, 'y', 'gap');
    const third = await put(a, 'z', 'third');
    expect(await s.replica.ingest('a', [early])).toMatchObject([{ type: 'Parked', reason: 'ClockSkew' }]);
    // The clock caught up: the parked envelope would apply if retried, but nothing in the batch applies.
    s.clock.advance(5000);
    const outcomes = await s.replica.ingest('a', [garbage(1), third], 9);
    expect(outcomes.map((o) => o.type)).toEqual(['Rejected', 'Deferred']);
    expect(outcomes[1]).toEqual({ type: 'Deferred', outerId: idOf(third), reason: 'ParkingFull' });
    expect((await s.store.parked(10)).map((p) => p.outerId)).toEqual([idOf(early)]);
    expect(await s.store.watermark('a')).toBe(0);
  });

  it('after making room once, makes it again only after another apply', async () => {
    // S holds field_notes local: A's note is withheld, yet moves A's chain on.
    const privacy: PrivacyPolicy = {
      classOf: (_tx, table) => (table === 'field_notes' ? 'local' : 'public'),
      selfTrusted: () => true,
    };
    const { a, s } = pair('room-again', { maxParked: 1, privacy });
    const one = await put(a, 'r', 'one');
    const note = await a.replica.write('field_notes', 'GENERAL:1', { title: 'n', text: '' });
    if (!note.ok) throw new Error('fixture');
    const [noted] = await a.store.entriesByOuterId([note.value.outerId]);
    const three = await put(a, 'r', 'three');
    const four = await put(a, 'r', 'four');
    const five = await put(a, 'r', 'five');
    expect(await s.replica.ingest('a', [three])).toMatchObject([{ type: 'Parked', reason: 'ChainGap' }]);
    const outcomes = await s.replica.ingest('a', [one, four, noted!.sealed, five]);
    expect(types(outcomes)).toEqual([
      ['Applied', idOf(one)],
      ['Deferred', idOf(four)],
      ['Withheld', noted!.outerId],
      ['Deferred', idOf(five)],
      ['Applied', idOf(three)],
    ]);
    expect(await s.store.parkedCount()).toBe(0);
  });
});

describe('a restarted replica', () => {
  it('answers an envelope parked for its clock as a duplicate, parked or applied since', async () => {
    const { mesh, a, s } = pair('restart-skew', { maxSkewMs: 1000 });
    a.clock.advance(5000);
    const early = await put(a, 'x', 'early');
    await s.replica.ingest('a', [early]);
    const parked = await s.store.parked(10);
    s.clock.advance(100);
    const again = restarted(s, 'restart-skew/S', mesh, { maxSkewMs: 1000 });
    expect(await again.replica.ingest('a', [early])).toEqual([{ type: 'Duplicate', outerId: idOf(early) }]);
    expect(await s.store.parked(10)).toEqual(parked);
    s.clock.advance(4900);
    expect(types(await again.replica.reevaluate())).toEqual([['Applied', idOf(early)]]);
    // Far ahead again (the clock was set back), and logged: still a duplicate, nothing parked.
    s.clock.set(START);
    const third = restarted(s, 'restart-skew/S', mesh, { maxSkewMs: 1000 });
    expect(await third.replica.ingest('a', [early])).toEqual([{ type: 'Duplicate', outerId: idOf(early) }]);
    expect(await s.store.parkedCount()).toBe(0);
  });

  it('answers an envelope it holds unread as a duplicate, holding it once', async () => {
    const { mesh, a, s } = pair('restart-opaque', { domains: ['CONTROL'] });
    const unread = await put(a, 'r', 'one');
    expect(types(await s.replica.ingest('a', [unread]))).toEqual([['StoredOpaque', idOf(unread)]]);
    const again = restarted(s, 'restart-opaque/S', mesh, { domains: ['CONTROL'] });
    expect(await again.replica.ingest('a', [unread])).toEqual([{ type: 'Duplicate', outerId: idOf(unread) }]);
    expect(await s.store.lastPos()).toBe(1);
  });

  it('answers an event it withholds, delivered again, as a withheld duplicate', async () => {
    const privacy: PrivacyPolicy = { classOf: () => 'local', selfTrusted: () => true };
    const { a, s } = pair('withheld-again', { privacy });
    const kept = await put(a, 'r', 'one');
    expect(types(await s.replica.ingest('a', [kept]))).toEqual([['Withheld', idOf(kept)]]);
    expect(await s.replica.ingest('a', [kept])).toEqual([{ type: 'Duplicate', outerId: idOf(kept), withheld: true }]);
    expect((await s.store.withheld(10)).map((w) => w.outerId)).toEqual([idOf(kept)]);
  });

  it('answers an envelope parked for a chain gap as a duplicate, parking nothing again', async () => {
    const { mesh, a, s } = pair('restart-gap');
    await put(a, 'r', 'one');
    const second = await put(a, 'r', 'two');
    await s.replica.ingest('a', [second]);
    const parked = await s.store.parked(10);
    s.clock.advance(100);
    const again = restarted(s, 'restart-gap/S', mesh);
    expect(await again.replica.ingest('a', [second])).toEqual([{ type: 'Duplicate', outerId: idOf(second) }]);
    expect(await s.store.parked(10)).toEqual(parked);
  });
});

describe('records of what was not applied', () => {
  it('a parked envelope is kept exactly: no fill outside a held entry', async () => {
    const { a, s } = pair('park-record');
    await put(a, 'r', 'one');
    const second = await put(a, 'r', 'two');
    const sealed = decodeSealed(second);
    const event = sealed.ok ? await a.keyring.envelopes(seededRandom('open')).open(sealed.value) : undefined;
    s.clock.advance(42);
    await s.replica.ingest('a', [second]);
    expect(await s.store.parked(10)).toStrictEqual([
      {
        outerId: idOf(second),
        sealed: second,
        event: event?.ok && event.value,
        reason: 'ChainGap',
        detail: `waiting for seq 1 of ${a.id.slice(0, 8)}`,
        parkedAt: START + 42,
        signer: a.id,
        seq: 2,
      },
    ]);
  });

  it('a rejection keeps the reason of the refusal as its detail', async () => {
    const { s } = pair('reject-detail');
    const [outcome] = await s.replica.ingest('p', [garbage(3)]);
    expect(outcome).toMatchObject({ type: 'Rejected', error: { type: 'MalformedEnvelope' } });
    const reason = outcome?.type === 'Rejected' && 'reason' in outcome.error ? outcome.error.reason : '';
    expect(reason).not.toBe('');
    expect(await s.store.rejections(10)).toEqual([
      { outerId: undecodableId(garbage(3)), reason: 'MalformedEnvelope', detail: reason, at: START, peer: 'p' },
    ]);
  });
});

describe('the order parked envelopes are retried in', () => {
  it('is by signer, then by sequence number, whatever order they arrived in', async () => {
    const mesh = makeMesh('order');
    const a = makeMachine('A', 'order/A', mesh);
    mesh.anchors.push(a.id);
    const [x, y] = [makeMachine('P', 'order/P', mesh), makeMachine('Q', 'order/Q', mesh)].sort((m, n) =>
      m.id < n.id ? -1 : 1,
    ) as [Machine, Machine];
    const s = makeMachine('S', 'order/S', mesh);
    const x1 = await put(x, 'x', '1');
    const x2 = await put(x, 'x', '2');
    const y1 = await put(y, 'y', '1');
    const y2 = await put(y, 'y', '2');
    const parked = await s.replica.ingest('peers', [y2, x2, y1, x1]);
    expect(parked.map((o) => o.type === 'Parked' && o.reason)).toEqual([
      'UnknownSigner',
      'UnknownSigner',
      'UnknownSigner',
      'UnknownSigner',
    ]);
    for (const m of [x, y]) expect((await a.replica.write('keyring', m.id, { name: m.name })).ok).toBe(true);
    const keyring = (await a.store.entriesAfter(0, 10)).map((e) => e.sealed);
    expect(types(await s.replica.ingest('a', keyring))).toEqual(
      [...keyring, x1, x2, y1, y2].map((e) => ['Applied', idOf(e)]),
    );
  });

  it('takes a chain that arrived shuffled in one pass', async () => {
    const store = new ObservedStore();
    const { a, s } = pair('shuffled', { wrapStore: () => store });
    const log: Uint8Array[] = [];
    for (let i = 1; i <= 6; i++) log.push(await put(a, `r${i}`, `${i}`));
    await s.replica.ingest(
      'a',
      [3, 5, 2, 6, 4].map((seq) => log[seq - 1]!),
    );
    expect(await s.store.parkedCount()).toBe(5);
    store.passes = 0;
    expect((await s.replica.ingest('a', [log[0]!])).map((o) => o.outerId)).toEqual(log.map(idOf));
    expect(store.passes).toBe(2);
  });
  it.each([
    ['A', 'B'],
    ['B', 'A'],
  ] as const)('puts a record that names no signer first (parked in the order %s, %s)', async (...order) => {
    const mesh = makeMesh('legacy-3');
    const a = makeMachine('A', 'legacy-3/A', mesh);
    const b = makeMachine('B', 'legacy-3/B', mesh);
    mesh.anchors.push(a.id, b.id);
    // A's id sorts after the empty string and before any letter.
    expect(a.id).toMatch(/^[0-9]/);
    const s = makeMachine('S', 'legacy-3/S', mesh, { maxSkewMs: 1000 });
    for (const m of [a, b]) m.clock.advance(5000);
    const early = { A: await put(a, 'a', 'early'), B: await put(b, 'b', 'early') };
    for (const name of order) await s.replica.ingest(name, [early[name]]);
    // B's record without its signer and seq (both optional in a parked record).
    const parked = (await s.store.parked(10)).find((p) => p.outerId === idOf(early.B))!;
    const { outerId, sealed, event, reason, detail, parkedAt } = parked;
    await s.store.transact((tx) => tx.park({ outerId, sealed, event, reason, detail, parkedAt }));
    s.clock.advance(5000);
    expect(types(await s.replica.reevaluate())).toEqual([
      ['Applied', idOf(early.B)],
      ['Applied', idOf(early.A)],
    ]);
  });
});

describe('what a batch asks the store to prefetch', () => {
  it('names every envelope of the batch in order, and the rows of those it can read', async () => {
    const store = new ObservedStore();
    const { a, s } = pair('prefetch', { maxSkewMs: 1000, wrapStore: () => store });
    const known = await put(a, 'k', 'known');
    await s.replica.ingest('a', [known]);
    const event = await put(a, 'r', 'readable');
    a.clock.advance(5000);
    const early = await put(a, 'e', 'early');
    // Sealed in a domain S holds no key for: kept opaque.
    const opaque = encodeSealed(sealEvent(garbage(4), 'RESTRICTED', 1, new Uint8Array(32), seededRandom('opaque')));
    store.lookups.length = 0;
    const outcomes = await s.replica.ingest('a', [event, early, opaque, garbage(5), known]);
    expect(outcomes.map((o) => o.type)).toEqual(['Applied', 'Parked', 'StoredOpaque', 'Rejected', 'Duplicate']);
    expect(store.lookups).toEqual([
      {
        outerIds: [idOf(event), idOf(early), idOf(opaque), undecodableId(garbage(5)), idOf(known)],
        rows: [
          ['device_profiles', 'r'],
          ['device_profiles', 'e'],
        ],
      },
    ]);
  });
});

describe('asking for withheld envelopes again', () => {
  it('judges one refused unopened by its lane alone, never by a table class', async () => {
    // A machine that holds no table's rows: every class it is asked for is local.
    const privacy: PrivacyPolicy = { classOf: () => 'local', selfTrusted: () => true };
    const { s } = pair('wanted-unopened', { privacy });
    const record = { eventId: '', chain: '', seq: 0, reason: 'NotEligible', at: START } as const;
    await s.store.transact(async (tx) => {
      await tx.withhold({ ...record, outerId: 'unopened', table: '', lane: 'trusted' });
      await tx.withhold({ ...record, outerId: 'row', table: 'device_profiles', lane: 'trusted' });
    });
    expect(await s.replica.wanted(10)).toEqual(['unopened']);
  });
});

describe('what a replica remembers it holds', () => {
  /** S counts the envelopes it decrypts. */
  function counting(seed: string) {
    const opens = { n: 0 };
    const wrapEnvelopes = (port: EnvelopeCrypto): EnvelopeCrypto => ({
      ...port,
      open: (sealed) => (opens.n++, port.open(sealed)),
    });
    return { ...pair(seed, { wrapEnvelopes }), opens };
  }

  it('answers an envelope refused several batches ago without decrypting it again', async () => {
    const { s, opens } = counting('remember');
    const wrongKey = encodeSealed(
      sealEvent(garbage(6), 'GENERAL', 1, seededRandom('wrong key').bytes(32), seededRandom('wrong')),
    );
    expect(await s.replica.ingest('p', [wrongKey])).toMatchObject([
      { type: 'Rejected', error: { type: 'DecryptFailed' } },
    ]);
    for (let i = 0; i < 3; i++) await s.replica.ingest('p', [garbage(10 + i)]);
    expect(opens.n).toBe(1);
    expect(await s.replica.ingest('p', [wrongKey])).toEqual([{ type: 'Duplicate', outerId: idOf(wrongKey) }]);
    expect(opens.n).toBe(1);
  });

  it('forgets after 50,000 others: a refusal whose record is gone too is checked and refused again', async () => {
    const { s, opens } = counting('forget');
    const wrongKey = encodeSealed(
      sealEvent(garbage(7), 'GENERAL', 1, seededRandom('wrong key').bytes(32), seededRandom('wrong')),
    );
    const flood = (from: number, n: number) => Array.from({ length: n }, (_, i) => garbage(from + i));
    // Held ids are remembered in two generations of 25,000; a store keeps the newest 10,000 rejections.
    await s.replica.ingest('p', [wrongKey]);
    await s.replica.ingest('p', flood(100, 24_999));
    await s.replica.ingest('p', flood(200_000, 25_000));
    expect(opens.n).toBe(1);
    expect(await s.replica.ingest('p', [wrongKey])).toMatchObject([
      { type: 'Rejected', outerId: idOf(wrongKey), error: { type: 'DecryptFailed' } },
    ]);
    expect(opens.n).toBe(2);
  });
});
