import { describe, expect, it } from 'vitest';
import { fromHex, toHex } from '../../src/core/bytes.js';
import { decodeCbor, encodeCbor } from '../../src/core/cbor.js';
import { decodeEvent, signEvent, signingPayload, ZERO_HASH, type EventBody } from '../../src/core/event.js';
import { rowValues, type RowState } from '../../src/core/merge.js';
import type { Signer } from '../../src/core/ports.js';
import type { IngestOutcome } from '../../src/core/replica.js';
import type { ColumnValue, DomainName } from '../../src/core/schema.js';
import { decodeSealed, encodeSealed, sealEvent } from '../../src/core/seal.js';
import {
  makeMachine,
  makeMesh,
  seededRandom,
  snapshot,
  TestNetwork,
  unsafeTestingSigner,
  type Machine,
  type Mesh,
  type NetworkFaults,
} from '../helpers/deterministic.js';

const rowsOf = async (m: Machine, table = 'device_profiles'): Promise<Record<string, Record<string, ColumnValue>>> =>
  Object.fromEntries((await m.store.rows(table)).map((r) => [r.row, rowValues(r)]));

/** Full state with stamps, in a stable order, for equality across machines. */
const stateOf = async (m: Machine): Promise<unknown> => {
  const show = (rows: RowState[]) =>
    rows
      .map((r) => ({
        ...r,
        cells: Object.fromEntries(
          Object.entries(r.cells).map(([c, v]) => [c, { ...v, stamp: { ...v.stamp, node: toHex(v.stamp.node) } }]),
        ),
      }))
      .sort((a, b) => a.row.localeCompare(b.row));
  return { keyring: show(await m.store.rows('keyring')), device_profiles: show(await m.store.rows('device_profiles')) };
};

const applied = (outcome: IngestOutcome | undefined) => expect(outcome?.type).toBe('Applied');

async function mustWrite(m: Machine, table: string, row: string, cols: Record<string, ColumnValue>): Promise<void> {
  const result = await m.replica.write(table, row, cols);
  expect(result).toMatchObject({ ok: true, value: { type: 'Applied' } });
}

/** A mesh whose first machine is the admin anchor and has put the others in the keyring. */
async function meshWith(names: string[], seed: string): Promise<{ mesh: Mesh; machines: Machine[] }> {
  const mesh = makeMesh(seed);
  const machines = names.map((name) => makeMachine(name, `${seed}/${name}`, mesh));
  const admin = machines[0]!;
  mesh.anchors.push(admin.id);
  for (const m of machines.slice(1))
    await mustWrite(admin, 'keyring', m.id, { name: m.name, role: 'member', endpoint: m.id });
  return { mesh, machines };
}

/** All sealed envelopes in a machine's log, in order. */
const logOf = async (m: Machine): Promise<Uint8Array[]> => (await m.store.entriesAfter(0, 10_000)).map((e) => e.sealed);

