/**
 * One acceptance suite for every `ReplicaStore` adapter (STYLE §2): the same
 * expectations run against the in-memory store and the Dexie store over
 * fake-indexeddb, each test on a fresh database.
 */
import 'fake-indexeddb/auto';
import { describe, expect, it } from 'vitest';
import { toHex } from '../../src/core/bytes.js';
import type { RowState } from '../../src/core/merge.js';
import type { NewLogEntry, ReplicaStore } from '../../src/core/store.js';
import { DexieReplicaStore, NodeDatabase } from '../../src/storage/dexie-store.js';
import { MemoryReplicaStore } from '../../src/storage/memory-store.js';
import { seededRandom } from '../helpers/deterministic.js';

const random = seededRandom('replica-store');
const hex = (n: number): string => toHex(random.bytes(n));

const entry = (over: Partial<NewLogEntry> = {}): NewLogEntry => ({
  outerId: hex(32),
  domain: 'GENERAL',
  sealed: random.bytes(80),
  eventId: hex(32),
  signer: hex(32),
  seq: 1,
  ...over,
});

const opaque = (): NewLogEntry => ({ outerId: hex(32), domain: 'CONTROL', sealed: random.bytes(60) });

const row = (table: string, name: string, value: string, ms = 1): RowState => ({
  table,
  row: name,
  cells: { name: { value, stamp: { ms, counter: 0, node: new Uint8Array(32).fill(ms) } } },
});

/** Plain, comparable form: byte arrays as hex (adapters may hand back Buffer or Uint8Array). */
const plain = (value: unknown): unknown =>
  JSON.parse(JSON.stringify(value, (_, v: unknown) => (v instanceof Uint8Array ? `hex:${toHex(v)}` : v)));

