/**
 * Group commit of local writes: writes made while others are being recorded go together
 * (one read transaction, one recording transaction), in call order, each with its own
 * result; a write that fails leaves the others' chain unbroken; CONTROL writes go alone.
 */
import { describe, expect, it } from 'vitest';
import { toHex } from '../../src/core/bytes.js';
import { decodeEvent } from '../../src/core/event.js';
import { openSealed, decodeSealed } from '../../src/core/seal.js';
import type { ReplicaStore } from '../../src/core/store.js';
import { MAX_EVENT_BYTES } from '../../src/core/event.js';
import { MAX_WRITE_BATCH, MAX_WRITE_RETRIES } from '../../src/core/local-writes.js';
import { makeMachine, makeMesh, type Machine, type Mesh } from '../helpers/deterministic.js';

/** A store that counts the transactions it runs. */
function counting(store: ReplicaStore): { store: ReplicaStore; count: () => number } {
  let n = 0;
  const wrapped = new Proxy(store, {
    get(target, key) {
      const value: unknown = Reflect.get(target, key, target);
      if (key === 'transact' && typeof value === 'function') {
        return (...args: unknown[]): unknown => {
          n++;
          return Reflect.apply(value, target, args) as unknown;
        };
      }
      return typeof value === 'function' ? (value.bind(target) as unknown) : value;
    },
  });
  return { store: wrapped, count: () => n };
}

/** The events of `machine`'s own log in order: table, row, seq and whether each links to the one before. */
async function ownChain(machine: Machine, mesh: Mesh) {
  const entries = await machine.store.entriesAfter(0, 10_000);
  return entries.map((entry) => {
    const sealed = decodeSealed(entry.sealed);
    if (!sealed.ok) throw new Error('bad envelope');
    const opened = openSealed(sealed.value, (d) => (d === 'GENERAL' ? mesh.keys.GENERAL : mesh.keys.CONTROL));
    if (!opened.ok) throw new Error('does not open');
    const event = decodeEvent(opened.value);
    if (!event.ok) throw new Error('bad event');
    return {
      table: event.value.body.table,
      row: event.value.body.row,
      seq: event.value.body.seq,
      id: event.value.id,
      prev: event.value.body.prev,
    };
  });
}

/**
 * A founding machine A of a fresh mesh whose store counts its transactions, and the count so far
 * (`wrap` puts another store wrapper beneath the counter).
 */
function countedMachine(seed: string, wrap: (store: ReplicaStore) => ReplicaStore = (store) => store) {
  const mesh = makeMesh(seed);
  let counter: ReturnType<typeof counting> | undefined;
  const a = makeMachine('A', `${seed}/A`, mesh, { wrapStore: (memory) => (counter = counting(wrap(memory))).store });
  mesh.anchors.push(a.id);
  const before = counter!.count();
  return { mesh, a, transactions: () => counter!.count() - before };
}