describe('replicas converge over a lossy network', () => {
  it('after a partition, concurrent edits of different columns both survive everywhere', async () => {
    const { machines } = await meshWith(['A', 'W', 'C'], 'partition');
    const [a, w, c] = machines as [Machine, Machine, Machine];
    const net = new TestNetwork('partition');
    for (const m of machines) net.join(m);
    await net.connectAll();
    await net.settle();
    await mustWrite(a, 'device_profiles', 'pump-7', { name: 'Pump 7', location: 'shed', schedule: 'daily' });
    await net.settle();
    expect(await rowsOf(c)).toEqual({ 'pump-7': { name: 'Pump 7', location: 'shed', schedule: 'daily' } });

    net.faults.partitions = [
      [a.id, w.id],
      [a.id, c.id],
      [w.id, c.id],
    ];
    w.clock.advance(1000);
    c.clock.advance(2000);
    await mustWrite(w, 'device_profiles', 'pump-7', { location: 'north field' });
    await mustWrite(c, 'device_profiles', 'pump-7', { schedule: 'hourly' });
    await mustWrite(w, 'device_profiles', 'pump-7', { notes: 'both edit name', name: 'W name' });
    await mustWrite(c, 'device_profiles', 'pump-7', { name: 'C name' });
    await net.offerAll();
    await net.flush();
    expect((await rowsOf(w))['pump-7']?.['schedule']).toBe('daily');

    net.faults.partitions = [];
    await net.settle();
    const expected = {
      'pump-7': { name: 'C name', location: 'north field', schedule: 'hourly', notes: 'both edit name' },
    };
    for (const m of machines) expect(await rowsOf(m)).toEqual(expected);
    expect(await stateOf(w)).toEqual(await stateOf(a));
    expect(await stateOf(c)).toEqual(await stateOf(a));
  });

  it('routes around a cut link through the third machine', async () => {
    const { machines } = await meshWith(['A', 'B', 'C'], 'bridge');
    const [a, b, c] = machines as [Machine, Machine, Machine];
    const net = new TestNetwork('bridge');
    for (const m of machines) net.join(m);
    net.faults.partitions = [[a.id, b.id]];
    await net.connectAll();
    await net.settle();
    await mustWrite(a, 'device_profiles', 'r1', { name: 'from A' });
    await mustWrite(b, 'device_profiles', 'r2', { name: 'from B' });
    await net.settle();
    expect(await rowsOf(a)).toEqual({ r1: { name: 'from A' }, r2: { name: 'from B' } });
    expect(await stateOf(b)).toEqual(await stateOf(a));
    expect(await stateOf(c)).toEqual(await stateOf(a));
  });

  it.each<[string, NetworkFaults]>([
    ['dropped frames', { loss: 0.4 }],
    ['duplicated frames', { duplicate: 0.5 }],
    ['reordered frames', { reorder: true }],
    ['all of them', { loss: 0.3, duplicate: 0.3, reorder: true }],
  ])('at-least-once: %s are healed by resend()', async (_, faults) => {
    const { machines } = await meshWith(['A', 'B', 'C'], 'lossy');
    const net = new TestNetwork(`lossy/${_}`);
    for (const m of machines) net.join(m);
    await net.connectAll();
    await net.settle();
    // Edits made while the batch cycle is not running, then delivered over a bad network.
    for (let i = 0; i < 12; i++) {
      const m = machines[i % 3]!;
      m.clock.advance(10);
      await mustWrite(m, 'device_profiles', `row-${i % 4}`, { notes: `${m.name}-${i}`, active: i % 2 === 0 });
    }
    net.faults = faults;
    const rounds = await net.settle(200);
    expect(rounds).toBeGreaterThan(0);
    const expected = await stateOf(machines[0]!);
    for (const m of machines) expect(await stateOf(m)).toEqual(expected);
    expect(Object.keys(await rowsOf(machines[1]!))).toHaveLength(4);
    for (const m of machines) expect(await m.store.lastPos()).toBe(2 + 12);
    for (const engine of net.engines.values()) expect([...engine.rejections.keys()]).toEqual([]);
    if (faults.loss) expect(net.dropped).toBeGreaterThan(0);
  });

  it('ingesting the same envelopes again is idempotent', async () => {
    const { machines } = await meshWith(['A', 'B'], 'dup');
    const [a, b] = machines as [Machine, Machine];
    await mustWrite(a, 'device_profiles', 'x', { name: 'one' });
    const log = await logOf(a);
    expect((await b.replica.ingest(log)).map((o) => o.type)).toEqual(['Applied', 'Applied']);
    const before = await snapshot(b, [a.id]);
    expect((await b.replica.ingest(log)).map((o) => o.type)).toEqual(['Duplicate', 'Duplicate']);
    expect((await b.replica.ingest([log[1]!, log[1]!])).map((o) => o.type)).toEqual(['Duplicate', 'Duplicate']);
    expect(await snapshot(b, [a.id])).toEqual(before);
  });

  it('the same event re-sealed (new outer id) is still a duplicate', async () => {
    const { mesh, machines } = await meshWith(['A', 'B'], 'reseal');
    const [a, b] = machines as [Machine, Machine];
    await mustWrite(a, 'device_profiles', 'x', { name: 'one' });
    await b.replica.ingest(await logOf(a));
    const entry = (await a.store.entriesAfter(1, 1))[0]!;
    const sealed = decodeSealed(entry.sealed);
    if (!sealed.ok) throw new Error('fixture');
    const plain = await a.keyring.envelopes(seededRandom('x')).open(sealed.value);
    if (!plain.ok) throw new Error('fixture');
    const resealed = encodeSealed(sealEvent(plain.value, 'GENERAL', 1, mesh.keys.GENERAL, seededRandom('reseal')));
    const before = await snapshot(b, [a.id]);
    expect(await b.replica.ingest([resealed])).toMatchObject([{ type: 'Duplicate' }]);
    expect(await snapshot(b, [a.id])).toEqual(before);
  });
});

