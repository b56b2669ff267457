/**
 * One acceptance suite for every `ReplicaStore` adapter (STYLE §2): the same
 * expectations run against the in-memory store, the Dexie store over
 * fake-indexeddb and the SQLite store, each test on a fresh database.
 */
import 'fake-indexeddb/auto';
import { describe, expect, it } from 'vitest';
import { toHex } from '../../src/core/bytes.js';
import type { EventBody, EventOp } from '../../src/core/event.js';
import type { Stamp } from '../../src/core/hlc.js';
import { isAlive, type RowState } from '../../src/core/merge.js';
import {
  rowKeyOf,
  rowSortKey,
  type NewLogEntry,
  type ParkedEnvelope,
  type ParkReason,
  type RejectionRecord,
  type ReplicaStore,
  type Resurrection,
  type SealedEntry,
  type WithheldRecord,
} from '../../src/core/store.js';
import { Dexie } from 'dexie';
import { DexieReplicaStore, NodeDatabase } from '../../src/storage/dexie-store.js';
import { MemoryReplicaStore } from '../../src/storage/memory-store.js';
import { SqliteReplicaStore } from '../../src/storage/sqlite-replica-store.js';
import { seededRandom } from '../helpers/deterministic.js';

const random = seededRandom('replica-store');
const hex = (n: number): string => toHex(random.bytes(n));
const fixedId = (n: number): string => n.toString(16).padStart(64, '0');

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

const stampAt = (ms: number): Stamp => ({ ms, counter: 0, node: new Uint8Array(32).fill(ms) });

const row = (table: string, name: string, value: string, ms = 1): RowState => ({
  table,
  row: name,
  cells: { name: { value, stamp: stampAt(ms) } },
});

/** The opened part of a log entry: a body (only what the store indexes matters) and its row key. */
const opened = (table: string, rowName: string, op: EventOp): Pick<NewLogEntry, 'body' | 'rowKey' | 'op'> => ({
  body: {
    v: 1,
    domain: table === 'keyring' ? 'CONTROL' : 'GENERAL',
    signer: random.bytes(32),
    seq: 1,
    prev: new Uint8Array(32),
    table,
    row: rowName,
    op,
    cols: op === 'put' ? { name: 'x' } : {},
    hlc: { ms: 1, counter: 0 },
  } satisfies EventBody,
  rowKey: rowKeyOf(table, rowName),
  op,
});

const parkedEnvelope = (reason: ParkReason, at: number): ParkedEnvelope => ({
  outerId: hex(32),
  sealed: random.bytes(40),
  event: random.bytes(30),
  reason,
  detail: `parked for ${reason}`,
  parkedAt: at,
  signer: hex(32),
  seq: at,
});

const rejection = (reason: string, at: number): RejectionRecord => ({
  outerId: hex(32),
  reason,
  detail: `${reason} detail`,
  at,
  peer: 'peer',
});

const resurrection = (deleteId: string, editId: string, at: number): Resurrection => ({
  key: `${deleteId}:${editId}`,
  table: 'device_profiles',
  row: 'r',
  deleteId,
  editId,
  at,
});

