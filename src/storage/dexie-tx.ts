/**
 * One replica transaction on IndexedDB, spoken natively on the database Dexie opened
 * (dexie-store.ts `transact` opens the IDBTransaction; Dexie keeps the schema, its
 * upgrades and the reads outside the apply path).
 *
 * Why not Dexie here: a catch-up applies thousands of events per transaction, and each
 * IndexedDB request is a round trip to the browser's storage process. Awaited one after
 * another (Dexie's API, and what the apply path's reads need), those round trips were
 * two thirds of a catch-up's time, with Dexie's promise zones and middleware (hooks,
 * observability sets for live queries nobody here subscribes to) most of the rest. So:
 * - what a batch will ask is looked up once, all requests in flight together
 *   (`prefetch`), and every later read of it is answered from what this transaction
 *   read or wrote, without a request;
 * - writes are issued and not waited for: IndexedDB runs a transaction's requests in
 *   the order they were issued, so a later read sees them, and the transaction commits
 *   only if every one of them succeeded (`transact` waits for the commit);
 * - log positions are assigned here (one past the last key, read once per
 *   transaction; the log is append-only, nothing is ever deleted from it), so an
 *   append needs no answer either.
 * A failed write aborts the transaction; any later call throws that failure, not the
 * "transaction has finished" it would otherwise meet.
 *
 * The record shapes are those Dexie's schema in dexie-store.ts declares (index names
 * included: a compound index is named like "[rowKey+op]").
 */
import type { EventOp } from '../core/event.js';
import type { Hlc } from '../core/hlc.js';
import { isAlive, type RowState } from '../core/merge.js';
import { stampedOf } from '../core/materialize.js';
import {
  MAX_REJECTION_RECORDS,
  rowKeyOf,
  rowSortKey,
  type ChainHead,
  type LogEntry,
  type NewLogEntry,
  type ParkedEnvelope,
  type RejectionRecord,
  type ReplicaTx,
  type StampedEntry,
  type WithheldRecord,
} from '../core/store.js';

export type HeadRecord = ChainHead & { readonly signer: string };
export type CursorRecord = { readonly peer: string; readonly pos: number };
export type MetaRecord = { readonly key: string; readonly value: unknown };
/** A row as stored: with its place in the views' order and whether it is alive (1) or not (0), indexed together. */
export type StoredRow = RowState & { readonly sortKey: string; readonly live: 0 | 1 };

export const HLC_KEY = 'hlc';

/** How many rows of a table are alive and how many are not, kept current by every apply. */
export type RowCounts = { readonly alive: number; readonly deleted: number };

/**
 * The meta record holding a table's `RowCounts`: counting an index range in IndexedDB
 * walks it, 100,000 rows on every page a view asks for. Absent until a view first
 * counts the table (dexie-store.ts `rowWindow`); from then on each transaction adds
 * what it changed.
 */
export const rowCountsKey = (table: string): string => `rows/${table}`;

export function stored(state: RowState): StoredRow {
  return { ...state, sortKey: rowSortKey(state), live: isAlive(state) ? 1 : 0 };
}

/** The row without the fields only the index needs. */
export function plain(record: StoredRow): RowState;
export function plain(record: StoredRow | undefined): RowState | undefined;
export function plain(record: StoredRow | undefined): RowState | undefined {
  if (!record) return undefined;
  // eslint-disable-next-line @typescript-eslint/no-unused-vars -- the index fields are dropped
  const { sortKey, live, ...state } = record;
  return state;
}

/** A refusal store is read whole, once per transaction, while it holds at most this many records. */
const SMALL_STORE = 4096;

/** The refusal stores small enough to hold in memory (dexie-tx `readRefusals`); a large one is left out. */
type Refusals = {
  readonly rejected?: Set<string>;
  readonly parked?: Set<string>;
  readonly withheld?: Map<string, WithheldRecord>;
};

/** What the replica transaction knows of one envelope. */
type Known = { logged: boolean; rejected: boolean; withheld: WithheldRecord | undefined; parked: boolean };

/** The stores one replica transaction spans. */
export const REPLICA_STORES = [
  'log',
  'heads',
  'rows',
  'meta',
  'parked',
  'rejected',
  'resurrections',
  'watermarks',
  'withheld',
] as const;

/** A request's answer as a promise; its failure aborts the transaction (not prevented). */
function ask<T>(request: IDBRequest<T>): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    request.onsuccess = () => resolve(request.result);
    request.onerror = () => reject(request.error ?? new Error('dexie-tx: an IndexedDB request failed'));
  });
}