describe('known delivery gap', () => {
  // BUG (src/core/sync.ts, SyncEngine.receive): the receiver acknowledges `upto`
  // even when envelopes in the batch were refused for a reason that can heal
  // (ChainGap here; also UnknownSigner before the keyring row arrives, ClockSkew).
  // A realtime push made while an earlier frame to the same peer is lost or still
  // in flight offers only the newer entries; the receiver refuses them as a gap,
  // acks past them, the sender's durable cursor moves over the lost entries, and
  // no resend ever offers them again. Flip to `it` once fixed.
  it('a frame lost before a later push is healed by resend()', async () => {
    const { machines } = await meshWith(['A', 'B'], 'gap');
    const [a, b] = machines as [Machine, Machine];
    const net = new TestNetwork('gap');
    for (const m of machines) net.join(m);
    await net.connectAll();
    await net.settle();
    let dropped = false;
    net.faults.drop = (f) => f.message.t === 'events' && !dropped && (dropped = true);
    await mustWrite(a, 'device_profiles', 'x', { name: 'first' });
    await net.offerAll(); // lost
    await mustWrite(a, 'device_profiles', 'x', { notes: 'second' });
    await net.offerAll(); // offers only the second write: B refuses a gap but acks it
    await net.flush();
    await net.settle();
    expect(await rowsOf(b)).toEqual(await rowsOf(a));
  });

  it('frames of two pushes delivered in reverse order converge', async () => {
    const { machines } = await meshWith(['A', 'B'], 'reverse');
    const [a, b] = machines as [Machine, Machine];
    const net = new TestNetwork('reverse');
    for (const m of machines) net.join(m);
    await net.connectAll();
    await net.settle();
    let held: (() => Promise<void>) | undefined;
    const engineB = net.engines.get(b.id)!;
    net.faults.drop = (f) => {
      if (f.message.t !== 'events' || held) return false;
      const message = f.message;
      held = () => engineB.receive(f.from, message);
      return true;
    };
    await mustWrite(a, 'device_profiles', 'x', { name: 'first' });
    await net.offerAll();
    await mustWrite(a, 'device_profiles', 'x', { notes: 'second' });
    await net.offerAll();
    await net.flush(); // the second frame arrives first
    await held!(); // then the first
    await net.settle();
    expect(await rowsOf(b)).toEqual(await rowsOf(a));
  });
});

// ---- rejection paths ----------------------------------------------------------------

type Fixture = { mesh: Mesh; a: Machine; b: Machine; c: Machine; next: EventBody };

/** A is the admin anchor; B and C are members; C has ingested A's log (keyring rows and one device row). */
async function fixture(): Promise<Fixture> {
  const { mesh, machines } = await meshWith(['A', 'B', 'C'], 'reject');
  const [a, b, c] = machines as [Machine, Machine, Machine];
  await mustWrite(a, 'device_profiles', 'pump-7', { name: 'Pump 7' });
  const outcomes = await c.replica.ingest(await logOf(a));
  outcomes.forEach(applied);
  const head = await a.store.transact((tx) => tx.head(a.id));
  const next: EventBody = {
    v: 1,
    domain: 'GENERAL',
    signer: a.signer.publicKey,
    seq: head!.seq + 1,
    prev: fromHex(head!.eventId)!,
    table: 'device_profiles',
    row: 'pump-7',
    op: 'put',
    cols: { name: 'Pump 7b' },
    hlc: { ms: a.clock.now(), counter: 9 },
  };
  return { mesh, a, b, c, next };
}

