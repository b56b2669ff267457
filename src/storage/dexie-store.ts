/**
 * IndexedDB (Dexie 4) adapter of the replica store, one database per machine
 * and origin. Every `transact` is one readwrite IndexedDB transaction over all
 * replica tables, so an admitted batch, its chain heads, clock and rows commit
 * together or not at all. Callbacks must await only Dexie operations inside it
 * (IndexedDB auto-commits on any other await), which the core guarantees.
 * Real IndexedDB is stricter than fake-indexeddb here: the browser tests are
 * what prove this adapter.
 */
import { Dexie, type Table, type Transaction } from 'dexie';
import type { Hlc } from '../core/hlc.js';
import { isAlive, type RowState } from '../core/merge.js';
import type { EventBody, EventOp } from '../core/event.js';
import { stampedOf } from '../core/materialize.js';
import type { Awaitable } from '../core/steps.js';
import { MAX_REJECTION_RECORDS, PARK_REASONS, refusalOf, rowSortKey, WITHHELD_REASONS } from '../core/store.js';
import type {
  ChainHead,
  LogEntry,
  NewLogEntry,
  ParkedEnvelope,
  RejectionRecord,
  ReplicaStore,
  ReplicaTx,
  Resurrection,
  WithheldRecord,
  ReasonCounts,
  Refusal,
  RefusalKind,
  RowWindow,
} from '../core/store.js';

type HeadRecord = ChainHead & { readonly signer: string };
type CursorRecord = { readonly peer: string; readonly pos: number };
type MetaRecord = { readonly key: string; readonly value: unknown };
/** A row as stored: with its place in the views' order and whether it is alive (1) or not (0), indexed together. */
type StoredRow = RowState & { readonly sortKey: string; readonly live: 0 | 1 };

function stored(state: RowState): StoredRow {
  return { ...state, sortKey: rowSortKey(state), live: isAlive(state) ? 1 : 0 };
}

/** The row without the fields only the index needs. */
function plain(record: StoredRow): RowState;
function plain(record: StoredRow | undefined): RowState | undefined;
function plain(record: StoredRow | undefined): RowState | undefined {
  if (!record) return undefined;
  // eslint-disable-next-line @typescript-eslint/no-unused-vars -- the index fields are dropped
  const { sortKey, live, ...state } = record;
  return state;
}

export class NodeDatabase extends Dexie {
  log!: Table<LogEntry, number>;
  heads!: Table<HeadRecord, string>;
  rows!: Table<StoredRow, [string, string]>;
  cursors!: Table<CursorRecord, string>;
  watermarks!: Table<CursorRecord, string>;
  meta!: Table<MetaRecord, string>;
  parked!: Table<ParkedEnvelope, string>;
  rejected!: Table<RejectionRecord, string>;
  resurrections!: Table<Resurrection, string>;
  withheld!: Table<WithheldRecord, string>;

  constructor(name: string) {
    super(name);
    this.version(1).stores({
      log: '++pos, &outerId, eventId',
      heads: 'signer',
      rows: '[table+row], table',
      cursors: 'peer',
      meta: 'key',
    });
    this.version(2).stores({
      log: '++pos, &outerId, eventId, rowKey, [signer+seq]',
      watermarks: 'peer',
      parked: 'outerId, parkedAt',
      rejected: 'outerId, at',
      resurrections: 'key, deleteId, editId, at',
    });
    // v3: a row's history by op, so a put finds the row's deletes without loading every edit.
    this.version(3)
      .stores({ log: '++pos, &outerId, eventId, rowKey, [signer+seq], [rowKey+op]' })
      .upgrade((tx) =>
        tx
          .table('log')
          .toCollection()
          .modify((entry: { body?: EventBody; op?: EventOp }) => {
            if (entry.body) entry.op = entry.body.op;
          }),
      );
    // v4: envelopes withheld by privacy class, by identity only (store.ts WithheldRecord).
    this.version(4).stores({ withheld: 'outerId, at' });
    // v5: counted by reason through the index, so the Sync panel reads no records.
    this.version(5).stores({ withheld: 'outerId, at, reason', parked: 'outerId, parkedAt, reason' });
    // v6: rows in the views' order, alive ones apart, so a view's first page reads a page, not the table.
    this.version(6)
      .stores({ rows: '[table+row], table, [table+live+sortKey]' })
      .upgrade((tx) =>
        tx
          .table('rows')
          .toCollection()
          .modify((record: RowState & { sortKey?: string; live?: 0 | 1 }) => {
            record.sortKey = rowSortKey(record);
            record.live = isAlive(record) ? 1 : 0;
          }),
      );
    // v7: rejections counted by reason through the index too.
    this.version(7).stores({ rejected: 'outerId, at, reason' });
  }
}