/** Values a cursor walks, in order, while `take` says to go on (it gets each value and says whether to keep walking). */
function walk(request: IDBRequest<IDBCursorWithValue | null>, take: (value: unknown) => boolean): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    request.onsuccess = () => {
      const cursor = request.result;
      if (cursor && take(cursor.value)) cursor.continue();
      else resolve();
    };
    request.onerror = () => reject(request.error ?? new Error('dexie-tx: a cursor failed'));
  });
}

export type NativeTx = ReplicaTx & {
  /** Writes what was kept back (clock, chain heads) and throws if any write failed. */
  flush(): Promise<void>;
};

/** The replica transaction over `idb`, an open read-write transaction over `REPLICA_STORES`. */
export function replicaTx(idb: IDBTransaction): NativeTx {
  let failed: Error | undefined;
  const store = (name: string): IDBObjectStore => {
    if (failed !== undefined) throw failed;
    return idb.objectStore(name);
  };
  /** Issues a write without waiting for it; the first failure is kept and thrown by every later call. */
  const issue = (request: IDBRequest): void => {
    request.onerror = () => (failed ??= request.error ?? new Error('dexie-tx: an IndexedDB write failed'));
  };
  // What this transaction read or wrote, kept for its lifetime: a read-write transaction
  // excludes every other writer of these stores.
  let hlcSeen: { value: Hlc | undefined } | undefined;
  let hlcDirty = false;
  const headsSeen = new Map<string, ChainHead | undefined>();
  const headsDirty = new Set<string>();
  const rowsSeen = new Map<string, RowState | undefined>();
  const known = new Map<string, Known>();
  /** Event ids this transaction logged. */
  const eventsLogged = new Set<string>();
  /** Surviving deletes of a row, by row key, for the rows a batch looked up. */
  const deletesSeen = new Map<string, StampedEntry[]>();
  /** Rows this transaction made alive or not alive, by table: added to the table's `RowCounts` at `flush`. */
  const countDeltas = new Map<string, { alive: number; deleted: number }>();
  const recount = (table: string, before: RowState | undefined, after: RowState | undefined) => {
    let delta = countDeltas.get(table);
    if (!delta) countDeltas.set(table, (delta = { alive: 0, deleted: 0 }));
    if (before) delta[isAlive(before) ? 'alive' : 'deleted']--;
    if (after) delta[isAlive(after) ? 'alive' : 'deleted']++;
  };
  /** The position the next append takes; read once (`firstPos`), then counted here. */
  let nextPos: number | undefined;
  let reading: Promise<number> | undefined;
  const firstPos = (): Promise<number> => (reading ??= lastKey().then((last) => (nextPos ??= last + 1)));

  /**
   * The refusal stores whole, those small enough (nearly always: empty, or a few
   * hundred records), read once per transaction and kept current by its writes: an
   * envelope's check against them then costs no request.
   */
  let refusals: Promise<Refusals> | undefined;
  const readRefusals = async (): Promise<Refusals> => {
    const [rejected, parked, withheld] = [store('rejected'), store('parked'), store('withheld')];
    const sizes = await Promise.all([ask(rejected.count()), ask(parked.count()), ask(withheld.count())]);
    const [rejectedKeys, parkedKeys, withheldRecords] = await Promise.all([
      sizes[0] <= SMALL_STORE ? ask(rejected.getAllKeys()) : undefined,
      sizes[1] <= SMALL_STORE ? ask(parked.getAllKeys()) : undefined,
      sizes[2] <= SMALL_STORE ? ask(withheld.getAll() as IDBRequest<WithheldRecord[]>) : undefined,
    ]);
    return {
      ...(rejectedKeys && { rejected: new Set(rejectedKeys as string[]) }),
      ...(parkedKeys && { parked: new Set(parkedKeys as string[]) }),
      ...(withheldRecords && { withheld: new Map(withheldRecords.map((r) => [r.outerId, r])) }),
    };
  };
  /** Applies a write to what this transaction knows: the envelope's entry and the refusal sets. */
  const update = (outerId: string, change: Partial<Known>) => {
    const entry = known.get(outerId);
    if (entry) known.set(outerId, { ...entry, ...change });
    // After the sets are read (or at once, if they are): a later prefetch awaits the same
    // promise, so it sees every update made before it; the updates are idempotent, so a
    // write the read already saw is no harm.
    void refusals?.then((sets) => {
      if (change.rejected !== undefined) sets.rejected?.[change.rejected ? 'add' : 'delete'](outerId);
      if (change.parked !== undefined) sets.parked?.[change.parked ? 'add' : 'delete'](outerId);
      if ('withheld' in change) {
        if (change.withheld) sets.withheld?.set(outerId, change.withheld);
        else sets.withheld?.delete(outerId);
      }
    });
  };
  const lastKey = async (): Promise<number> => {
    const cursor = await ask(store('log').openKeyCursor(null, 'prev'));
    return typeof cursor?.primaryKey === 'number' ? cursor.primaryKey : 0;
  };
  const count = async (name: string, index: string | undefined, key: IDBValidKey): Promise<number> => {
    const source = index === undefined ? store(name) : store(name).index(index);
    return ask(source.count(key));
  };
  const putLogged = (entry: LogEntry, method: 'add' | 'put') => {
    issue(method === 'add' ? store('log').add(entry) : store('log').put(entry));
    update(entry.outerId, { logged: true });
    if (entry.eventId !== undefined) eventsLogged.add(entry.eventId);
    if (entry.op === 'del' && entry.rowKey !== undefined && entry.body && !entry.revoked) {
      deletesSeen.get(entry.rowKey)?.push(...stampedOf([entry]));
    }
  };

  return {
    flush: async () => {
      const changed = [...countDeltas].filter(([, d]) => d.alive !== 0 || d.deleted !== 0);
      countDeltas.clear();
      const counted = await Promise.all(
        changed.map(([table]) => ask(store('meta').get(rowCountsKey(table)) as IDBRequest<MetaRecord | undefined>)),
      );
      for (const [i, [table, d]] of changed.entries()) {
        const counts = counted[i]?.value as RowCounts | undefined;
        if (!counts) continue; // never counted: the first view to ask counts the rows as they are
        const value: RowCounts = { alive: counts.alive + d.alive, deleted: counts.deleted + d.deleted };
        issue(store('meta').put({ key: rowCountsKey(table), value }));
      }
      if (hlcDirty) issue(store('meta').put({ key: HLC_KEY, value: hlcSeen?.value }));
      for (const signer of headsDirty) issue(store('heads').put({ signer, ...headsSeen.get(signer)! }));
      headsDirty.clear();
      hlcDirty = false;
      if (failed !== undefined) throw failed;
    },

    prefetch: async ({ outerIds, rows = [] }) => {
      const ids = [...new Set(outerIds)].filter((id) => !known.has(id));
      const rowSlots = new Map<string, readonly [string, string]>();
      for (const [table, row] of rows) {
        const key = rowKeyOf(table, row);
        if (!rowsSeen.has(key)) rowSlots.set(key, [table, row]);
      }
      const refused = ids.length > 0 ? await (refusals ??= readRefusals()) : {};
      const [log, rejected, withheld, parked] = [store('log'), store('rejected'), store('withheld'), store('parked')];
      const byOuterId = log.index('outerId');
      const rowStore = store('rows');
      const [envelopes, rowsFound, next] = await Promise.all([
        Promise.all(
          ids.map((id) =>
            Promise.all([
              ask(byOuterId.count(id)),
              refused.rejected ? Number(refused.rejected.has(id)) : ask(rejected.count(id)),
              refused.withheld
                ? refused.withheld.get(id)
                : ask(withheld.get(id) as IDBRequest<WithheldRecord | undefined>),
              refused.parked ? Number(refused.parked.has(id)) : ask(parked.count(id)),
            ]),
          ),
        ),
        Promise.all([...rowSlots.values()].map((slot) => ask(rowStore.get([...slot]) as IDBRequest<StoredRow>))),
        nextPos === undefined ? firstPos() : nextPos,
      ]);
      for (const [i, id] of ids.entries()) {
        const [logged, wasRejected, held, isParked] = envelopes[i]!;
        known.set(id, { logged: logged > 0, rejected: wasRejected > 0, withheld: held, parked: isParked > 0 });
      }
      // A row with no `deleted` stamp has no surviving deletes (merge.ts); only the others are read.
      const deleted: string[] = [];
      for (const [i, key] of [...rowSlots.keys()].entries()) {
        const state = plain(rowsFound[i]);
        rowsSeen.set(key, state);
        if (state?.deleted === undefined) deletesSeen.set(key, []);
        else deleted.push(key);
      }
      const byRowAndOp = log.index('[rowKey+op]');
      const deletes = await Promise.all(
        deleted.map((key) => ask(byRowAndOp.getAll([key, 'del']) as IDBRequest<LogEntry[]>)),
      );
      for (const [i, key] of deleted.entries()) deletesSeen.set(key, stampedOf(deletes[i]!));
      nextPos ??= next;
    },

    getHlc: () => {
      if (hlcSeen) return hlcSeen.value;
      return ask(store('meta').get(HLC_KEY) as IDBRequest<MetaRecord | undefined>).then(
        (record) => (hlcSeen ??= { value: record?.value as Hlc | undefined }).value,
      );
    },
    setHlc: (hlc) => {
      hlcSeen = { value: hlc };
      hlcDirty = true;
    },
    head: (signer) => {
      if (headsSeen.has(signer)) return headsSeen.get(signer);
      return ask(store('heads').get(signer) as IDBRequest<HeadRecord | undefined>).then((record) => {
        if (!headsSeen.has(signer)) headsSeen.set(signer, record && { seq: record.seq, eventId: record.eventId });
        return headsSeen.get(signer);
      });
    },
    setHead: (signer, head) => {
      headsSeen.set(signer, { seq: head.seq, eventId: head.eventId });
      headsDirty.add(signer);
    },

    hasOuterId: (id) => known.get(id)?.logged ?? count('log', 'outerId', id).then((n) => n > 0),
    envelopeState: (outerId) => {
      const seen = known.get(outerId);
      if (seen) return { logged: seen.logged, rejected: seen.rejected, withheld: seen.withheld };
      return Promise.all([
        count('log', 'outerId', outerId),
        count('rejected', undefined, outerId),
        ask(store('withheld').get(outerId) as IDBRequest<WithheldRecord | undefined>),
      ]).then(([logged, rejected, withheld]) => ({ logged: logged > 0, rejected: rejected > 0, withheld }));
    },
    hasEvent: async (signer, seq, id) => {
      if (eventsLogged.has(id)) return true;
      const entries = (await ask(store('log').index('[signer+seq]').getAll([signer, seq]))) as LogEntry[];
      return entries.some((e) => e.eventId === id);
    },

    append: (entry: NewLogEntry) => {
      const assign = (pos: number) => {
        nextPos = pos + 1;
        putLogged({ ...entry, pos }, 'add');
        return pos;
      };
      return nextPos !== undefined ? assign(nextPos) : firstPos().then(() => assign(nextPos!));
    },
    fill: async (pos, entry) => {
      const old = await ask(store('log').get(pos) as IDBRequest<LogEntry | undefined>);
      if (!old || old.eventId !== undefined || old.outerId !== entry.outerId) {
        throw new Error('dexie-tx: fill names no opaque entry of that outer id');
      }
      putLogged({ ...entry, pos }, 'put');
    },
    opaqueAfter: async (after, limit) => {
      const found: LogEntry[] = [];
      if (limit <= 0) return found;
      await walk(store('log').openCursor(IDBKeyRange.lowerBound(after, true)), (value) => {
        const entry = value as LogEntry;
        if (entry.eventId === undefined) found.push(entry);
        return found.length < limit;
      });
      return found;
    },
    rowEntries: async (rowKey, op?: EventOp) => {
      const byRowAndOp = store('log').index('[rowKey+op]');
      if (op !== undefined) return ask(byRowAndOp.getAll([rowKey, op]) as IDBRequest<LogEntry[]>);
      // Every op of the row ([rowKey] sorts before [rowKey, any op], [rowKey, []] after), in log order.
      const all = await ask(byRowAndOp.getAll(IDBKeyRange.bound([rowKey], [rowKey, []])) as IDBRequest<LogEntry[]>);
      return all.sort((a, b) => a.pos - b.pos);
    },
    rowStamps: (rowKey, op) => {
      const seen = op === 'del' ? deletesSeen.get(rowKey) : undefined;
      if (seen) return [...seen];
      return ask(store('log').index('[rowKey+op]').getAll([rowKey, op]) as IDBRequest<LogEntry[]>).then(stampedOf);
    },
    signerEntriesAbove: (signer, seq) =>
      ask(
        store('log')
          .index('[signer+seq]')
          .getAll(IDBKeyRange.bound([signer, seq + 1], [signer, Infinity])) as IDBRequest<LogEntry[]>,
      ),
    setRevoked: async (pos, revoked) => {
      const entry = await ask(store('log').get(pos) as IDBRequest<(LogEntry & { revoked?: true }) | undefined>);
      if (!entry) return;
      const { revoked: _was, ...rest } = entry; // eslint-disable-line @typescript-eslint/no-unused-vars
      issue(store('log').put(revoked ? { ...rest, revoked: true } : rest));
      // A revocation changes which of the row's deletes survive: read them again when asked.
      if (entry.rowKey !== undefined) deletesSeen.delete(entry.rowKey);
    },

    getRow: (table, row) => {
      const key = rowKeyOf(table, row);
      if (rowsSeen.has(key)) return rowsSeen.get(key);
      return ask(store('rows').get([table, row]) as IDBRequest<StoredRow | undefined>).then((record) => {
        if (!rowsSeen.has(key)) rowsSeen.set(key, plain(record));
        return rowsSeen.get(key);
      });
    },
    putRow: (state) => {
      const key = rowKeyOf(state.table, state.row);
      const put = (before: RowState | undefined) => {
        recount(state.table, before, state);
        issue(store('rows').put(stored(state)));
        rowsSeen.set(key, state);
      };
      if (rowsSeen.has(key)) return put(rowsSeen.get(key));
      return ask(store('rows').get([state.table, state.row]) as IDBRequest<StoredRow | undefined>).then((r) =>
        put(plain(r)),
      );
    },
    deleteRow: (table, row) => {
      const key = rowKeyOf(table, row);
      const drop = (before: RowState | undefined) => {
        recount(table, before, undefined);
        issue(store('rows').delete([table, row]));
        rowsSeen.set(key, undefined);
      };
      if (rowsSeen.has(key)) return drop(rowsSeen.get(key));
      return ask(store('rows').get([table, row]) as IDBRequest<StoredRow | undefined>).then((r) => drop(plain(r)));
    },

    park: (envelope) => {
      issue(store('parked').put(envelope));
      update(envelope.outerId, { parked: true });
    },
    unpark: (outerId) => {
      issue(store('parked').delete(outerId));
      update(outerId, { parked: false });
    },
    isParked: (outerId) => known.get(outerId)?.parked ?? count('parked', undefined, outerId).then((n) => n > 0),
    parkedAll: () => ask(store('parked').index('parkedAt').getAll() as IDBRequest<ParkedEnvelope[]>),
    parkedCount: () => ask(store('parked').count()),

    recordRejection: async (record) => {
      issue(store('rejected').put(record));
      update(record.outerId, { rejected: true });
      const excess = (await ask(store('rejected').count())) - MAX_REJECTION_RECORDS;
      if (excess > 0) {
        const dropped = (await ask(store('rejected').index('at').getAllKeys(null, excess))) as string[];
        for (const id of dropped) {
          issue(store('rejected').delete(id));
          update(id, { rejected: false });
        }
      }
    },
    isRejected: (outerId) => known.get(outerId)?.rejected ?? count('rejected', undefined, outerId).then((n) => n > 0),
    rejectionReason: (outerId) =>
      ask(store('rejected').get(outerId) as IDBRequest<RejectionRecord | undefined>).then((r) => r?.reason),

    withhold: (record) => {
      issue(store('withheld').put(record));
      update(record.outerId, { withheld: record });
    },
    withheldRecord: (outerId) => {
      const seen = known.get(outerId);
      if (seen) return seen.withheld;
      return ask(store('withheld').get(outerId) as IDBRequest<WithheldRecord | undefined>);
    },
    release: (outerId) => {
      issue(store('withheld').delete(outerId));
      update(outerId, { withheld: undefined });
    },

    addResurrection: (r) => {
      issue(store('resurrections').put(r));
    },
    hasResurrection: (key) => count('resurrections', undefined, key).then((n) => n > 0),
    dropResurrectionsOf: async (eventId) => {
      const resurrections = store('resurrections');
      const keys = await Promise.all([
        ask(resurrections.index('deleteId').getAllKeys(eventId)),
        ask(resurrections.index('editId').getAllKeys(eventId)),
      ]);
      for (const key of new Set(keys.flat())) issue(store('resurrections').delete(key));
    },

    setWatermark: async (peer, upto) => {
      const current = (await ask(store('watermarks').get(peer) as IDBRequest<CursorRecord | undefined>))?.pos ?? 0;
      if (upto > current) issue(store('watermarks').put({ peer, pos: upto }));
    },
  };
}
