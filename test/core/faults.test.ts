/**
 * Fault tests at the replica level (issue 3, "What must be shown"): the same
 * batch delivered three times, a transaction that dies half way through, and
 * random crashes during delivery. No event is lost, none is applied twice, and
 * the inbound watermark never passes an envelope that is neither applied,
 * stored, parked nor recorded as rejected. (Killing the relay process and
 * closing a browser tab mid-apply are the e2e suite's part.)
 */
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { decodeCbor, encodeCbor } from '../../src/core/cbor.js';
import { decodeSealed, encodeSealed, envelopeId, sealEvent, undecodableId } from '../../src/core/seal.js';
import type { ReplicaStore } from '../../src/core/store.js';
import type { DeliveryMessage, PeerChannel } from '../../src/core/sync.js';
import { SyncEngine } from '../../src/core/sync.js';
import {
  CrashingStore,
  durableState,
  InjectedFault,
  makeMachine,
  makeMesh,
  seededRandom,
  TestNetwork,
  type Machine,
  type Mesh,
} from '../helpers/deterministic.js';
import { runs } from '../helpers/runs.js';

const SENDER = 'sender';

/** The name a replica gives an envelope: outer id plus header, or a hash of bytes that do not decode. */
const outerIdOf = (bytes: Uint8Array): string => {
  const sealed = decodeSealed(bytes);
  return sealed.ok ? envelopeId(sealed.value) : undecodableId(bytes);
};

async function ok(result: Promise<{ ok: boolean }>): Promise<void> {
  expect((await result).ok).toBe(true);
}

const own = async (m: Machine): Promise<Uint8Array[]> =>
  (await m.store.entriesAfter(0, 1000)).filter((e) => e.signer === m.id).map((e) => e.sealed);

type Story = { readonly mesh: Mesh; readonly ids: readonly string[]; readonly envelopes: readonly Uint8Array[] };

/**
 * A sender's log with a bit of everything, in an order that makes the receiver
 * park and retry: B's first event before B's keyring row (UnknownSigner), B's
 * third before its second (ChainGap), a forged signature and a malformed envelope
 * (Rejected), a stranger nobody admits (parked for good), a delete overtaken by a
 * later edit (a resurrection), and A removing B with mark 2 after B wrote a
 * third event (revoked). Fast signatures: 200 fast-check runs open these often.
 */
async function story(seed: string): Promise<Story> {
  const mesh = makeMesh(seed);
  const [a, b, s] = ['A', 'B', 'S'].map((n) => makeMachine(n, `${seed}/${n}`, mesh, { fastSignatures: true })) as [
    Machine,
    Machine,
    Machine,
  ];
  mesh.anchors.push(a.id);
  await ok(a.replica.write('keyring', b.id, { name: 'B', endpoint: b.id }));
  await ok(a.replica.write('device_profiles', 'pump', { name: 'Pump', location: 'shed' }));
  b.clock.advance(5);
  await ok(b.replica.write('device_profiles', 'pump', { schedule: 'daily' })); // B seq 1
  a.clock.advance(10);
  await ok(a.replica.delete('device_profiles', 'pump'));
  b.clock.advance(20);
  await ok(b.replica.write('device_profiles', 'pump', { notes: 'back again' })); // B seq 2, resurrects
  await a.replica.ingest(b.id, await own(b), 2);
  a.clock.advance(30);
  await ok(a.replica.remove(b.id)); // hwm 2
  b.clock.advance(40);
  await ok(b.replica.write('device_profiles', 'valve', { name: 'too late' })); // B seq 3, revoked
  await ok(s.replica.write('device_profiles', 'valve', { name: 'stranger' }));
  const [aKeyring, aPut, aDel, aRemove] = await own(a);
  const [b1, b2, b3] = await own(b);
  const [s1] = await own(s);
  const forged = await forge(b, b1!, mesh);
  const malformed = new Uint8Array([0xa1, 0x61, 0x78, 0x01]); // {"x": 1}: CBOR, but no envelope
  return {
    mesh,
    ids: [a.id, b.id, s.id],
    envelopes: [b1!, aKeyring!, forged, b3!, aPut!, b2!, s1!, malformed, aDel!, aRemove!],
  };
}

/** B's envelope re-sealed with one bit of its signature flipped. */
async function forge(b: Machine, envelope: Uint8Array, mesh: Mesh): Promise<Uint8Array> {
  const sealed = decodeSealed(envelope);
  if (!sealed.ok) throw new Error('fixture');
  const plain = await b.keyring.envelopes(seededRandom('forge')).open(sealed.value);
  if (!plain.ok) throw new Error('fixture');
  const pair = decodeCbor(plain.value, 1 << 20);
  if (!pair.ok) throw new Error('fixture');
  const [body, sig] = pair.value as [Uint8Array, Uint8Array];
  const bad = sig.slice();
  bad[0]! ^= 1;
  return encodeSealed(sealEvent(encodeCbor([body, bad]), 'GENERAL', 1, mesh.keys.GENERAL, seededRandom('forge')));
}

