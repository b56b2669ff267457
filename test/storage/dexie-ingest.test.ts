/**
 * The replica's apply path on IndexedDB (the browser's store, over fake-indexeddb) against
 * the same path on the in-memory store: the IndexedDB transaction looks envelopes up in bulk
 * and writes chain heads and the clock once at its end, and neither may change an outcome.
 * Batches arrive shuffled, repeated, with gaps that park, a ciphertext that does not open,
 * bytes that do not decode, deletes and resurrections; both stores must answer every batch
 * alike and end holding the same state.
 */
import 'fake-indexeddb/auto';
import { describe, expect, it } from 'vitest';
import type { ColumnValue } from '../../src/core/schema.js';
import { DexieReplicaStore, NodeDatabase } from '../../src/storage/dexie-store.js';
import { durableState, makeMachine, makeMesh, seededRandom, type Machine } from '../helpers/deterministic.js';

let databases = 0;

async function mustWrite(m: Machine, table: string, row: string, cols: Record<string, ColumnValue>): Promise<void> {
  const written = await m.replica.write(table, row, cols);
  if (!written.ok) throw new Error(`write failed: ${written.error.type}`);
}

describe('the apply path on IndexedDB', () => {
  it.each([2, 3])('answers shuffled, repeated and broken batches as the memory store does (seed %i)', async (seed) => {
    const mesh = makeMesh(`dexie-ingest-${seed}`);
    const a = makeMachine('A', `dexie-ingest-${seed}/A`, mesh);
    mesh.anchors.push(a.id);
    const random = seededRandom(`dexie-ingest-${seed}`);
    for (let i = 0; i < 80; i++) {
      const row = `r${random.int(30)}`;
      if (random.chance(0.15)) {
        const deleted = await a.replica.delete('device_profiles', row);
        if (!deleted.ok) throw new Error(deleted.error.type);
      } else await mustWrite(a, 'device_profiles', row, { name: `n${random.int(1000)}`, active: random.chance(0.5) });
    }
    const log = (await a.store.entriesAfter(0, 10_000)).map((e) => e.sealed);
    const tampered = log[7]!.slice();
    tampered[tampered.length - 2]! ^= 0x40;
    const pool = [...log, tampered, new Uint8Array([1, 2, 3])];
    // Repeats inside one batch: the second of each is known by what the first wrote.
    const batches: Uint8Array[][] = [[tampered, tampered, log[0]!, log[0]!, log[2]!, log[2]!]];
    for (let i = 0; i < 30; i++) {
      const size = 1 + random.int(24);
      batches.push(Array.from({ length: size }, () => pool[random.int(pool.length)]!));
    }
    batches.push(log); // finally everything, in order: every gap fills

    const memory = makeMachine('B', `dexie-ingest-${seed}/B`, mesh);
    const dexie = makeMachine('B', `dexie-ingest-${seed}/B`, mesh, {
      wrapStore: () => new DexieReplicaStore(new NodeDatabase(`dexie-ingest-${++databases}-${seed}`)),
    });
    for (const batch of batches) {
      const [m, d] = [await memory.replica.ingest('A', batch), await dexie.replica.ingest('A', batch)];
      expect(d.map((o) => o.type)).toEqual(m.map((o) => o.type));
    }
    const options = { signers: [a.id], peers: ['A'] };
    expect(await durableState(dexie.store, options)).toEqual(await durableState(memory.store, options));
    expect((await dexie.store.reasonCounts()).parked).toEqual({});
  });

  it('holds what it cannot read once, however often one batch repeats it', async () => {
    const mesh = makeMesh('dexie-opaque');
    const a = makeMachine('A', 'dexie-opaque/A', mesh);
    mesh.anchors.push(a.id);
    for (let i = 0; i < 3; i++) await mustWrite(a, 'device_profiles', `r${i}`, { name: `n${i}` });
    const log = (await a.store.entriesAfter(0, 100)).map((e) => e.sealed);
    const batch = [log[1]!, log[1]!, log[2]!, log[1]!, log[2]!];
    // Without the GENERAL key, profiles are stored sealed: held, not read.
    const outcomes = [];
    for (const wrapStore of [undefined, () => new DexieReplicaStore(new NodeDatabase(`dexie-opaque-${++databases}`))]) {
      const b = makeMachine('B', 'dexie-opaque/B', mesh, { domains: ['CONTROL'], ...(wrapStore ? { wrapStore } : {}) });
      outcomes.push((await b.replica.ingest('A', batch)).map((o) => o.type));
      expect(await b.store.lastPos()).toBe(2);
    }
    expect(outcomes[1]).toEqual(outcomes[0]);
    expect(outcomes[0]).toEqual(['StoredOpaque', 'Duplicate', 'StoredOpaque', 'Duplicate', 'Duplicate']);
  });
});