function replicaStoreSuite(name: string, create: () => ReplicaStore): void {
  describe(`ReplicaStore acceptance: ${name}`, () => {
    it('starts empty', async () => {
      const store = create();
      expect(await store.lastPos()).toBe(0);
      expect(await store.entriesAfter(0, 10)).toEqual([]);
      expect(await store.cursor('peer')).toBe(0);
      expect(await store.rows('device_profiles')).toEqual([]);
      expect(await store.row('device_profiles', 'x')).toBeUndefined();
      await store.transact(async (tx) => {
        expect(await tx.getHlc()).toBeUndefined();
        expect(await tx.head('nobody')).toBeUndefined();
        expect(await tx.hasOuterId(hex(32))).toBe(false);
      });
    });

    it('appends in order and pages with entriesAfter', async () => {
      const store = create();
      const entries = [entry({ seq: 1 }), opaque(), entry({ seq: 2 })];
      const positions = await store.transact(async (tx) => {
        const out: number[] = [];
        for (const e of entries) out.push(await tx.append(e));
        return out;
      });
      expect(positions).toEqual([1, 2, 3]);
      expect(await store.lastPos()).toBe(3);
      const all = await store.entriesAfter(0, 10);
      expect(plain(all)).toEqual(plain(entries.map((e, i) => ({ ...e, pos: i + 1 }))));
      expect((await store.entriesAfter(1, 1)).map((e) => e.pos)).toEqual([2]);
      expect((await store.entriesAfter(1, 10)).map((e) => e.pos)).toEqual([2, 3]);
      expect(await store.entriesAfter(3, 10)).toEqual([]);
      expect(all[1]!.eventId).toBeUndefined();
      expect(toHex(all[0]!.sealed)).toBe(toHex(entries[0]!.sealed));
    });

    it('answers outer id and event id lookups; an opaque entry has no event id', async () => {
      const store = create();
      const known = entry();
      const hidden = opaque();
      await store.transact(async (tx) => {
        await tx.append(known);
        await tx.append(hidden);
      });
      await store.transact(async (tx) => {
        expect(await tx.hasOuterId(known.outerId)).toBe(true);
        expect(await tx.hasOuterId(hidden.outerId)).toBe(true);
        expect(await tx.hasOuterId(hex(32))).toBe(false);
        expect(await tx.hasEventId(known.eventId!)).toBe(true);
        expect(await tx.hasEventId(known.outerId)).toBe(false);
        expect(await tx.hasEventId(hex(32))).toBe(false);
      });
    });

    it('keeps chain heads per signer and the clock', async () => {
      const store = create();
      const [s1, s2] = [hex(32), hex(32)];
      await store.transact(async (tx) => {
        await tx.setHead(s1, { seq: 1, eventId: 'a'.repeat(64) });
        await tx.setHead(s2, { seq: 5, eventId: 'b'.repeat(64) });
        await tx.setHead(s1, { seq: 2, eventId: 'c'.repeat(64) });
        await tx.setHlc({ ms: 10, counter: 3 });
      });
      await store.transact(async (tx) => {
        expect(await tx.head(s1)).toEqual({ seq: 2, eventId: 'c'.repeat(64) });
        expect(await tx.head(s2)).toEqual({ seq: 5, eventId: 'b'.repeat(64) });
        expect(await tx.getHlc()).toEqual({ ms: 10, counter: 3 });
      });
    });

    it('stores rows by table and row, replacing on put', async () => {
      const store = create();
      await store.transact(async (tx) => {
        await tx.putRow(row('device_profiles', 'a', 'first'));
        await tx.putRow(row('device_profiles', 'b', 'bee'));
        await tx.putRow(row('keyring', 'a', 'key'));
        await tx.putRow(row('device_profiles', 'a', 'second', 2));
      });
      const profiles = await store.rows('device_profiles');
      expect(plain(profiles.sort((x, y) => x.row.localeCompare(y.row)))).toEqual(
        plain([row('device_profiles', 'a', 'second', 2), row('device_profiles', 'b', 'bee')]),
      );
      expect(plain(await store.rows('keyring'))).toEqual(plain([row('keyring', 'a', 'key')]));
      expect(plain(await store.row('keyring', 'a'))).toEqual(plain(row('keyring', 'a', 'key')));
      expect(await store.row('keyring', 'b')).toBeUndefined();
      expect(plain(await store.transact((tx) => tx.getRow('device_profiles', 'a')))).toEqual(
        plain(row('device_profiles', 'a', 'second', 2)),
      );
    });

    it('moves cursors forward only, per peer', async () => {
      const store = create();
      await store.advanceCursor('p', 5);
      await store.advanceCursor('p', 3);
      await store.advanceCursor('q', 1);
      expect(await store.cursor('p')).toBe(5);
      expect(await store.cursor('q')).toBe(1);
      await store.advanceCursor('p', 7);
      expect(await store.cursor('p')).toBe(7);
    });

    it('a transaction that throws after writing leaves nothing behind', async () => {
      const store = create();
      const kept = entry();
      await store.transact(async (tx) => {
        await tx.append(kept);
        await tx.setHlc({ ms: 1, counter: 0 });
        await tx.putRow(row('device_profiles', 'keep', 'v1'));
      });
      const doomed = entry({ seq: 2 });
      const failure = new Error('boom after writing');
      await expect(
        store.transact(async (tx) => {
          await tx.append(doomed);
          await tx.append(opaque());
          await tx.setHead(doomed.signer!, { seq: 2, eventId: doomed.eventId! });
          await tx.setHlc({ ms: 99, counter: 9 });
          await tx.putRow(row('device_profiles', 'keep', 'v2', 5));
          await tx.putRow(row('device_profiles', 'new', 'x'));
          throw failure;
        }),
      ).rejects.toBe(failure);
      expect(await store.lastPos()).toBe(1);
      expect((await store.entriesAfter(0, 10)).map((e) => e.outerId)).toEqual([kept.outerId]);
      expect(plain(await store.rows('device_profiles'))).toEqual(plain([row('device_profiles', 'keep', 'v1')]));
      await store.transact(async (tx) => {
        expect(await tx.hasOuterId(doomed.outerId)).toBe(false);
        expect(await tx.hasEventId(doomed.eventId!)).toBe(false);
        expect(await tx.head(doomed.signer!)).toBeUndefined();
        expect(await tx.getHlc()).toEqual({ ms: 1, counter: 0 });
      });
      // The store stays usable and keeps positions increasing.
      const after = await store.transact((tx) => tx.append(entry()));
      expect(after).toBeGreaterThan(1);
      expect(await store.lastPos()).toBe(after);
    });

    it('serialises concurrent transactions and returns their values', async () => {
      const store = create();
      const results = await Promise.all(
        Array.from({ length: 5 }, () =>
          store.transact(async (tx) => {
            const before = (await tx.getHlc())?.counter ?? 0;
            await tx.setHlc({ ms: 1, counter: before + 1 });
            return tx.append(entry());
          }),
        ),
      );
      expect([...results].sort()).toEqual([1, 2, 3, 4, 5]);
      expect(await store.transact((tx) => tx.getHlc())).toEqual({ ms: 1, counter: 5 });
    });
  });
}

let dbCounter = 0;
replicaStoreSuite('memory', () => new MemoryReplicaStore());
replicaStoreSuite(
  'dexie',
  () => new DexieReplicaStore(new NodeDatabase(`replica-store-test-${++dbCounter}-${hex(4)}`)),
);