/** A receiver whose store can be crashed at a chosen write, and a channel that records its acks. */
function receiver(s: Story, name: string): { m: Machine; store: CrashingStore; engine: SyncEngine; acks: number[] } {
  let store: CrashingStore | undefined;
  const m = makeMachine(name, `${name}/receiver`, s.mesh, {
    fastSignatures: true,
    wrapStore: (inner) => (store = new CrashingStore(inner)),
  });
  const acks: number[] = [];
  const channel: PeerChannel = {
    send: (_peer, message: DeliveryMessage) => {
      if (message.t === 'ack') acks.push(message.upto);
      return Promise.resolve();
    },
  };
  return { m, store: store!, engine: new SyncEngine(m.replica, m.store, channel), acks };
}

const batch = (s: Story, from: number, to: number): DeliveryMessage => ({
  t: 'events',
  after: from - 1,
  upto: to,
  events: s.envelopes.slice(from - 1, to),
});

const stateOf = (store: ReplicaStore, s: Story) => durableState(store, { signers: s.ids, peers: [SENDER] });

/** The same state without log positions: two replicas may hold one set of events in different orders. */
const contentOf = async (store: ReplicaStore, s: Story) => {
  const state = await stateOf(store, s);
  return { ...state, log: state.log.map((line) => line.split(' ').slice(1).join(' ')).sort() };
};

/** Envelopes at positions ≤ the watermark that the store neither holds, parks nor has recorded as rejected. */
async function unaccounted(store: ReplicaStore, s: Story): Promise<number[]> {
  const upto = await store.watermark(SENDER);
  const ids = s.envelopes.slice(0, upto).map(outerIdOf);
  const held = await store.transact((tx) =>
    Promise.all(
      ids.map(async (id) => (await tx.hasOuterId(id)) || (await tx.isParked(id)) || (await tx.isRejected(id))),
    ),
  );
  return held.flatMap((ok, i) => (ok ? [] : [i + 1]));
}

let s: Story;
let reference: Awaited<ReturnType<typeof contentOf>>;

beforeAll(async () => {
  s = await story('faults');
  const clean = receiver(s, 'reference');
  await clean.engine.receive(SENDER, batch(s, 1, s.envelopes.length));
  reference = await contentOf(clean.store, s);
  // The story reaches what it is meant to.
  expect(reference.parked).toHaveLength(1);
  expect(reference.rejections.map((r) => r.split(' ')[1]).sort()).toEqual(['MalformedEnvelope', 'SignatureInvalid']);
  expect(reference.resurrections).toHaveLength(1);
  expect(reference.log.filter((l) => l.endsWith('revoked'))).toHaveLength(1);
});

describe('the same batch delivered three times', () => {
  it('through the sync engine: applied once, acknowledged each time, the watermark at upto', async () => {
    const r = receiver(s, 'thrice');
    const message = batch(s, 1, s.envelopes.length);
    await r.engine.receive(SENDER, message);
    const once = await stateOf(r.store, s);
    await r.engine.receive(SENDER, message);
    await r.engine.receive(SENDER, message);
    expect(await stateOf(r.store, s)).toEqual(once);
    expect(r.acks).toEqual([10, 10, 10]);
    expect(await r.store.watermark(SENDER)).toBe(10);
    expect({ ...once, log: once.log.map((l) => l.split(' ').slice(1).join(' ')).sort() }).toEqual(reference);
  });

  it('straight into the replica (no watermark shortcut): every envelope is a duplicate the second and third time', async () => {
    const r = receiver(s, 'thrice-direct');
    const first = await r.m.replica.ingest(SENDER, s.envelopes, 10);
    expect(first.filter((o) => o.type === 'Applied')).toHaveLength(7);
    const once = await stateOf(r.store, s);
    for (let i = 0; i < 2; i++) {
      const again = await r.m.replica.ingest(SENDER, s.envelopes, 10);
      expect(again.map((o) => o.type)).toEqual(s.envelopes.map(() => 'Duplicate'));
      expect(await stateOf(r.store, s)).toEqual(once);
    }
  });

  it('overlapping batches and a stale copy after a newer one apply every event once', async () => {
    const r = receiver(s, 'overlap');
    for (const [from, to] of [
      [1, 4],
      [1, 7],
      [3, 10],
      [1, 4],
      [1, 10],
    ] as const) {
      await r.engine.receive(SENDER, batch(s, from, to));
    }
    // Acks carry the contiguous watermark, so a stale copy is answered with everything held.
    expect(r.acks).toEqual([4, 7, 10, 10, 10]);
    expect(await contentOf(r.store, s)).toEqual(reference);
    expect(await r.store.watermark(SENDER)).toBe(10);
  });
});

