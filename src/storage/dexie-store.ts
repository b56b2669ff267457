/**
 * IndexedDB (Dexie 4) adapter of the replica store, one database per machine
 * and origin. Every `transact` is one readwrite IndexedDB transaction over all
 * replica tables, so an admitted batch, its chain heads, clock and rows commit
 * together or not at all; the transaction itself speaks IndexedDB natively
 * (dexie-tx.ts). Callbacks must await only the transaction's own calls inside it
 * (IndexedDB auto-commits on any other await), which the core guarantees.
 * Real IndexedDB is stricter than fake-indexeddb here: the browser tests are
 * what prove this adapter.
 */
import { Dexie, type Table } from 'dexie';
import { STRICT } from './durability.js';
import type { EventBody, EventOp } from '../core/event.js';
import { isAlive, type RowState } from '../core/merge.js';
import type { Awaitable } from '../core/steps.js';
import { PARK_REASONS, refusalOf, rowSortKey, WITHHELD_REASONS } from '../core/store.js';
import type {
  LogEntry,
  SealedEntry,
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
import {
  plain,
  REPLICA_STORES,
  replicaTx,
  rowCountsKey,
  type CursorRecord,
  type HeadRecord,
  type MetaRecord,
  type RowCounts,
  type StoredRow,
} from './dexie-tx.js';

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
    super(name, STRICT);
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
    // v8: two indexes fewer to write per event: a row's entries are read through [rowKey+op]
    // and a table's rows through [table+live+sortKey] (both ranges over their first part).
    this.version(8).stores({
      log: '++pos, &outerId, eventId, [signer+seq], [rowKey+op]',
      rows: '[table+row], [table+live+sortKey]',
    });
    // v9: entries by lane, for sweeps. Public entries have no lane and are not in the index at all.
    this.version(9).stores({ log: '++pos, &outerId, eventId, [signer+seq], [rowKey+op], [lane+pos]' });
    // v10: no index of event ids: only a duplicate or a fork asks for one (ReplicaTx.hasEvent),
    // found through [signer+seq]; every event wrote one more index entry for it.
    this.version(10).stores({ log: '++pos, &outerId, [signer+seq], [rowKey+op], [lane+pos]' });
  }
}

export class DexieReplicaStore implements ReplicaStore {
  readonly db: NodeDatabase;

  constructor(db: NodeDatabase) {
    this.db = db;
  }

  /**
   * One read-write IndexedDB transaction over the replica's stores, opened natively
   * (dexie-tx.ts says why); resolves once it has committed. A callback that throws
   * rolls everything it did back.
   */
  async transact<T>(fn: (tx: ReplicaTx) => Awaitable<T>): Promise<T> {
    if (!this.db.isOpen()) await this.db.open();
    const trans = this.db.backendDB().transaction([...REPLICA_STORES], 'readwrite', { durability: 'strict' });
    const finished = new Promise<void>((resolve, reject) => {
      trans.oncomplete = () => resolve();
      trans.onabort = () => reject(trans.error ?? new Error('dexie-store: the transaction was aborted'));
    });
    finished.catch(() => undefined);
    const tx = replicaTx(trans);
    try {
      const result = await fn(tx);
      await tx.flush();
      trans.commit();
      await finished;
      return result;
    } catch (error) {
      try {
        trans.abort();
      } catch {
        // It had finished already: aborted by the failure being thrown.
      }
      // A request of an aborted transaction fails with a bare AbortError; why it aborted (a
      // full disk, a quota) is the transaction's error, which is what the caller must hear.
      throw transactionError(trans) ?? error;
    }
  }

  entriesAfter(after: number, limit: number): Promise<LogEntry[]> {
    return this.db.log.where('pos').above(after).limit(limit).toArray();
  }

  /** IndexedDB hands back whole records: pages of the range, `except`'s entries dropped here. */
  async sealedAfter(after: number, through: number, limit: number, except?: string): Promise<SealedEntry[]> {
    const found: SealedEntry[] = [];
    for (let next = after; next < through && found.length < limit;) {
      const page = await this.db.log.where('pos').between(next, through, false, true).limit(limit).toArray();
      if (page.length === 0) break;
      for (const entry of page) {
        if (found.length === limit) break;
        if (except === undefined || entry.signer !== except) found.push(entry);
      }
      next = page.at(-1)!.pos;
    }
    return found;
  }

  laneAfter(lane: 'trusted' | 'local', after: number, through: number, limit: number): Promise<SealedEntry[]> {
    if (through <= after) return Promise.resolve([]);
    return this.db.log.where('[lane+pos]').between([lane, after], [lane, through], false, true).limit(limit).toArray();
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
    const rows = await this.db.rows
      .where('[table+live+sortKey]')
      .between([table], [table, []]) // [table] sorts before every [table, …], [table, []] after
      .toArray();
    return rows.map((r) => plain(r));
  }

  async row(table: string, row: string): Promise<RowState | undefined> {
    return plain(await this.db.rows.get([table, row]));
  }

  async rowWindow(table: string, offset: number, limit: number): Promise<RowWindow> {
    const { db } = this;
    const range = (live: 0 | 1) =>
      db.rows.where('[table+live+sortKey]').between([table, live, Dexie.minKey], [table, live, Dexie.maxKey]);
    // The counts are kept by every apply once counted (dexie-tx.ts `rowCountsKey`); read-write,
    // so counting them the first time cannot race an apply.
    return db.transaction('rw', [db.rows, db.meta], async () => {
      const page = range(1).offset(offset).limit(limit).toArray();
      let counts = (await db.meta.get(rowCountsKey(table)))?.value as RowCounts | undefined;
      if (!counts) {
        const [alive, deleted] = await Promise.all([range(1).count(), range(0).count()]);
        counts = { alive, deleted };
        await db.meta.put({ key: rowCountsKey(table), value: counts });
      }
      return { rows: (await page).map((r) => plain(r)), alive: counts.alive, deleted: counts.deleted };
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

/** Why `trans` aborted on its own (null after an explicit abort, or while it runs). */
function transactionError(trans: IDBTransaction): DOMException | null {
  try {
    return trans.error;
  } catch {
    return null; // Engines that predate the current spec throw while it is active.
  }
}