/** Signs any body value with `signer`, bypassing `signEvent`'s own checks. */
async function signRaw(bodyValue: unknown, signer: Signer): Promise<Uint8Array> {
  const bodyBytes = encodeCbor(bodyValue);
  return encodeCbor([bodyBytes, await signer.sign(signingPayload(bodyBytes))]);
}

const seal = (signed: Uint8Array, domain: DomainName, key: Uint8Array, gen = 1): Uint8Array =>
  encodeSealed(sealEvent(signed, domain, gen, key, seededRandom(`seal/${toHex(signed).slice(0, 16)}/${domain}`)));

type RejectCase = {
  readonly name: string;
  readonly envelope: (f: Fixture) => Promise<Uint8Array>;
  readonly error: string;
  readonly opaqueId?: false;
};

const REJECTIONS: readonly RejectCase[] = [
  {
    name: 'forged signature (body names A, signed by Mallory)',
    envelope: async (f) => seal(await signRaw(f.next, unsafeTestingSigner('mallory')), 'GENERAL', f.mesh.keys.GENERAL),
    error: 'SignatureInvalid',
  },
  {
    name: 'tampered field (column changed, old signature kept)',
    envelope: async (f) => {
      const event = await signEvent(f.next, f.a.signer);
      const tampered = encodeCbor([encodeCbor({ ...f.next, cols: { name: 'Evil' } }), event.sig]);
      return seal(tampered, 'GENERAL', f.mesh.keys.GENERAL);
    },
    error: 'SignatureInvalid',
  },
  {
    name: 'broken hash chain (prev is not the head)',
    envelope: async (f) =>
      seal(
        (await signEvent({ ...f.next, prev: new Uint8Array(32).fill(7) }, f.a.signer)).bytes,
        'GENERAL',
        f.mesh.keys.GENERAL,
      ),
    error: 'ChainBroken',
  },
  {
    name: 'gap in the chain (seq skips one)',
    envelope: async (f) =>
      seal((await signEvent({ ...f.next, seq: f.next.seq + 1 }, f.a.signer)).bytes, 'GENERAL', f.mesh.keys.GENERAL),
    error: 'ChainGap',
  },
  {
    name: 'fork (another event at an already used seq)',
    envelope: async (f) => {
      const first = (await f.a.store.entriesAfter(0, 1))[0]!;
      const body = { ...f.next, seq: f.next.seq - 1, prev: fromHex(first.eventId!)!, cols: { name: 'rewritten' } };
      return seal((await signEvent(body, f.a.signer)).bytes, 'GENERAL', f.mesh.keys.GENERAL);
    },
    error: 'ChainFork',
  },
  {
    name: 'unknown signer (not an anchor, not in the keyring)',
    envelope: async (f) => {
      const stranger = unsafeTestingSigner('stranger');
      const body = { ...f.next, signer: stranger.publicKey, seq: 1, prev: ZERO_HASH };
      return seal((await signEvent(body, stranger)).bytes, 'GENERAL', f.mesh.keys.GENERAL);
    },
    error: 'UnknownSigner',
  },
  {
    name: 'sealed under the wrong domain key',
    envelope: async (f) =>
      seal((await signEvent(f.next, f.a.signer)).bytes, 'GENERAL', seededRandom('wrong').bytes(32)),
    error: 'DecryptFailed',
  },
  {
    name: 'a GENERAL event inside a CONTROL envelope',
    envelope: async (f) => seal((await signEvent(f.next, f.a.signer)).bytes, 'CONTROL', f.mesh.keys.CONTROL),
    error: 'DomainMismatch',
  },
  {
    name: 'a member writing the keyring',
    envelope: async (f) => {
      const body: EventBody = {
        ...f.next,
        domain: 'CONTROL',
        signer: f.b.signer.publicKey,
        seq: 1,
        prev: ZERO_HASH,
        table: 'keyring',
        row: f.b.id,
        cols: { role: 'admin' },
      };
      return seal((await signEvent(body, f.b.signer)).bytes, 'CONTROL', f.mesh.keys.CONTROL);
    },
    error: 'NotAuthorized',
  },
  {
    name: 'an event from the far future (6 minutes ahead)',
    envelope: async (f) =>
      seal(
        (await signEvent({ ...f.next, hlc: { ms: f.c.clock.now() + 6 * 60_000, counter: 0 } }, f.a.signer)).bytes,
        'GENERAL',
        f.mesh.keys.GENERAL,
      ),
    error: 'ClockSkew',
  },
  {
    name: 'a malformed event inside a good envelope',
    envelope: (f) => Promise.resolve(seal(seededRandom('junk').bytes(120), 'GENERAL', f.mesh.keys.GENERAL)),
    error: 'MalformedEvent',
  },
  {
    name: 'malformed envelope bytes',
    envelope: () => Promise.resolve(seededRandom('garbage').bytes(200)),
    error: 'MalformedEnvelope',
    opaqueId: false,
  },
  {
    name: 'an envelope whose ciphertext does not match its id',
    envelope: async (f) => {
      const bytes = seal((await signEvent(f.next, f.a.signer)).bytes, 'GENERAL', f.mesh.keys.GENERAL);
      const decoded = decodeCbor(bytes, 1 << 20);
      const m = decoded.ok ? (decoded.value as { ct: Uint8Array }) : undefined;
      m!.ct[40]! ^= 1;
      return encodeCbor(m);
    },
    error: 'OuterIdMismatch',
    opaqueId: false,
  },
];