const sortById = (value: unknown): unknown =>
  (value as { outerId: string }[]).sort((a, b) => a.outerId.localeCompare(b.outerId));

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

    it('pages one lane with laneAfter: only its entries, within (after, through], at most limit', async () => {
      const store = create();
      const lanes = [undefined, 'trusted', 'local', 'trusted', undefined, 'trusted', 'trusted'] as const;
      await store.transact(async (tx) => {
        for (const [i, lane] of lanes.entries()) await tx.append(entry({ seq: i + 1, ...(lane ? { lane } : {}) }));
      });
      const positions = async (lane: 'trusted' | 'local', after: number, through: number, limit: number) =>
        (await store.laneAfter(lane, after, through, limit)).map((e) => e.pos);
      expect(await positions('trusted', 0, 7, 10)).toEqual([2, 4, 6, 7]);
      expect(await positions('trusted', 2, 6, 10)).toEqual([4, 6]);
      expect(await positions('trusted', 0, 7, 2)).toEqual([2, 4]);
      expect(await positions('local', 0, 7, 10)).toEqual([3]);
      expect(await positions('trusted', 7, 7, 10)).toEqual([]);
      expect((await store.laneAfter('trusted', 0, 7, 1))[0]!.lane).toBe('trusted');
    });

    it('sealedAfter pages like entriesAfter, with the sealed bytes, signer and lane of each entry', async () => {
      const store = create();
      await store.transact(async (tx) => {
        await tx.append(entry({ seq: 1 }));
        await tx.append(opaque());
        await tx.append(entry({ seq: 2, lane: 'trusted' }));
      });
      const whole = await store.entriesAfter(1, 10);
      const sealed = await store.sealedAfter(1, 3, 10);
      // A store may hand back more of each entry; these four are the contract.
      const picked = (entries: readonly SealedEntry[]) =>
        plain(entries.map((e) => ({ pos: e.pos, sealed: e.sealed, signer: e.signer, lane: e.lane })));
      expect(picked(sealed)).toEqual(picked(whole));
      expect(sealed.map((e) => e.pos)).toEqual([2, 3]);
      expect(sealed[1]!.lane).toBe('trusted');
      expect((await store.sealedAfter(0, 3, 1)).map((e) => e.pos)).toEqual([1]);
      expect((await store.sealedAfter(0, 2, 10)).map((e) => e.pos)).toEqual([1, 2]);
      expect(await store.sealedAfter(3, 10, 10)).toEqual([]);
      // Leaving one signer's entries out: opaque entries (no signer) stay.
      const other = whole[1]!.signer!;
      expect((await store.sealedAfter(0, 3, 10, other)).map((e) => e.pos)).toEqual([1, 2]);
      expect((await store.sealedAfter(0, 3, 1, other)).map((e) => e.pos)).toEqual([1]);
      expect((await store.sealedAfter(0, 3, 10, hex(32))).map((e) => e.pos)).toEqual([1, 2, 3]);
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

    it('keeps its own copy of the bytes it is given: changing them after the append changes nothing stored', async () => {
      const store = create();
      const given = { ...entry(), ...opened('device_profiles', 'r', 'put') };
      const before = plain(given);
      await store.transact(async (tx) => {
        await tx.append(given);
        // Still inside the transaction: what was appended is already the store's own.
        given.sealed.fill(0);
        given.body!.prev.fill(1);
        given.body!.signer.fill(2);
      });
      const [kept] = await store.entriesAfter(0, 1);
      expect(plain({ ...kept, pos: undefined })).toEqual(before);
      const [byRow] = await store.transact((tx) => tx.rowEntries(rowKeyOf('device_profiles', 'r')));
      expect(plain(byRow!.body)).toEqual((before as { body: unknown }).body);
    });

    it('answers outer id and event lookups; an opaque entry has no event id', async () => {
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
        expect(await tx.hasEvent(known.signer!, known.seq!, known.eventId!)).toBe(true);
        expect(await tx.hasEvent(known.signer!, known.seq!, known.outerId)).toBe(false);
        expect(await tx.hasEvent(known.signer!, known.seq!, hex(32))).toBe(false);
        expect(await tx.hasEvent(hex(32), known.seq!, hex(32))).toBe(false);
      });
    });

    it('answers what it knows of an envelope in one read: logged, rejected, withheld', async () => {
      const store = create();
      const logged = entry();
      const refused = rejection('SignatureInvalid', 1);
      const held: WithheldRecord = {
        outerId: hex(32),
        eventId: '',
        chain: '',
        seq: 0,
        table: '',
        lane: 'trusted',
        reason: 'NotEligible',
        at: 5,
      };
      await store.transact(async (tx) => {
        await tx.append(logged);
        await tx.recordRejection(refused);
        await tx.withhold(held);
      });
      await store.transact(async (tx) => {
        expect(await tx.envelopeState(logged.outerId)).toEqual({ logged: true, rejected: false, withheld: undefined });
        expect(await tx.envelopeState(refused.outerId)).toEqual({ logged: false, rejected: true, withheld: undefined });
        const state = await tx.envelopeState(held.outerId);
        expect([state.logged, state.rejected, plain(state.withheld)]).toEqual([false, false, plain(held)]);
        expect(await tx.envelopeState(hex(32))).toEqual({ logged: false, rejected: false, withheld: undefined });
      });
    });

    it('lists opaque entries and fills one in place, indexed like an appended event, rolled back on throw', async () => {
      const store = create();
      const hidden = opaque();
      const later = { ...entry({ seq: 2 }), ...opened('device_profiles', 'r', 'put') };
      await store.transact(async (tx) => {
        await tx.append(opaque());
        await tx.append(hidden);
        await tx.append(later);
      });
      expect((await store.transact((tx) => tx.opaqueAfter(0, 10))).map((e) => e.pos)).toEqual([1, 2]);
      expect((await store.transact((tx) => tx.opaqueAfter(1, 10))).map((e) => e.pos)).toEqual([2]);
      const filled = { ...entry({ seq: 1, signer: later.signer! }), ...opened('device_profiles', 'r', 'put') };
      const same = { ...filled, outerId: hidden.outerId };
      await expect(store.transact((tx) => tx.fill(3, same))).rejects.toThrow();
      await expect(
        store.transact(async (tx) => {
          await tx.fill(2, same);
          throw new Error('roll back');
        }),
      ).rejects.toThrow('roll back');
      expect((await store.entriesAfter(1, 1))[0]!.eventId).toBeUndefined();
      await store.transact((tx) => tx.fill(2, same));
      await store.transact(async (tx) => {
        expect(await tx.hasEvent(same.signer!, same.seq!, same.eventId!)).toBe(true);
        expect((await tx.rowEntries(same.rowKey!)).map((e) => e.pos)).toEqual([2, 3]);
        expect((await tx.signerEntriesAbove(later.signer!, 0)).map((e) => e.pos)).toEqual([2, 3]);
        expect((await tx.opaqueAfter(0, 10)).map((e) => e.pos)).toEqual([1]);
      });
      expect(await store.lastPos()).toBe(3);
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

    it('reads back, inside one transaction, the heads and clock it wrote', async () => {
      const store = create();
      const chain = hex(32);
      await store.transact(async (tx) => {
        await tx.setHead(chain, { seq: 1, eventId: 'a'.repeat(64) });
        await tx.setHlc({ ms: 4, counter: 0 });
      });
      await store.transact(async (tx) => {
        expect(await tx.head(chain)).toEqual({ seq: 1, eventId: 'a'.repeat(64) });
        await tx.setHead(chain, { seq: 2, eventId: 'b'.repeat(64) });
        expect(await tx.head(chain)).toEqual({ seq: 2, eventId: 'b'.repeat(64) });
        expect(await tx.head(hex(32))).toBeUndefined();
        expect(await tx.getHlc()).toEqual({ ms: 4, counter: 0 });
        await tx.setHlc({ ms: 5, counter: 1 });
        expect(await tx.getHlc()).toEqual({ ms: 5, counter: 1 });
        await tx.setHlc({ ms: 5, counter: 2 });
        expect(await tx.getHlc()).toEqual({ ms: 5, counter: 2 });
      });
      await store.transact(async (tx) => {
        expect(await tx.head(chain)).toEqual({ seq: 2, eventId: 'b'.repeat(64) });
        expect(await tx.getHlc()).toEqual({ ms: 5, counter: 2 });
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
        expect(await tx.hasEvent(doomed.signer!, doomed.seq!, doomed.eventId!)).toBe(false);
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

    it('lists the opened entries of one row, optionally of one op, in log order', async () => {
      const store = create();
      const signer = hex(32);
      const [p1, d2, p3] = [
        entry({ signer, seq: 1, ...opened('device_profiles', 'r', 'put') }),
        entry({ signer, seq: 2, ...opened('device_profiles', 'r', 'del') }),
        entry({ signer, seq: 3, ...opened('device_profiles', 'r', 'put') }),
      ];
      await store.transact(async (tx) => {
        await tx.append(p1);
        await tx.append(entry({ signer, seq: 4, ...opened('device_profiles', 'other', 'put') }));
        await tx.append(opaque());
        await tx.append(d2);
        await tx.append(p3);
      });
      await store.transact(async (tx) => {
        const key = rowKeyOf('device_profiles', 'r');
        expect((await tx.rowEntries(key)).map((e) => [e.pos, e.body?.op])).toEqual([
          [1, 'put'],
          [4, 'del'],
          [5, 'put'],
        ]);
        expect((await tx.rowEntries(key, 'put')).map((e) => e.pos)).toEqual([1, 5]);
        expect((await tx.rowEntries(key, 'del')).map((e) => e.outerId)).toEqual([d2.outerId]);
        expect(await tx.rowEntries(rowKeyOf('device_profiles', 'none'))).toEqual([]);
        expect(plain((await tx.rowEntries(key, 'del'))[0]!.body)).toEqual(plain(d2.body));
      });
    });

    it('answers a row’s ids and stamps per op without bodies, in log order, leaving out revoked entries', async () => {
      const store = create();
      const at = (ms: number, counter: number, op: EventOp, rowName = 'r') => {
        const base = opened('device_profiles', rowName, op);
        return entry({ ...base, body: { ...base.body!, hlc: { ms, counter } } });
      };
      const [d1, p2, d3, d4] = [at(10, 0, 'del'), at(11, 0, 'put'), at(12, 3, 'del'), at(13, 0, 'del')];
      await store.transact(async (tx) => {
        for (const e of [d1, p2, opaque(), at(9, 0, 'del', 'other'), d3, d4]) await tx.append(e);
        await tx.setRevoked(6, true);
      });
      await store.transact(async (tx) => {
        const key = rowKeyOf('device_profiles', 'r');
        const deletes = await tx.rowStamps(key, 'del');
        expect(plain(deletes)).toEqual(
          plain([d1, d3].map((e) => ({ eventId: e.eventId, stamp: { ...e.body!.hlc, node: e.body!.signer } }))),
        );
        expect((await tx.rowStamps(key, 'put')).map((e) => e.eventId)).toEqual([p2.eventId]);
        expect(await tx.rowStamps(key, 'remove')).toEqual([]);
        expect(await tx.rowStamps(rowKeyOf('device_profiles', 'none'), 'del')).toEqual([]);
      });
    });

    it('lists a signer’s entries above a sequence number, and flips revoked flags both ways', async () => {
      const store = create();
      const [s1, s2] = [hex(32), hex(32)];
      await store.transact(async (tx) => {
        for (let seq = 1; seq <= 4; seq++) await tx.append(entry({ signer: s1, seq, ...opened('keyring', s1, 'put') }));
        await tx.append(entry({ signer: s2, seq: 1 }));
      });
      await store.transact(async (tx) => {
        expect((await tx.signerEntriesAbove(s1, 0)).map((e) => e.seq)).toEqual([1, 2, 3, 4]);
        expect((await tx.signerEntriesAbove(s1, 2)).map((e) => e.seq)).toEqual([3, 4]);
        expect(await tx.signerEntriesAbove(s1, 4)).toEqual([]);
        expect((await tx.signerEntriesAbove(s2, 0)).map((e) => e.pos)).toEqual([5]);
        await tx.setRevoked(3, true);
        await tx.setRevoked(4, true);
      });
      const revokedOf = async () => (await store.entriesAfter(0, 10)).map((e) => e.revoked ?? false);
      expect(await revokedOf()).toEqual([false, false, true, true, false]);
      await store.transact(async (tx) => {
        await tx.setRevoked(4, false);
        expect((await tx.signerEntriesAbove(s1, 2)).map((e) => e.revoked ?? false)).toEqual([true, false]);
      });
      expect(await revokedOf()).toEqual([false, false, true, false, false]);
      // An un-revoked entry carries no `revoked` field at all, as if never flagged.
      expect('revoked' in (await store.entriesAfter(3, 1))[0]!).toBe(false);
    });

    it('deletes rows', async () => {
      const store = create();
      await store.transact(async (tx) => {
        await tx.putRow(row('device_profiles', 'a', 'x'));
        await tx.putRow(row('device_profiles', 'b', 'y'));
      });
      await store.transact(async (tx) => {
        await tx.deleteRow('device_profiles', 'a');
        await tx.deleteRow('device_profiles', 'never');
        expect(await tx.getRow('device_profiles', 'a')).toBeUndefined();
      });
      expect((await store.rows('device_profiles')).map((r) => r.row)).toEqual(['b']);
    });

    it('keeps rows with tombstones and removals as they were put', async () => {
      const store = create();
      const tombstoned: RowState = { ...row('device_profiles', 't', 'v', 3), deleted: stampAt(2) };
      const removed: RowState = { ...row('keyring', 'k', 'v', 1), removed: { hwm: 7, trustedHwm: 7 } };
      await store.transact(async (tx) => {
        await tx.putRow(tombstoned);
        await tx.putRow(removed);
      });
      expect(plain(await store.row('device_profiles', 't'))).toEqual(plain(tombstoned));
      expect(plain(await store.row('keyring', 'k'))).toEqual(plain(removed));
    });

    it('parks, lists, counts and unparks envelopes; parking again replaces', async () => {
      const store = create();
      // `two` was held opaque at log position 7 before it could be opened: it keeps that place.
      const [one, two] = [parkedEnvelope('UnknownSigner', 1), { ...parkedEnvelope('ChainGap', 2), fill: 7 }];
      await store.transact(async (tx) => {
        await tx.park(one);
        await tx.park(two);
        await tx.park({ ...one, reason: 'ClockSkew', detail: 'again' });
        expect(await tx.parkedCount()).toBe(2);
        expect(await tx.isParked(one.outerId)).toBe(true);
        expect(await tx.isParked(hex(32))).toBe(false);
        expect(sortById(plain(await tx.parkedAll()))).toEqual(
          sortById(plain([{ ...one, reason: 'ClockSkew', detail: 'again' }, two])),
        );
      });
      expect(await store.parkedCount()).toBe(2);
      expect(await store.parked(10)).toHaveLength(2);
      expect(await store.parked(1)).toHaveLength(1);
      await store.transact(async (tx) => {
        await tx.unpark(one.outerId);
        await tx.unpark(hex(32));
        expect(await tx.isParked(one.outerId)).toBe(false);
      });
      expect(plain(await store.parked(10))).toEqual(plain([two]));
      expect(await store.parkedCount()).toBe(1);
    });

    it('counts parked and withheld envelopes by reason, following parking again, unparking and releasing', async () => {
      const store = create();
      expect(await store.reasonCounts()).toEqual({ parked: {}, withheld: {}, rejected: {} });
      const parked = [parkedEnvelope('UnknownSigner', 1), parkedEnvelope('ChainGap', 2), parkedEnvelope('ChainGap', 3)];
      const held = (n: number, reason: WithheldRecord['reason']): WithheldRecord => ({
        outerId: fixedId(50 + n),
        eventId: '',
        chain: '',
        seq: n,
        table: '',
        lane: 'trusted',
        reason,
        at: n,
      });
      await store.transact(async (tx) => {
        for (const p of parked) await tx.park(p);
        await tx.park({ ...parked[0]!, reason: 'ClockSkew' }); // parked again: counted under its new reason
        await tx.withhold(held(1, 'NotEligible'));
        await tx.withhold(held(2, 'NotEligible'));
        await tx.withhold(held(3, 'NotSyncable'));
      });
      expect(await store.reasonCounts()).toEqual({
        parked: { ClockSkew: 1, ChainGap: 2 },
        withheld: { NotEligible: 2, NotSyncable: 1 },
        rejected: {},
      });
      await store.transact(async (tx) => {
        await tx.unpark(parked[1]!.outerId);
        await tx.release(held(3, 'NotSyncable').outerId);
      });
      expect(await store.reasonCounts()).toEqual({
        parked: { ClockSkew: 1, ChainGap: 1 },
        withheld: { NotEligible: 2 },
        rejected: {},
      });
    });

    it('counts rejections by reason and pages every list newest first, each in one shape', async () => {
      const store = create();
      const rejections = Array.from({ length: 25 }, (_, i) =>
        rejection(i % 3 === 0 ? 'SignatureInvalid' : 'UnknownSigner', 100 + i),
      );
      await store.transact(async (tx) => {
        for (const r of rejections) await tx.recordRejection(r);
        await tx.park(parkedEnvelope('ChainGap', 7));
        await tx.park(parkedEnvelope('ClockSkew', 9));
        await tx.withhold({
          outerId: fixedId(77),
          eventId: '',
          chain: '',
          seq: 1,
          table: 'device_profiles',
          lane: 'trusted',
          reason: 'NotEligible',
          at: 5,
        });
      });
      expect((await store.reasonCounts()).rejected).toEqual({ SignatureInvalid: 9, UnknownSigner: 16 });
      const first = await store.refusals('rejected', 0, 10);
      const third = await store.refusals('rejected', 20, 10);
      expect(first.map((r) => r.at)).toEqual(Array.from({ length: 10 }, (_, i) => 124 - i));
      expect(third.map((r) => r.at)).toEqual([104, 103, 102, 101, 100]);
      expect(first[0]).toEqual({
        outerId: rejections[24]!.outerId,
        reason: 'SignatureInvalid',
        detail: 'SignatureInvalid detail',
        at: 124,
      });
      expect((await store.refusals('parked', 0, 10)).map((r) => [r.reason, r.at])).toEqual([
        ['ClockSkew', 9],
        ['ChainGap', 7],
      ]);
      expect(await store.refusals('parked', 1, 10)).toHaveLength(1);
      expect(await store.refusals('withheld', 0, 10)).toEqual([
        { outerId: fixedId(77), reason: 'NotEligible', detail: 'a row of device_profiles (trusted lane)', at: 5 },
      ]);
      expect(await store.refusals('withheld', 1, 10)).toEqual([]);
    });

    it('records rejections by outer id', async () => {
      const store = create();
      const records = [rejection('SignatureInvalid', 1), rejection('ChainFork', 2), rejection('MalformedEvent', 3)];
      await store.transact(async (tx) => {
        for (const r of records) await tx.recordRejection(r);
        await tx.recordRejection(records[0]!);
        expect(await tx.isRejected(records[1]!.outerId)).toBe(true);
        expect(await tx.isRejected(hex(32))).toBe(false);
      });
      expect(sortById(plain(await store.rejections(10)))).toEqual(sortById(plain(records)));
      expect(await store.rejections(2)).toHaveLength(2);
    });

    it('withholds by identity, oldest first, releases, and rolls back with the transaction', async () => {
      const store = create();
      const record = (n: number): WithheldRecord => ({
        outerId: fixedId(n),
        eventId: n % 2 ? fixedId(n + 100) : '',
        chain: n % 2 ? `signer-${n}` : '',
        seq: n,
        table: n % 2 ? 'device_profiles' : '',
        lane: n % 2 ? 'public' : 'trusted',
        reason: n % 2 ? 'NotSyncable' : 'NotEligible',
        at: 1000 + n,
      });
      await store.transact(async (tx) => {
        for (const n of [3, 1, 2]) await tx.withhold(record(n));
        expect(plain(await tx.withheldRecord(record(2).outerId))).toEqual(plain(record(2)));
        expect(await tx.withheldRecord(fixedId(99))).toBeUndefined();
      });
      expect((await store.withheld(10)).map((r) => r.seq)).toEqual([1, 2, 3]);
      expect(await store.withheld(1)).toHaveLength(1);
      await store.transact((tx) => tx.release(record(1).outerId));
      await expect(
        store.transact(async (tx) => {
          await tx.release(record(2).outerId);
          await tx.withhold(record(4));
          throw new Error('abort');
        }),
      ).rejects.toThrow('abort');
      expect((await store.withheld(10)).map((r) => r.seq)).toEqual([2, 3]);
    });

    it('finds log entries by outer id, in log order, ignoring unknown ids', async () => {
      const store = create();
      const [x, y, z] = [entry({ seq: 1 }), opaque(), entry({ seq: 2 })];
      await store.transact(async (tx) => {
        for (const e of [x, y, z]) await tx.append(e);
      });
      const found = await store.entriesByOuterId([z.outerId, fixedId(77), x.outerId]);
      expect(found.map((e) => e.pos)).toEqual([1, 3]);
      expect(await store.entriesByOuterId([])).toEqual([]);
    });

    it('keeps each resurrection once by key and drops those of one event', async () => {
      const store = create();
      const [del1, del2, put1, put2] = [hex(32), hex(32), hex(32), hex(32)];
      const pairs = [resurrection(del1, put1, 1), resurrection(del1, put2, 2), resurrection(del2, put2, 3)];
      await store.transact(async (tx) => {
        for (const r of pairs) await tx.addResurrection(r);
        await tx.addResurrection({ ...pairs[0]!, at: 9 });
        expect(await tx.hasResurrection(pairs[0]!.key)).toBe(true);
        expect(await tx.hasResurrection(`${del2}:${put1}`)).toBe(false);
      });
      expect((await store.resurrections(10)).map((r) => r.key).sort()).toEqual(pairs.map((r) => r.key).sort());
      await store.transact((tx) => tx.dropResurrectionsOf(put2));
      expect((await store.resurrections(10)).map((r) => r.key)).toEqual([pairs[0]!.key]);
      await store.transact((tx) => tx.dropResurrectionsOf(del1));
      expect(await store.resurrections(10)).toEqual([]);
    });

    it('moves watermarks forward only, per peer, inside transactions', async () => {
      const store = create();
      expect(await store.watermark('p')).toBe(0);
      await store.transact(async (tx) => {
        await tx.setWatermark('p', 5);
        await tx.setWatermark('p', 3);
        await tx.setWatermark('q', 2);
      });
      expect(await store.watermark('p')).toBe(5);
      expect(await store.watermark('q')).toBe(2);
      // Watermarks and cursors are separate: one is what we hold of theirs, the other what they hold of ours.
      expect(await store.cursor('p')).toBe(0);
      await store.transact((tx) => tx.setWatermark('p', 8));
      expect(await store.watermark('p')).toBe(8);
    });

    it('a throwing transaction also rolls back revoked flags, parking, rejections, resurrections and watermarks', async () => {
      const store = create();
      const signer = hex(32);
      const kept = entry({ signer, seq: 1, ...opened('device_profiles', 'r', 'put') });
      const keptParked = parkedEnvelope('ChainGap', 1);
      const keptPair = resurrection(hex(32), hex(32), 1);
      await store.transact(async (tx) => {
        await tx.append(kept);
        await tx.putRow(row('device_profiles', 'r', 'v'));
        await tx.park(keptParked);
        await tx.addResurrection(keptPair);
        await tx.setWatermark('p', 4);
      });
      const before = await everything(store, signer, [keptParked.outerId]);
      const failure = new Error('boom');
      await expect(
        store.transact(async (tx) => {
          await tx.setRevoked(1, true);
          await tx.deleteRow('device_profiles', 'r');
          await tx.unpark(keptParked.outerId);
          await tx.park(parkedEnvelope('UnknownSigner', 2));
          await tx.recordRejection(rejection('ChainBroken', 2));
          await tx.addResurrection(resurrection(hex(32), hex(32), 2));
          await tx.dropResurrectionsOf(keptPair.deleteId);
          await tx.setWatermark('p', 9);
          await tx.setWatermark('q', 1);
          await tx.append(entry({ signer, seq: 2, ...opened('device_profiles', 'r', 'del') }));
          throw failure;
        }),
      ).rejects.toBe(failure);
      expect(await everything(store, signer, [keptParked.outerId])).toEqual(before);
    });
  });
}

/** What a store holds, in plain comparable form (for before/after a failed transaction). */
async function everything(store: ReplicaStore, signer: string, parkedIds: readonly string[]): Promise<unknown> {
  const inTx = await store.transact(async (tx) => ({
    signerEntries: await tx.signerEntriesAbove(signer, 0),
    rowEntries: await tx.rowEntries(rowKeyOf('device_profiles', 'r')),
    parked: await Promise.all(parkedIds.map(async (id) => tx.isParked(id))),
    hlc: await tx.getHlc(),
  }));
  return plain({
    inTx,
    log: await store.entriesAfter(0, 100),
    lastPos: await store.lastPos(),
    rows: await store.rows('device_profiles'),
    parked: await store.parked(100),
    parkedCount: await store.parkedCount(),
    rejections: await store.rejections(100),
    resurrections: await store.resurrections(100),
    watermarks: [await store.watermark('p'), await store.watermark('q')],
  });
}

let dbCounter = 0;
replicaStoreSuite('memory', () => new MemoryReplicaStore());
replicaStoreSuite('sqlite', () => new SqliteReplicaStore(':memory:'));
replicaStoreSuite(
  'dexie',
  () => new DexieReplicaStore(new NodeDatabase(`replica-store-test-${++dbCounter}-${hex(4)}`)),
);

/**
 * The stores each earlier version of dexie-store.ts declared, as of `version`: a database
 * an older build wrote is opened with them, then by the current NodeDatabase.
 */
function legacySchema(version: number): Record<string, string> {
  const changes: Record<number, Record<string, string>> = {
    1: { log: '++pos, &outerId, eventId', heads: 'signer', rows: '[table+row], table', cursors: 'peer', meta: 'key' },
    2: {
      log: '++pos, &outerId, eventId, rowKey, [signer+seq]',
      watermarks: 'peer',
      parked: 'outerId, parkedAt',
      rejected: 'outerId, at',
      resurrections: 'key, deleteId, editId, at',
    },
    3: { log: '++pos, &outerId, eventId, rowKey, [signer+seq], [rowKey+op]' },
    4: { withheld: 'outerId, at' },
    5: { withheld: 'outerId, at, reason', parked: 'outerId, parkedAt, reason' },
    6: { rows: '[table+row], table, [table+live+sortKey]' },
    7: { rejected: 'outerId, at, reason' },
  };
  let stores: Record<string, string> = {};
  for (let v = 1; v <= version; v++) stores = { ...stores, ...changes[v] };
  return stores;
}

describe('Dexie schema upgrade', () => {
  it('v4 parked and withheld records are counted by reason once the v5 index is built on open', async () => {
    const name = `replica-store-reasons-${hex(4)}`;
    const v4 = new Dexie(name);
    v4.version(4).stores(legacySchema(4));
    await v4.table('parked').bulkAdd([parkedEnvelope('ChainGap', 1), parkedEnvelope('UnknownSigner', 2)]);
    v4.close();
    const store = new DexieReplicaStore(new NodeDatabase(name));
    expect(await store.reasonCounts()).toEqual({
      parked: { ChainGap: 1, UnknownSigner: 1 },
      withheld: {},
      rejected: {},
    });
  });

  it('v6 rejections are counted by reason once the v7 index is built on open', async () => {
    const name = `replica-store-rejected-${hex(4)}`;
    const v6 = new Dexie(name);
    v6.version(6).stores(legacySchema(6));
    await v6.table('rejected').bulkAdd([rejection('SignatureInvalid', 1), rejection('UnknownSigner', 2)]);
    v6.close();
    const store = new DexieReplicaStore(new NodeDatabase(name));
    expect((await store.reasonCounts()).rejected).toEqual({ SignatureInvalid: 1, UnknownSigner: 1 });
  });

  it('v5 rows gain their place in the views’ order on open: the first window reads them in order', async () => {
    const name = `replica-store-rows-${hex(4)}`;
    const v5 = new Dexie(name);
    v5.version(5).stores(legacySchema(5));
    const gone: RowState = { ...row('device_profiles', 'x', 'Deleted', 1), deleted: stampAt(5) };
    await v5.table('rows').bulkAdd([row('device_profiles', 'b', 'beta'), row('device_profiles', 'a', 'Alpha'), gone]);
    v5.close();
    const store = new DexieReplicaStore(new NodeDatabase(name));
    const window = await store.rowWindow('device_profiles', 0, 10);
    expect(window.rows.map((r) => r.row)).toEqual(['a', 'b']);
    expect([window.alive, window.deleted]).toEqual([2, 1]);
    // The index fields stay inside the store.
    expect(Object.keys(window.rows[0]!).sort()).toEqual(['cells', 'row', 'table']);
    expect(await store.row('device_profiles', 'x')).toEqual(gone);
  });

  it('v2 logs gain the [rowKey+op] index on open, so per-op row history still finds old entries', async () => {
    const name = `replica-store-upgrade-${hex(4)}`;
    const v2 = new Dexie(name);
    v2.version(2).stores(legacySchema(2));
    const signer = hex(32);
    // A v2 entry has no `op` field.
    const withoutOp = ({ op, ...rest }: NewLogEntry): Omit<NewLogEntry, 'op'> => (op ? rest : rest);
    const put = withoutOp(entry({ signer, seq: 1, ...opened('device_profiles', 'r', 'put') }));
    const del = withoutOp(entry({ signer, seq: 2, ...opened('device_profiles', 'r', 'del') }));
    await v2.table('log').bulkAdd([put, del]);
    v2.close();

    const store = new DexieReplicaStore(new NodeDatabase(name));
    await store.transact(async (tx) => {
      const key = rowKeyOf('device_profiles', 'r');
      expect((await tx.rowEntries(key, 'del')).map((e) => e.outerId)).toEqual([del.outerId]);
      expect((await tx.rowEntries(key, 'put')).map((e) => e.outerId)).toEqual([put.outerId]);
    });
  });
  it('v7 rows and row histories are still read after the v8 upgrade drops their single-field indexes', async () => {
    const name = `replica-store-v8-${hex(4)}`;
    const v7 = new Dexie(name);
    v7.version(7).stores(legacySchema(7));
    const signer = hex(32);
    const put = entry({ signer, seq: 1, ...opened('device_profiles', 'r', 'put') });
    const del = entry({ signer, seq: 2, ...opened('device_profiles', 'r', 'del') });
    const other = entry({ signer, seq: 3, ...opened('device_profiles', 's', 'put') });
    await v7.table('log').bulkAdd([put, del, other]);
    const stored = (state: RowState) => ({ ...state, sortKey: rowSortKey(state), live: isAlive(state) ? 1 : 0 });
    await v7
      .table('rows')
      .bulkAdd([stored(row('device_profiles', 'b', 'beta')), stored(row('device_profiles', 'a', 'Alpha'))]);
    await v7.table('rows').add(stored(row('notes', 'n', 'note')));
    v7.close();

    const store = new DexieReplicaStore(new NodeDatabase(name));
    expect((await store.rows('device_profiles')).map((r) => r.row).sort()).toEqual(['a', 'b']);
    expect((await store.rows('notes')).map((r) => r.row)).toEqual(['n']);
    await store.transact(async (tx) => {
      const key = rowKeyOf('device_profiles', 'r');
      expect((await tx.rowEntries(key)).map((e) => e.outerId)).toEqual([put.outerId, del.outerId]);
      expect((await tx.rowEntries(key, 'del')).map((e) => e.outerId)).toEqual([del.outerId]);
    });
  });
});

describe('SQLite store on disk', () => {
  it('gives parked, withheld and rejected records of an earlier schema their reason column, counted as before', async () => {
    const { mkdtempSync, rmSync } = await import('node:fs');
    const { tmpdir } = await import('node:os');
    const { join } = await import('node:path');
    const Database = (await import('better-sqlite3')).default;
    const { encodeCbor } = await import('../../src/core/cbor.js');
    const dir = mkdtempSync(join(tmpdir(), 'sov-sqlite-reasons-'));
    try {
      const path = join(dir, 'replica.sqlite');
      new SqliteReplicaStore(path).close();
      const raw = new Database(path);
      raw.exec(
        'DROP TABLE parked; CREATE TABLE parked (outer_id TEXT PRIMARY KEY, parked_at INTEGER NOT NULL, record BLOB NOT NULL);' +
          'DROP TABLE withheld; CREATE TABLE withheld (outer_id TEXT PRIMARY KEY, at INTEGER NOT NULL, record BLOB NOT NULL);' +
          'DROP TABLE rejected; CREATE TABLE rejected (outer_id TEXT PRIMARY KEY, at INTEGER NOT NULL, record BLOB NOT NULL);',
      );
      const old = parkedEnvelope('ChainGap', 1);
      raw.prepare('INSERT INTO parked VALUES (?, ?, ?)').run(old.outerId, old.parkedAt, encodeCbor(old));
      const refused = rejection('SignatureInvalid', 3);
      raw.prepare('INSERT INTO rejected VALUES (?, ?, ?)').run(refused.outerId, refused.at, encodeCbor(refused));
      raw.close();
      const store = new SqliteReplicaStore(path);
      expect(await store.reasonCounts()).toEqual({
        parked: { ChainGap: 1 },
        withheld: {},
        rejected: { SignatureInvalid: 1 },
      });
      expect(plain(await store.parked(10))).toEqual(plain([old]));
      store.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('writes log records, rows and the clock byte for byte as the earlier encoder did, the body from its signed bytes', async () => {
    const { mkdtempSync, rmSync } = await import('node:fs');
    const { tmpdir } = await import('node:os');
    const { join } = await import('node:path');
    const Database = (await import('better-sqlite3')).default;
    const { encodeCbor } = await import('../../src/core/cbor.js');
    // The store's encoding before sqlite-pack.ts.
    const strip = (value: unknown): unknown => {
      if (Array.isArray(value)) return value.map(strip);
      if (value === null || typeof value !== 'object' || value instanceof Uint8Array) return value;
      const out: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(value)) if (v !== undefined) out[k] = strip(v);
      return out;
    };
    const earlier = (value: unknown): string => toHex(encodeCbor(strip(value)));
    const dir = mkdtempSync(join(tmpdir(), 'sov-sqlite-bytes-'));
    try {
      const path = join(dir, 'replica.sqlite');
      const store = new SqliteReplicaStore(path);
      // Optional fields present as undefined, as a caller may leave them: not written, as before.
      const put = Object.assign(entry(opened('device_profiles', 'r', 'put')), { lane: undefined });
      const bare = opaque();
      const state = Object.assign(row('device_profiles', 'r', 'v', 3), { deleted: undefined });
      await store.transact(async (tx) => {
        await tx.append(put, encodeCbor(put.body));
        await tx.append(bare);
        await tx.putRow(state);
        await tx.setHlc({ ms: 7, counter: 2 });
      });
      store.close();
      const raw = new Database(path, { readonly: true });
      const records = raw.prepare('SELECT record FROM log ORDER BY pos').all() as { record: Uint8Array }[];
      expect(records.map((r) => toHex(r.record))).toEqual([earlier(put), earlier(bare)]);
      const stored = raw.prepare('SELECT state FROM rows').get() as { state: Uint8Array };
      expect(toHex(stored.state)).toBe(earlier(state));
      const clock = raw.prepare("SELECT value FROM meta WHERE key = 'hlc'").get() as { value: Uint8Array };
      expect(toHex(clock.value)).toBe(earlier({ ms: 7, counter: 2 }));
      raw.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('keeps its WAL bounded under sustained writes: checkpoints run, and the file is reused', async () => {
    const { mkdtempSync, rmSync, statSync } = await import('node:fs');
    const { tmpdir } = await import('node:os');
    const { join } = await import('node:path');
    const dir = mkdtempSync(join(tmpdir(), 'sov-sqlite-wal-'));
    try {
      const path = join(dir, 'replica.sqlite');
      const store = new SqliteReplicaStore(path);
      // 96 MiB of log records in 1 MiB transactions; the checkpoint threshold is ~40 MiB of pages.
      const sealed = new Uint8Array(16 * 1024).fill(5);
      let largest = 0;
      for (let t = 0; t < 96; t++) {
        await store.transact(async (tx) => {
          for (let i = 0; i < 64; i++) await tx.append(entry({ sealed }));
        });
        // Reads in between, on the reader's cached statements: none may keep a snapshot open past its answer.
        expect((await store.entriesAfter(t * 64, 1)).length).toBe(1);
        expect(await store.lastPos()).toBe((t + 1) * 64);
        expect(await store.getMeta('absent')).toBeUndefined();
        largest = Math.max(largest, statSync(`${path}-wal`).size);
      }
      expect(await store.lastPos()).toBe(96 * 64);
      expect(largest).toBeGreaterThan(8 * 1024 * 1024);
      expect(largest).toBeLessThan(48 * 1024 * 1024);
      store.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('keeps what committed across a reopen, and nothing of a transaction that threw', async () => {
    const { mkdtempSync, rmSync } = await import('node:fs');
    const { tmpdir } = await import('node:os');
    const { join } = await import('node:path');
    const dir = mkdtempSync(join(tmpdir(), 'sov-sqlite-store-'));
    try {
      const path = join(dir, 'replica.sqlite');
      const first = new SqliteReplicaStore(path);
      const kept = entry({ seq: 1 });
      await first.transact(async (tx) => {
        await tx.append(kept);
        await tx.setHlc({ ms: 5, counter: 1 });
      });
      await expect(
        first.transact(async (tx) => {
          await tx.append(entry({ seq: 2 }));
          throw new Error('cut short');
        }),
      ).rejects.toThrow('cut short');
      await first.setMeta('mesh', { status: 'member', anchors: ['a'], note: undefined });
      // A read from inside a transaction's callback neither waits for it nor sees its writes.
      const seen = await first.transact(async (tx) => {
        await tx.append(entry({ seq: 3 }));
        return first.lastPos();
      });
      expect(seen).toBe(1);
      expect(await first.lastPos()).toBe(2);
      first.close();

      const again = new SqliteReplicaStore(path);
      expect((await again.entriesAfter(0, 10)).map((e) => e.pos)).toEqual([1, 2]);
      expect(plain((await again.entriesAfter(0, 1))[0])).toEqual(plain({ ...kept, pos: 1 }));
      expect(await again.transact((tx) => tx.getHlc())).toEqual({ ms: 5, counter: 1 });
      expect(await again.getMeta('mesh')).toEqual({ status: 'member', anchors: ['a'] });
      again.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