describe('a transaction that throws midway', () => {
  it('at every single write of a batch: nothing half-applied, no ack; the retry applies everything exactly once', async () => {
    const probe = receiver(s, 'probe');
    await probe.engine.receive(SENDER, batch(s, 1, 10));
    const writes = probe.store.lastWrites;
    expect(writes).toBeGreaterThan(30);
    for (let n = 1; n <= writes; n++) {
      const r = receiver(s, `crash-${n}`);
      await r.engine.receive(SENDER, batch(s, 1, 3)); // something durable before the crash
      const before = await stateOf(r.store, s);
      r.store.crashAt(n);
      const error = await r.engine.receive(SENDER, batch(s, 1, 10)).catch((e: unknown) => e);
      // Some crash points lie beyond what this (smaller) batch writes.
      if (r.store.crashes === 0) continue;
      expect(error).toBeInstanceOf(InjectedFault);
      expect(await stateOf(r.store, s)).toEqual(before);
      expect(r.acks).toEqual([3]);
      await r.engine.receive(SENDER, batch(s, 1, 10));
      expect(r.acks).toEqual([3, 10]);
      expect(await contentOf(r.store, s)).toEqual(reference);
    }
  });

  it('a crash while recording a local write leaves no trace, and the write can be made again', async () => {
    const r = receiver(s, 'local');
    await r.engine.receive(SENDER, batch(s, 1, 10));
    const before = await stateOf(r.store, s);
    r.store.crashAt(2); // the second write of the recording transaction: after the append
    await expect(r.m.replica.write('device_profiles', 'pump', { name: 'renamed' })).rejects.toBeInstanceOf(
      InjectedFault,
    );
    expect(await stateOf(r.store, s)).toEqual(before);
    await ok(r.m.replica.write('device_profiles', 'pump', { name: 'renamed' }));
    const after = await stateOf(r.store, s);
    expect(after.log).toHaveLength(before.log.length + 1);
    expect((await r.store.row('device_profiles', 'pump'))?.cells['name']?.value).toBe('renamed');
  });

  it('a receiver that crashes mid-apply on a live network catches up from the sender’s cursor', async () => {
    const mesh = makeMesh('crash-net');
    let crashing: CrashingStore | undefined;
    const a = makeMachine('A', 'crash-net/A', mesh, { fastSignatures: true });
    const b = makeMachine('B', 'crash-net/B', mesh, {
      fastSignatures: true,
      wrapStore: (inner) => (crashing = new CrashingStore(inner)),
    });
    mesh.anchors.push(a.id);
    const net = new TestNetwork('crash-net');
    for (const m of [a, b]) net.join(m);
    await net.connectAll();
    for (let i = 0; i < 6; i++) {
      a.clock.advance(1);
      await ok(a.replica.write('device_profiles', `row-${i % 3}`, { notes: `n${i}` }));
      if (i === 3) await ok(a.replica.delete('device_profiles', 'row-0'));
    }
    crashing!.crashAt(5);
    await net.offerAll();
    await net.flush();
    expect(net.crashed).toBe(1);
    expect(await b.store.lastPos()).toBe(0);
    expect(await a.store.cursor(b.id)).toBe(0);
    await net.settle();
    expect(await durableState(b.store).then((x) => x.rows)).toBe((await durableState(a.store)).rows);
    expect(await b.store.lastPos()).toBe(await a.store.lastPos());
  });
});

describe('random crashes during delivery', () => {
  it('the watermark never passes an envelope that is not applied, stored, parked or recorded (200 runs)', async () => {
    const n = s.envelopes.length;
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.record({ from: fc.nat(), length: fc.nat(), crashAt: fc.option(fc.integer({ min: 1, max: 60 })) }), {
          minLength: 1,
          maxLength: 8,
        }),
        async (deliveries) => {
          const r = receiver(s, 'random');
          for (const d of deliveries) {
            // As the protocol guarantees, a batch starts at most one past what was acknowledged.
            const watermark = await r.store.watermark(SENDER);
            const from = 1 + (d.from % Math.min(watermark + 1, n));
            const to = from + (d.length % (n - from + 1));
            const acks = r.acks.length;
            r.store.crashAt(d.crashAt ?? undefined);
            const crashed = await r.engine.receive(SENDER, batch(s, from, to)).then(
              () => false,
              (e: unknown) => {
                if (!(e instanceof InjectedFault)) throw e;
                return true;
              },
            );
            r.store.crashAt(undefined);
            expect(r.acks.length).toBe(crashed ? acks : acks + 1);
            expect(await unaccounted(r.store, s)).toEqual([]);
          }
          // Heal: the sender re-offers from the acknowledged position until the end.
          await r.engine.receive(SENDER, batch(s, Math.min((await r.store.watermark(SENDER)) + 1, n), n));
          await r.engine.receive(SENDER, batch(s, 1, n));
          expect(await unaccounted(r.store, s)).toEqual([]);
          expect(await contentOf(r.store, s)).toEqual(reference);
          const eventIds = (await r.store.entriesAfter(0, 100)).map((e) => e.eventId);
          expect(new Set(eventIds).size).toBe(eventIds.length);
        },
      ),
      { numRuns: runs(200) },
    );
  });
});