describe('group commit of local writes', () => {
  it('writes issued together are recorded in call order, chained, in far fewer transactions than writes', async () => {
    const { mesh, a, transactions } = countedMachine('group-commit');
    const results = await Promise.all(
      Array.from({ length: 100 }, (_, i) => a.replica.write('device_profiles', `r${i}`, { name: `row ${i}` })),
    );
    expect(results.every((r) => r.ok)).toBe(true);
    expect(new Set(results.map((r) => r.ok && r.value.outerId)).size).toBe(100);
    // The first write goes alone; the 99 queued behind it go together: 2 + 2 transactions.
    expect(transactions()).toBeLessThanOrEqual(6);
    const chain = await ownChain(a, mesh);
    expect(chain.map((e) => e.row)).toEqual(Array.from({ length: 100 }, (_, i) => `r${i}`));
    expect(chain.map((e) => e.seq)).toEqual(Array.from({ length: 100 }, (_, i) => i + 1));
    for (let i = 1; i < chain.length; i++) expect(toHex(chain[i]!.prev)).toBe(toHex(chain[i - 1]!.id));
    for (let i = 0; i < 100; i++) {
      expect((await a.store.row('device_profiles', `r${i}`))?.cells['name']?.value).toBe(`row ${i}`);
    }
  });

  it('a write that cannot be signed fails alone; the ones after it keep an unbroken chain', async () => {
    const mesh = makeMesh('group-commit-fail');
    const a = makeMachine('A', 'group-commit-fail/A', mesh);
    mesh.anchors.push(a.id);
    const results = await Promise.all([
      a.replica.write('device_profiles', 'before', { name: 'before' }),
      a.replica.write('device_profiles', 'x', { name: 'first' }),
      a.replica.write('device_profiles', 'huge', { notes: 'n'.repeat(MAX_EVENT_BYTES) }),
      a.replica.write('device_profiles', 'y', { name: 'after' }),
      a.replica.write('device_profiles', 'unknown-column', { colour: 'red' }),
      a.replica.write('device_profiles', 'z', { name: 'last' }),
    ]);
    expect(results.map((r) => (r.ok ? 'ok' : r.error.type))).toEqual([
      'ok',
      'ok',
      'InvalidEdit',
      'ok',
      'InvalidEdit',
      'ok',
    ]);
    const chain = await ownChain(a, mesh);
    expect(chain.map((e) => e.row)).toEqual(['before', 'x', 'y', 'z']);
    expect(chain.map((e) => e.seq)).toEqual([1, 2, 3, 4]);
    for (let i = 1; i < chain.length; i++) expect(toHex(chain[i]!.prev)).toBe(toHex(chain[i - 1]!.id));
  });

  it('control writes go one at a time, so a write after a role change is judged by it', async () => {
    const { mesh, a, transactions } = countedMachine('group-commit-control');
    const results = await Promise.all([
      a.replica.write('device_profiles', 'd0', { name: 'data' }),
      a.replica.write('sync_manifest', 'device_profiles', { class: 'public' }),
      a.replica.write('sync_manifest', 'field_notes', { class: 'public' }),
      a.replica.write('device_profiles', 'd1', { name: 'data' }),
    ]);
    expect(results.every((r) => r.ok)).toBe(true);
    // d0 alone (first), each control write alone, then d1: four batches of two transactions.
    expect(transactions()).toBe(8);
    expect((await ownChain(a, mesh)).map((e) => e.table)).toEqual([
      'device_profiles',
      'sync_manifest',
      'sync_manifest',
      'device_profiles',
    ]);
  });

  it('a batch of data writes stops before a control write queued behind them', async () => {
    const { a, transactions } = countedMachine('group-commit-stop');
    const results = await Promise.all([
      a.replica.write('device_profiles', 'd0', { name: 'data' }),
      a.replica.write('device_profiles', 'd1', { name: 'data' }),
      a.replica.write('sync_manifest', 'device_profiles', { class: 'public' }),
      a.replica.write('device_profiles', 'd2', { name: 'data' }),
    ]);
    expect(results.every((r) => r.ok)).toBe(true);
    // d0 alone (first), then d1 (stopping before the control write), the control write, d2.
    expect(transactions()).toBe(8);
  });

  it(`records at most ${MAX_WRITE_BATCH} writes together`, async () => {
    const { mesh, a, transactions } = countedMachine('group-commit-bound');
    const writes = MAX_WRITE_BATCH + 2;
    const results = await Promise.all(
      Array.from({ length: writes }, (_, i) => a.replica.write('device_profiles', `r${i}`, { name: `row ${i}` })),
    );
    expect(results.every((r) => r.ok)).toBe(true);
    // The first alone, then a full batch, then the one left over: three batches of two transactions.
    expect(transactions()).toBe(6);
    expect((await ownChain(a, mesh)).map((e) => e.seq)).toEqual(Array.from({ length: writes }, (_, i) => i + 1));
  });

  it(`gives up after ${MAX_WRITE_RETRIES} attempts when another writer of the chain always gets in first`, async () => {
    let racing = false;
    let moves = 0;
    // Another tab of this machine that appends to the chain between every read and every recording.
    const racingStore = (store: ReplicaStore): ReplicaStore =>
      new Proxy(store, {
        get(target, key) {
          const value: unknown = Reflect.get(target, key, target);
          if (key !== 'transact' || typeof value !== 'function') {
            return typeof value === 'function' ? (value.bind(target) as unknown) : value;
          }
          return (fn: (tx: unknown) => unknown) =>
            Reflect.apply(value, target, [
              (tx: { head: (chain: string) => unknown }) =>
                fn(
                  new Proxy(tx, {
                    get(t, k) {
                      if (racing && k === 'head') return async () => ({ seq: ++moves, eventId: '00'.repeat(32) });
                      const v: unknown = Reflect.get(t, k, t);
                      return typeof v === 'function' ? (v.bind(t) as unknown) : v;
                    },
                  }),
                ),
            ]) as unknown;
        },
      });
    const { a, transactions } = countedMachine('group-commit-race', racingStore);
    racing = true;
    await expect(a.replica.write('device_profiles', 'r', { name: 'never' })).rejects.toThrow(
      'replica: local write kept racing another writer',
    );
    expect(transactions()).toBe(2 * MAX_WRITE_RETRIES);
    racing = false;
    expect((await a.replica.write('device_profiles', 'r', { name: 'at last' })).ok).toBe(true);
    expect((await a.store.row('device_profiles', 'r'))?.cells['name']?.value).toBe('at last');
  });
});