const HLC_KEY = 'hlc';

export class DexieReplicaStore implements ReplicaStore {
  readonly db: NodeDatabase;

  constructor(db: NodeDatabase) {
    this.db = db;
  }

  transact<T>(fn: (tx: ReplicaTx) => Awaitable<T>): Promise<T> {
    const { db } = this;
    const tables = [
      db.log,
      db.heads,
      db.rows,
      db.meta,
      db.parked,
      db.rejected,
      db.resurrections,
      db.watermarks,
      db.withheld,
    ];
    return db.transaction('rw', tables, async (trans) => {
      const tx = DexieReplicaStore.#tx(trans);
      const result = await fn(tx);
      await tx.flush();
      return result;
    });
  }

  /**
   * Tables bound to the transaction object itself, not to Dexie's ambient zone:
   * the core's nested native async functions lose that zone, and an operation
   * outside it would run in a separate implicit transaction.
   */
  static #tx(trans: Transaction): ReplicaTx & { flush(): Promise<void> } {
    const db = {
      log: trans.table<LogEntry, number>('log'),
      heads: trans.table<HeadRecord, string>('heads'),
      rows: trans.table<StoredRow, [string, string]>('rows'),
      meta: trans.table<MetaRecord, string>('meta'),
      parked: trans.table<ParkedEnvelope, string>('parked'),
      rejected: trans.table<RejectionRecord, string>('rejected'),
      resurrections: trans.table<Resurrection, string>('resurrections'),
      watermarks: trans.table<CursorRecord, string>('watermarks'),
      withheld: trans.table<WithheldRecord, string>('withheld'),
    };
    // What this transaction read or wrote of the clock, chain heads and rows, kept for its
    // lifetime: a read-write transaction excludes every other writer of these stores, so a
    // batch of events reads each once instead of once per event. The clock and the chain
    // heads are written once, when the transaction's work is done (`flush`), not per event.
    let hlcSeen: { value: Hlc | undefined } | undefined;
    let hlcDirty = false;
    const headsSeen = new Map<string, ChainHead | undefined>();
    const headsDirty = new Set<string>();
    const rowsSeen = new Map<string, RowState | undefined>();
    const rowSlot = (table: string, row: string) => `${table}\u0000${row}`;
    // Envelopes and events looked up in bulk (`prefetch`), kept current by this transaction's writes.
    type Known = { logged: boolean; rejected: boolean; withheld: WithheldRecord | undefined; parked: boolean };
    const known = new Map<string, Known>();
    const eventsKnown = new Map<string, boolean>();
    const update = (outerId: string, change: Partial<Known>) => {
      const entry = known.get(outerId);
      if (entry) known.set(outerId, { ...entry, ...change });
    };
    return {
      flush: async () => {
        if (hlcDirty) await db.meta.put({ key: HLC_KEY, value: hlcSeen?.value });
        if (headsDirty.size > 0) {
          await db.heads.bulkPut([...headsDirty].map((signer) => ({ signer, ...headsSeen.get(signer)! })));
        }
      },
      prefetch: async (outerIds, eventIds) => {
        const ids = [...new Set(outerIds)].filter((id) => !known.has(id));
        const events = [...new Set(eventIds)].filter((id) => !eventsKnown.has(id));
        const [logged, rejected, withheld, parked, eventsLogged] = await Promise.all([
          ids.length > 0 ? db.log.where('outerId').anyOf(ids).keys() : [],
          ids.length > 0 ? db.rejected.where('outerId').anyOf(ids).primaryKeys() : [],
          ids.length > 0 ? db.withheld.bulkGet(ids) : [],
          ids.length > 0 ? db.parked.where('outerId').anyOf(ids).primaryKeys() : [],
          events.length > 0 ? db.log.where('eventId').anyOf(events).keys() : [],
        ]);
        const [inLog, inRejected, inParked] = [logged, rejected, parked].map((keys) => new Set(keys as string[]));
        for (const [i, id] of ids.entries()) {
          known.set(id, {
            logged: inLog!.has(id),
            rejected: inRejected!.has(id),
            withheld: withheld[i],
            parked: inParked!.has(id),
          });
        }
        const eventSet = new Set(eventsLogged as string[]);
        for (const id of events) eventsKnown.set(id, eventSet.has(id));
      },
      getHlc: async () => (hlcSeen ??= { value: (await db.meta.get(HLC_KEY))?.value as Hlc | undefined }).value,
      setHlc: (hlc) => {
        hlcSeen = { value: hlc };
        hlcDirty = true;
      },
      head: async (signer) => {
        if (headsSeen.has(signer)) return headsSeen.get(signer);
        const record = await db.heads.get(signer);
        const head = record && { seq: record.seq, eventId: record.eventId };
        headsSeen.set(signer, head);
        return head;
      },
      setHead: (signer, head) => {
        headsSeen.set(signer, { seq: head.seq, eventId: head.eventId });
        headsDirty.add(signer);
      },
      hasOuterId: async (id) => known.get(id)?.logged ?? (await db.log.where('outerId').equals(id).count()) > 0,
      envelopeState: async (outerId) => {
        const seen = known.get(outerId);
        if (seen) return { logged: seen.logged, rejected: seen.rejected, withheld: seen.withheld };
        const [logged, rejected, withheld] = await Promise.all([
          db.log.where('outerId').equals(outerId).count(),
          db.rejected.where('outerId').equals(outerId).count(),
          db.withheld.get(outerId),
        ]);
        return { logged: logged > 0, rejected: rejected > 0, withheld };
      },
      hasEventId: async (id) => eventsKnown.get(id) ?? (await db.log.where('eventId').equals(id).count()) > 0,
      append: async (entry: NewLogEntry) => {
        const pos = await db.log.add(entry as LogEntry);
        update(entry.outerId, { logged: true });
        if (entry.eventId !== undefined) eventsKnown.set(entry.eventId, true);
        return pos;
      },
      opaqueAfter: (after, limit) =>
        db.log
          .where('pos')
          .above(after)
          .filter((e) => e.eventId === undefined)
          .limit(limit)
          .toArray(),
      fill: async (pos, entry) => {
        const old = await db.log.get(pos);
        if (!old || old.eventId !== undefined || old.outerId !== entry.outerId) {
          throw new Error('dexie-store: fill names no opaque entry of that outer id');
        }
        await db.log.put({ ...entry, pos });
        if (entry.eventId !== undefined) eventsKnown.set(entry.eventId, true);
      },
      rowEntries: (rowKey, op?: EventOp) =>
        op === undefined
          ? db.log.where('rowKey').equals(rowKey).toArray()
          : db.log.where('[rowKey+op]').equals([rowKey, op]).toArray(),
      rowStamps: async (rowKey, op) => stampedOf(await db.log.where('[rowKey+op]').equals([rowKey, op]).toArray()),
      signerEntriesAbove: (signer, seq) =>
        db.log
          .where('[signer+seq]')
          .between([signer, seq + 1], [signer, Dexie.maxKey])
          .toArray(),
      setRevoked: async (pos, revoked) => {
        await db.log.update(pos, (entry: { revoked?: true }) => {
          if (revoked) entry.revoked = true;
          else delete entry.revoked;
        });
      },
      getRow: async (table, row) => {
        const slot = rowSlot(table, row);
        if (rowsSeen.has(slot)) return rowsSeen.get(slot);
        const state = plain(await db.rows.get([table, row]));
        rowsSeen.set(slot, state);
        return state;
      },
      putRow: async (state) => {
        await db.rows.put(stored(state));
        rowsSeen.set(rowSlot(state.table, state.row), state);
      },
      deleteRow: async (table, row) => {
        await db.rows.delete([table, row]);
        rowsSeen.set(rowSlot(table, row), undefined);
      },
      park: async (envelope) => {
        await db.parked.put(envelope);
        update(envelope.outerId, { parked: true });
      },
      unpark: async (outerId) => {
        await db.parked.delete(outerId);
        update(outerId, { parked: false });
      },
      isParked: async (outerId) =>
        known.get(outerId)?.parked ?? (await db.parked.where('outerId').equals(outerId).count()) > 0,
      parkedAll: () => db.parked.orderBy('parkedAt').toArray(),
      parkedCount: () => db.parked.count(),
      recordRejection: async (record) => {
        await db.rejected.put(record);
        update(record.outerId, { rejected: true });
        const excess = (await db.rejected.count()) - MAX_REJECTION_RECORDS;
        if (excess > 0) {
          const dropped = await db.rejected.orderBy('at').limit(excess).primaryKeys();
          await db.rejected.bulkDelete(dropped);
          for (const id of dropped) update(id, { rejected: false });
        }
      },
      isRejected: async (outerId) =>
        known.get(outerId)?.rejected ?? (await db.rejected.where('outerId').equals(outerId).count()) > 0,
      rejectionReason: async (outerId) => (await db.rejected.get(outerId))?.reason,
      withhold: async (record) => {
        await db.withheld.put(record);
        update(record.outerId, { withheld: record });
      },
      withheldRecord: async (outerId) => {
        const seen = known.get(outerId);
        return seen ? seen.withheld : db.withheld.get(outerId);
      },
      release: async (outerId) => {
        await db.withheld.delete(outerId);
        update(outerId, { withheld: undefined });
      },
      addResurrection: async (r) => {
        await db.resurrections.put(r);
      },
      hasResurrection: async (key) => (await db.resurrections.where('key').equals(key).count()) > 0,
      dropResurrectionsOf: async (eventId) => {
        await db.resurrections.where('deleteId').equals(eventId).delete();
        await db.resurrections.where('editId').equals(eventId).delete();
      },
      setWatermark: async (peer, upto) => {
        const current = (await db.watermarks.get(peer))?.pos ?? 0;
        if (upto > current) await db.watermarks.put({ peer, pos: upto });
      },
    };
  }

  entriesAfter(after: number, limit: number): Promise<LogEntry[]> {
    return this.db.log.where('pos').above(after).limit(limit).toArray();
  }

  /** Envelopes held without being readable here (domains this machine is not a member of), oldest first. */
  async opaque(limit: number): Promise<LogEntry[]> {
    return this.db.log
      .filter((e) => e.eventId === undefined)
      .limit(limit)
      .toArray();
  }

  async lastPos(): Promise<number> {
    return ((await this.db.log.orderBy('pos').lastKey()) as number | undefined) ?? 0;
  }

  async watermark(peer: string): Promise<number> {
    return (await this.db.watermarks.get(peer))?.pos ?? 0;
  }

  parked(limit: number): Promise<ParkedEnvelope[]> {
    return this.db.parked.orderBy('parkedAt').limit(limit).toArray();
  }

  parkedCount(): Promise<number> {
    return this.db.parked.count();
  }

  async reasonCounts(): Promise<ReasonCounts> {
    const count = async (table: Pick<Table, 'where'>, reasons: readonly string[]) => {
      const counts: Record<string, number> = {};
      for (const reason of reasons) {
        const n = await table.where('reason').equals(reason).count();
        if (n > 0) counts[reason] = n;
      }
      return counts;
    };
    // Index counts, not one transaction: the panel needs no snapshot of them all at once, and a
    // read transaction of its own would nest in a caller's, which may not span these tables.
    const rejectedReasons = (await this.db.rejected.orderBy('reason').uniqueKeys()) as string[];
    const [parked, withheld, rejected] = await Promise.all([
      count(this.db.parked, PARK_REASONS),
      count(this.db.withheld, WITHHELD_REASONS),
      count(this.db.rejected, rejectedReasons),
    ]);
    return { parked, withheld, rejected };
  }

  async refusals(kind: RefusalKind, offset: number, limit: number): Promise<Refusal[]> {
    const { db } = this;
    const newest = (table: Table, by: string) => table.orderBy(by).reverse().offset(offset).limit(limit).toArray();
    const records =
      kind === 'parked'
        ? await newest(db.parked, 'parkedAt')
        : kind === 'withheld'
          ? await newest(db.withheld, 'at')
          : await newest(db.rejected, 'at');
    return (records as (ParkedEnvelope | WithheldRecord | RejectionRecord)[]).map(refusalOf);
  }

  rejections(limit: number): Promise<RejectionRecord[]> {
    return this.db.rejected.orderBy('at').reverse().limit(limit).toArray();
  }

  resurrections(limit: number): Promise<Resurrection[]> {
    return this.db.resurrections.orderBy('at').reverse().limit(limit).toArray();
  }

  async cursor(peer: string): Promise<number> {
    return (await this.db.cursors.get(peer))?.pos ?? 0;
  }

  async advanceCursor(peer: string, pos: number): Promise<void> {
    await this.db.transaction('rw', this.db.cursors, async () => {
      const current = (await this.db.cursors.get(peer))?.pos ?? 0;
      if (pos > current) await this.db.cursors.put({ peer, pos });
    });
  }

  async entriesByOuterId(outerIds: readonly string[]): Promise<LogEntry[]> {
    const entries = await this.db.log
      .where('outerId')
      .anyOf([...outerIds])
      .toArray();
    return entries.sort((a, b) => a.pos - b.pos);
  }

  withheld(limit: number): Promise<WithheldRecord[]> {
    return this.db.withheld.orderBy('at').limit(limit).toArray();
  }

  async rows(table: string): Promise<RowState[]> {
    return (await this.db.rows.where('table').equals(table).toArray()).map((r) => plain(r));
  }

  async row(table: string, row: string): Promise<RowState | undefined> {
    return plain(await this.db.rows.get([table, row]));
  }

  async rowWindow(table: string, offset: number, limit: number): Promise<RowWindow> {
    const { db } = this;
    const range = (live: 0 | 1) =>
      db.rows.where('[table+live+sortKey]').between([table, live, Dexie.minKey], [table, live, Dexie.maxKey]);
    return db.transaction('r', db.rows, async () => {
      const [rows, alive, deleted] = await Promise.all([
        range(1).offset(offset).limit(limit).toArray(),
        range(1).count(),
        range(0).count(),
      ]);
      return { rows: rows.map((r) => plain(r)), alive, deleted };
    });
  }

  async getMeta<T>(key: string): Promise<T | undefined> {
    return (await this.db.meta.get(key))?.value as T | undefined;
  }

  async setMeta(key: string, value: unknown): Promise<void> {
    await this.db.meta.put({ key, value });
  }

  async deleteMeta(key: string): Promise<void> {
    await this.db.meta.delete(key);
  }
}
