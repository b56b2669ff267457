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
import { isAlive } from '../../src/core/merge.js';
import type { ColumnValue } from '../../src/core/schema.js';
import { DexieReplicaStore, NodeDatabase } from '../../src/storage/dexie-store.js';
import { SqliteReplicaStore } from '../../src/storage/sqlite-replica-store.js';
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
    const windows = new DexieReplicaStore(new NodeDatabase(`dexie-ingest-${++databases}-${seed}`));
    const dexie = makeMachine('B', `dexie-ingest-${seed}/B`, mesh, { wrapStore: () => windows });
    for (const [i, batch] of batches.entries()) {
      const [m, d] = [await memory.replica.ingest('A', batch), await dexie.replica.ingest('A', batch)];
      expect(d.map((o) => o.type)).toEqual(m.map((o) => o.type));
      // A view counts the table early on; every apply after that keeps the counts.
      if (i === 3) await windows.rowWindow('device_profiles', 0, 5);
    }
    const options = { signers: [a.id], peers: ['A'] };
    expect(await durableState(dexie.store, options)).toEqual(await durableState(memory.store, options));
    const rows = await memory.store.rows('device_profiles');
    const window = await windows.rowWindow('device_profiles', 0, 5);
    expect([window.alive, window.deleted]).toEqual([
      rows.filter((r) => isAlive(r)).length,
      rows.filter((r) => !isAlive(r)).length,
    ]);
    expect((await dexie.store.reasonCounts()).parked).toEqual({});
  });

  it('a removal that revokes rows leaves the same rows and the same counts as the memory store', async () => {
    const mesh = makeMesh('dexie-removal');
    const a = makeMachine('A', 'dexie-removal/A', mesh);
    const c = makeMachine('C', 'dexie-removal/C', mesh);
    mesh.anchors.push(a.id);
    await mustWrite(a, 'keyring', c.id, { name: 'C', endpoint: c.id });
    const admitted = (await a.store.entriesAfter(0, 100)).map((e) => e.sealed);
    await c.replica.ingest('A', admitted);
    for (let i = 0; i < 6; i++) await mustWrite(c, 'device_profiles', `c${i}`, { name: `by C ${i}` });
    const byC = (await c.store.entriesAfter(0, 100)).map((e) => e.sealed);
    // A never saw C's rows: its removal marks none of them, so every one is revoked where it lies.
    await mustWrite(a, 'device_profiles', 'c0', { location: 'set by A' });
    const removed = await a.replica.remove(c.id);
    if (!removed.ok) throw new Error(removed.error.type);
    const byA = (await a.store.entriesAfter(0, 100)).map((e) => e.sealed);

    const memory = makeMachine('B', 'dexie-removal/B', mesh);
    const windows = new DexieReplicaStore(new NodeDatabase(`dexie-removal-${++databases}`));
    const dexie = makeMachine('B', 'dexie-removal/B', mesh, { wrapStore: () => windows });
    // SQLite too: its transaction keeps the rows it read or wrote, as IndexedDB's does.
    const sqlite = makeMachine('B', 'dexie-removal/B', mesh, { wrapStore: () => new SqliteReplicaStore(':memory:') });
    for (const m of [memory, dexie, sqlite]) {
      await m.replica.ingest('A', admitted);
      await m.replica.ingest('C', byC);
    }
    expect((await windows.rowWindow('device_profiles', 0, 10)).alive).toBe(6);
    const [m, d, q] = [
      await memory.replica.ingest('A', byA),
      await dexie.replica.ingest('A', byA),
      await sqlite.replica.ingest('A', byA),
    ];
    expect(d.map((o) => o.type)).toEqual(m.map((o) => o.type));
    expect(q.map((o) => o.type)).toEqual(m.map((o) => o.type));
    const rows = await memory.store.rows('device_profiles');
    expect(rows.map((r) => r.row)).toEqual(['c0']); // only A's edit of c0 is left
    const window = await windows.rowWindow('device_profiles', 0, 10);
    expect([window.alive, window.deleted]).toEqual([
      rows.filter((r) => isAlive(r)).length,
      rows.filter((r) => !isAlive(r)).length,
    ]);
    const options = { signers: [a.id, c.id], peers: ['A', 'C'] };
    expect(await durableState(dexie.store, options)).toEqual(await durableState(memory.store, options));
    expect(await durableState(sqlite.store, options)).toEqual(await durableState(memory.store, options));
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