describe('replica rejections leave the store untouched', () => {
  it.each(REJECTIONS)('$name → Rejected $error', async (vector) => {
    const f = await fixture();
    const envelope = await vector.envelope(f);
    const watched = [f.a.id, f.b.id];
    const before = await snapshot(f.c, watched);
    const outcomes = await f.c.replica.ingest([envelope]);
    expect(outcomes).toHaveLength(1);
    expect(outcomes[0]).toMatchObject({ type: 'Rejected', error: { type: vector.error } });
    const outerId = outcomes[0]!.outerId;
    if (vector.opaqueId === false) expect(outerId).toBeUndefined();
    else expect(outerId).toMatch(/^[0-9a-f]{64}$/);
    expect(await snapshot(f.c, watched)).toEqual(before);
    // The honest next event is still accepted afterwards.
    const honest = seal((await signEvent(f.next, f.a.signer)).bytes, 'GENERAL', f.mesh.keys.GENERAL);
    applied((await f.c.replica.ingest([honest]))[0]);
  });

  it('a batch applies what is good and refuses the rest, in order', async () => {
    const f = await fixture();
    const good = seal((await signEvent(f.next, f.a.signer)).bytes, 'GENERAL', f.mesh.keys.GENERAL);
    const forged = await REJECTIONS[0]!.envelope(f);
    const outcomes = await f.c.replica.ingest([forged, good, good]);
    expect(outcomes.map((o) => o.type)).toEqual(['Rejected', 'Applied', 'Duplicate']);
    expect(await rowsOf(f.c)).toEqual({ 'pump-7': { name: 'Pump 7b' } });
  });

  it('the configured skew bound is honoured', async () => {
    const mesh = makeMesh('skew');
    const a = makeMachine('A', 'skew/A', mesh);
    const strict = makeMachine('S', 'skew/S', mesh, { maxSkewMs: 1000 });
    mesh.anchors.push(a.id);
    a.clock.advance(1500);
    await mustWrite(a, 'device_profiles', 'x', { name: 'early' });
    expect(await strict.replica.ingest(await logOf(a))).toMatchObject([
      { type: 'Rejected', error: { type: 'ClockSkew', maxSkewMs: 1000 } },
    ]);
    strict.clock.advance(600);
    applied((await strict.replica.ingest(await logOf(a)))[0]);
  });

  it('a local keyring write by a non-admin is NotAuthorized and writes nothing', async () => {
    const f = await fixture();
    const before = await snapshot(f.b, [f.b.id]);
    expect(await f.b.replica.write('keyring', f.b.id, { role: 'admin' })).toEqual({
      ok: false,
      error: { type: 'NotAuthorized', signer: f.b.id, table: 'keyring' },
    });
    expect(await snapshot(f.b, [f.b.id])).toEqual(before);
    expect(await f.b.store.lastPos()).toBe(0);
  });

  it('local writes to unknown tables or with bad columns are typed errors', async () => {
    const f = await fixture();
    expect(await f.b.replica.write('secrets', 'x', { a: 1 })).toEqual({
      ok: false,
      error: { type: 'UnknownTable', table: 'secrets' },
    });
    const invalid = await f.b.replica.write('device_profiles', 'x', { owner: 'eve' });
    expect(invalid).toMatchObject({ ok: false, error: { type: 'InvalidEdit' } });
    expect(!invalid.ok && invalid.error.type === 'InvalidEdit' && invalid.error.reason).toMatch(/unknown column/);
    expect(await f.b.store.lastPos()).toBe(0);
  });
});

describe('storage is not reading', () => {
  it('an envelope of a domain without a key is stored opaque and forwarded to a machine that can read it', async () => {
    const mesh = makeMesh('opaque');
    const a = makeMachine('A', 'opaque/A', mesh);
    const keeper = makeMachine('K', 'opaque/K', mesh, { domains: ['CONTROL'] });
    const c = makeMachine('C', 'opaque/C', mesh);
    mesh.anchors.push(a.id);
    await mustWrite(a, 'keyring', keeper.id, { name: 'K', role: 'member', endpoint: keeper.id });
    await mustWrite(a, 'device_profiles', 'pump-7', { name: 'Pump 7', location: 'shed' });

    const net = new TestNetwork('opaque');
    for (const m of [a, keeper, c]) net.join(m);
    net.faults.partitions = [[a.id, c.id]];
    await net.connectAll();
    await net.settle();

    const kept = await keeper.store.entriesAfter(0, 10);
    expect(kept.map((e) => [e.domain, e.eventId === undefined])).toEqual([
      ['CONTROL', false],
      ['GENERAL', true],
    ]);
    expect(await rowsOf(keeper)).toEqual({});
    expect(await rowsOf(keeper, 'keyring')).toEqual({
      [keeper.id]: { name: 'K', role: 'member', endpoint: keeper.id },
    });
    expect(await rowsOf(c)).toEqual({ 'pump-7': { name: 'Pump 7', location: 'shed' } });
    expect(await stateOf(c)).toEqual(await stateOf(a));
    // The opaque copy has the same outer id as the original.
    expect(kept[1]!.outerId).toBe((await a.store.entriesAfter(1, 1))[0]!.outerId);
  });

  it('ingest reports StoredOpaque, then Duplicate', async () => {
    const mesh = makeMesh('opaque2');
    const a = makeMachine('A', 'opaque2/A', mesh);
    const keeper = makeMachine('K', 'opaque2/K', mesh, { domains: [] });
    mesh.anchors.push(a.id);
    await mustWrite(a, 'device_profiles', 'r', { name: 'x' });
    const log = await logOf(a);
    expect(await keeper.replica.ingest(log)).toMatchObject([{ type: 'StoredOpaque' }]);
    expect(await keeper.replica.ingest(log)).toMatchObject([{ type: 'Duplicate' }]);
    expect(await keeper.store.lastPos()).toBe(1);
  });
});

describe('event decoding sanity for the fixture', () => {
  it('fixture events decode', async () => {
    const f = await fixture();
    expect(decodeEvent((await signEvent(f.next, f.a.signer)).bytes).ok).toBe(true);
  });
});
