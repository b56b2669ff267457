/**
 * In-memory `ReplicaStore` for tests, benchmarks and short-lived headless use.
 * Transactions run one at a time and keep an undo log, so a callback that
 * throws leaves the store exactly as it was, like the durable adapters.
 *
 * A replica holds millions of entries, so the log is kept in columns
 * (memory-log.ts): no object per entry. Every entry of a row shares one slot
 * holding the row's state and its per-op positions.
 */
import type { EventOp } from '../core/event.js';
import type { Hlc } from '../core/hlc.js';
import type { RowState } from '../core/merge.js';
import type { Awaitable } from '../core/steps.js';
import {
  MAX_REJECTION_RECORDS,
  refusalOf,
  rowKeyOf,
  spellsRowKey,
  type Refusal,
  type RefusalKind,
  type ChainHead,
  type LogEntry,
  type SealedEntry,
  type NewLogEntry,
  type ParkedEnvelope,
  type RejectionRecord,
  type ReasonCounts,
  type ReplicaStore,
  type ReplicaTx,
  type Resurrection,
  type StampedEntry,
  type WithheldRecord,
} from '../core/store.js';
import { CompactLog } from './memory-log.js';

/**
 * One row: its materialised state and the newest log position of its entries,
 * of any op and per op; older ones are linked from there through the log's
 * link columns (so a put finds its row's deletes without scanning its edits,
 * and an append touches no per-row array). Slots are never removed (an empty
 * one changes no value), so rollback leaves them.
 */
type RowSlot = {
  /** Index in `State.slotList`, kept in the log's slot column. */
  readonly index: number;
  /** `rowKeyOf(table, row)`, shared by every entry of the row. */
  readonly key: string;
  state: RowState | undefined;
  /** Newest position of any op, and of each op; 0 when none. */
  all: number;
  put: number;
  del: number;
  remove: number;
};

type State = {
  readonly log: CompactLog;
  /** Row key → slot, and table → row → the same slot (a lookup by table and row builds no key). */
  readonly slots: Map<string, RowSlot>;
  readonly slotsByTable: Map<string, Map<string, RowSlot>>;
  readonly slotList: RowSlot[];
  readonly bySigner: Map<string, number[]>;
  readonly heads: Map<string, ChainHead>;
  readonly parked: Map<string, ParkedEnvelope>;
  readonly rejected: Map<string, RejectionRecord>;
  readonly resurrections: Map<string, Resurrection>;
  readonly withheld: Map<string, WithheldRecord>;
  readonly watermarks: Map<string, number>;
  hlc: Hlc | undefined;
  /**
   * The slot looked up last, by the names it was asked for: one event asks for
   * its row four times (append, getRow, putRow, rowStamps), with the same
   * string objects, which compare by identity before content.
   */
  readonly last: { table: string; row: string; key: string; slot: RowSlot | undefined };
};

function newState(): State {
  return {
    log: new CompactLog(),
    slots: new Map(),
    slotsByTable: new Map(),
    slotList: [],
    bySigner: new Map(),
    heads: new Map(),
    parked: new Map(),
    rejected: new Map(),
    resurrections: new Map(),
    withheld: new Map(),
    watermarks: new Map(),
    hlc: undefined,
    last: { table: '', row: '', key: '', slot: undefined },
  };
}

function splitRowKey(rowKey: string): [string, string] {
  const at = rowKey.indexOf('\u0000');
  return [rowKey.slice(0, at), rowKey.slice(at + 1)];
}

function slotAt(s: State, table: string, row: string, rowKey?: string): RowSlot {
  const last = s.last;
  if (last.slot && row === last.row && table === last.table) return last.slot;
  const slot = newOrFoundSlot(s, table, row, rowKey);
  // The caller's own key string when it names this slot (compared once here, then by identity).
  last.table = table;
  last.row = row;
  last.key = rowKey !== undefined && rowKey === slot.key ? rowKey : slot.key;
  last.slot = slot;
  return slot;
}

function newOrFoundSlot(s: State, table: string, row: string, rowKey?: string): RowSlot {
  let rows = s.slotsByTable.get(table);
  if (!rows) s.slotsByTable.set(table, (rows = new Map<string, RowSlot>()));
  let slot = rows.get(row);
  if (!slot) {
    const key = rowKey ?? rowKeyOf(table, row);
    slot = { index: s.slotList.length, key, state: undefined, all: 0, put: 0, del: 0, remove: 0 };
    s.slotList.push(slot);
    rows.set(row, slot);
    s.slots.set(key, slot);
  }
  return slot;
}

function findSlot(s: State, table: string, row: string): RowSlot | undefined {
  const last = s.last;
  if (last.slot && row === last.row && table === last.table) return last.slot;
  return s.slotsByTable.get(table)?.get(row);
}

function findSlotOfKey(s: State, rowKey: string): RowSlot | undefined {
  const last = s.last;
  if (last.slot && rowKey === last.key) return last.slot;
  return s.slots.get(rowKey);
}

function slotOfKey(s: State, rowKey: string): RowSlot {
  const slot = findSlotOfKey(s, rowKey);
  if (slot) return slot;
  const [table, row] = splitRowKey(rowKey);
  return slotAt(s, table, row, rowKey);
}

/**
 * The row slot an entry belongs to, if it names a row: found by its row key
 * alone (one lookup, whose stored key is the slot's own), then remembered by
 * the body's table and row when they spell that key, for the reads that follow.
 */
function slotOfEntry(s: State, entry: NewLogEntry): RowSlot | undefined {
  const rowKey = entry.rowKey;
  if (rowKey === undefined) return undefined;
  const slot = slotOfKey(s, rowKey);
  const body = entry.body;
  if (body && spellsRowKey(rowKey, body.table, body.row)) {
    const last = s.last;
    last.table = body.table;
    last.row = body.row;
    last.key = rowKey;
    last.slot = slot;
  }
  return slot;
}

/** Writes that remember how to undo themselves. */
class Undoable {
  readonly steps: (() => void)[] = [];

  set<K, V>(map: Map<K, V>, key: K, value: V): void {
    this.#remember(map, key);
    map.set(key, value);
  }

  delete<K, V>(map: Map<K, V>, key: K): void {
    this.#remember(map, key);
    map.delete(key);
  }

  #remember<K, V>(map: Map<K, V>, key: K): void {
    const had = map.has(key);
    const old = map.get(key);
    this.steps.push(() => (had ? map.set(key, old as V) : map.delete(key)));
  }

  rollback(): void {
    for (const step of this.steps.reverse()) step();
  }
}

/** Appends in place (copying would make a long index quadratic); undo pops it again. */
function index(positions: number[], pos: number, undo: Undoable): void {
  positions.push(pos);
  undo.steps.push(() => positions.pop());
}

/** Like `index`, for a position that may be older than the newest indexed (a filled entry). */
function indexInOrder(positions: number[], pos: number, undo: Undoable): void {
  const at = positions.findIndex((p) => p > pos);
  const i = at < 0 ? positions.length : at;
  positions.splice(i, 0, pos);
  undo.steps.push(() => positions.splice(i, 1));
}

function indexSigner(s: State, signer: string | undefined, pos: number, undo: Undoable, place: typeof index): void {
  if (signer === undefined) return;
  const positions = s.bySigner.get(signer);
  if (positions) place(positions, pos, undo);
  else undo.set(s.bySigner, signer, [pos]);
}

/**
 * Links the newest entry `pos` into its row's chains (of any op, and of its
 * op); returns how to undo that.
 */
function linkNewest(log: CompactLog, slot: RowSlot, op: EventOp | undefined, pos: number): () => void {
  const all = slot.all;
  const mine = op === undefined ? 0 : slot[op];
  log.setLinks(pos, all, mine);
  slot.all = pos;
  if (op !== undefined) slot[op] = pos;
  return () => {
    slot.all = all;
    if (op !== undefined) slot[op] = mine;
  };
}

/** Links a filled entry, which may be older than the newest of its row, in log order. */
function linkInOrder(log: CompactLog, slot: RowSlot, op: EventOp | undefined, pos: number, undo: Undoable): void {
  const chain = (head: number, prev: (p: number) => number, setPrev: (p: number, v: number) => void): number => {
    if (head < pos) {
      setPrev(pos, head);
      return pos;
    }
    let next = head;
    while (prev(next) > pos) next = prev(next);
    const old = prev(next);
    setPrev(pos, old);
    setPrev(next, pos);
    undo.steps.push(() => setPrev(next, old));
    return head;
  };
  const all = slot.all;
  slot.all = chain(
    all,
    (p) => log.prevInRow(p),
    (p, v) => log.setPrevInRow(p, v),
  );
  undo.steps.push(() => (slot.all = all));
  if (op === undefined) return;
  const mine = slot[op];
  slot[op] = chain(
    mine,
    (p) => log.prevOfOp(p),
    (p, v) => log.setPrevOfOp(p, v),
  );
  undo.steps.push(() => (slot[op] = mine));
}

/** Positions of a chain from its newest, in log order. */
function chainFrom(head: number, prev: (p: number) => number): number[] {
  const positions: number[] = [];
  for (let p = head; p !== 0; p = prev(p)) positions.push(p);
  return positions.reverse();
}

function setState(slot: RowSlot, state: RowState | undefined, undo: Undoable): void {
  const old = slot.state;
  slot.state = state;
  undo.steps.push(() => (slot.state = old));
}

/** Every answer is immediate (steps.ts): the apply path runs without suspending. */
function txOver(s: State, undo: Undoable): ReplicaTx {
  const rowKey = (slot: number): string => s.slotList[slot]!.key;
  const entries = (positions: readonly number[] | undefined): LogEntry[] =>
    (positions ?? []).map((pos) => s.log.entryAt(pos, rowKey));
  return {
    getHlc: () => s.hlc,
    setHlc: (hlc) => {
      const old = s.hlc;
      undo.steps.push(() => (s.hlc = old));
      s.hlc = hlc;
    },
    head: (signer) => s.heads.get(signer),
    setHead: (signer, head) => undo.set(s.heads, signer, head),
    hasOuterId: (id) => s.log.posOfOuterId(id) !== 0,
    envelopeState: (outerId) => ({
      logged: s.log.posOfOuterId(outerId) !== 0,
      rejected: s.rejected.has(outerId),
      withheld: s.withheld.get(outerId),
    }),
    // An event id is the hash of a body that names its signer and seq: the id alone decides.
    hasEvent: (_signer, _seq, id) => s.log.hasEventId(id),
    append: (entry, bodyBytes) => {
      const slot = slotOfEntry(s, entry);
      const pos = s.log.append(entry, slot?.index ?? -1, bodyBytes);
      // One undo step for the whole append: unlink from the row, unindex from the signer, drop.
      const unlink = slot ? linkNewest(s.log, slot, entry.op, pos) : undefined;
      const bySigner = entry.signer === undefined ? undefined : s.bySigner.get(entry.signer);
      if (bySigner) bySigner.push(pos);
      else indexSigner(s, entry.signer, pos, undo, index);
      undo.steps.push(() => {
        if (bySigner) bySigner.pop();
        unlink?.();
        s.log.pop();
      });
      return pos;
    },
    opaqueAfter: (after, limit) => {
      const found: LogEntry[] = [];
      for (let pos = after + 1; pos <= s.log.length && found.length < limit; pos++) {
        if (!s.log.hasEvent(pos)) found.push(s.log.entryAt(pos, rowKey));
      }
      return found;
    },
    fill: (pos, entry, bodyBytes) => {
      if (pos < 1 || pos > s.log.length || s.log.hasEvent(pos) || s.log.outerIdAt(pos) !== entry.outerId) {
        throw new Error('memory-store: fill names no opaque entry of that outer id');
      }
      const slot = slotOfEntry(s, entry);
      const old = s.log.snapshot(pos);
      s.log.fill(pos, entry, slot?.index ?? -1, bodyBytes);
      undo.steps.push(() => s.log.restore(old));
      if (slot) linkInOrder(s.log, slot, entry.op, pos, undo);
      indexSigner(s, entry.signer, pos, undo, indexInOrder);
    },
    rowEntries: (rowKey, op?: EventOp) => {
      const slot = findSlotOfKey(s, rowKey);
      const head = slot === undefined ? 0 : op === undefined ? slot.all : slot[op];
      if (head === 0) return [];
      const prev = op === undefined ? (p: number) => s.log.prevInRow(p) : (p: number) => s.log.prevOfOp(p);
      return entries(chainFrom(head, prev));
    },
    rowStamps: (rowKey, op) => {
      const head = findSlotOfKey(s, rowKey)?.[op] ?? 0;
      if (head === 0) return [];
      const found: StampedEntry[] = [];
      for (const pos of chainFrom(head, (p) => s.log.prevOfOp(p))) {
        const stamped = s.log.stampedAt(pos);
        if (stamped) found.push(stamped);
      }
      return found;
    },
    signerEntriesAbove: (signer, seq) => entries(s.bySigner.get(signer)?.filter((pos) => s.log.seqAt(pos) > seq)),
    setRevoked: (pos, revoked) => {
      const old = s.log.revokedAt(pos);
      s.log.setRevoked(pos, revoked);
      undo.steps.push(() => s.log.setRevoked(pos, old));
    },
    getRow: (table, row) => findSlot(s, table, row)?.state,
    putRow: (state) => setState(slotAt(s, state.table, state.row), state, undo),
    deleteRow: (table, row) => {
      const slot = findSlot(s, table, row);
      if (slot?.state) setState(slot, undefined, undo);
    },
    park: (envelope) => undo.set(s.parked, envelope.outerId, envelope),
    unpark: (outerId) => undo.delete(s.parked, outerId),
    isParked: (outerId) => s.parked.has(outerId),
    parkedAll: () => [...s.parked.values()],
    parkedCount: () => s.parked.size,
    recordRejection: (record) => {
      undo.set(s.rejected, record.outerId, record);
      for (const oldest of s.rejected.keys()) {
        if (s.rejected.size <= MAX_REJECTION_RECORDS) break;
        undo.delete(s.rejected, oldest);
      }
    },
    isRejected: (outerId) => s.rejected.has(outerId),
    rejectionReason: (outerId) => s.rejected.get(outerId)?.reason,
    withhold: (record) => undo.set(s.withheld, record.outerId, record),
    withheldRecord: (outerId) => s.withheld.get(outerId),
    release: (outerId) => undo.delete(s.withheld, outerId),
    addResurrection: (r) => undo.set(s.resurrections, r.key, r),
    hasResurrection: (key) => s.resurrections.has(key),
    dropResurrectionsOf: (eventId) => {
      for (const r of [...s.resurrections.values()]) {
        if (r.deleteId === eventId || r.editId === eventId) undo.delete(s.resurrections, r.key);
      }
    },
    setWatermark: (peer, upto) => {
      if (upto > (s.watermarks.get(peer) ?? 0)) undo.set(s.watermarks, peer, upto);
    },
  };
}

export class MemoryReplicaStore implements ReplicaStore {
  readonly #state: State = newState();
  readonly #cursors = new Map<string, number>();
  #queue: Promise<unknown> = Promise.resolve();

  transact<T>(fn: (tx: ReplicaTx) => Awaitable<T>): Promise<T> {
    const run = async (): Promise<T> => {
      const undo = new Undoable();
      try {
        return await fn(txOver(this.#state, undo));
      } catch (e) {
        undo.rollback();
        throw e;
      }
    };
    const result = this.#queue.then(run, run);
    this.#queue = result.catch(() => undefined);
    return result;
  }

  async entriesAfter(after: number, limit: number): Promise<LogEntry[]> {
    const log = this.#state.log;
    const found: LogEntry[] = [];
    for (let pos = Math.max(after, 0) + 1; pos <= Math.min(log.length, after + limit); pos++) {
      found.push(log.entryAt(pos, this.#rowKey));
    }
    return found;
  }

  readonly #rowKey = (slot: number): string => this.#state.slotList[slot]!.key;

  /** An entry here decodes its body only when asked. */
  async sealedAfter(after: number, through: number, limit: number, except?: string): Promise<SealedEntry[]> {
    const log = this.#state.log;
    const found: SealedEntry[] = [];
    for (let pos = Math.max(after, 0) + 1; pos <= Math.min(log.length, through) && found.length < limit; pos++) {
      const entry = log.entryAt(pos, this.#rowKey);
      if (except === undefined || entry.signer !== except) found.push(entry);
    }
    return found;
  }

  async laneAfter(lane: 'trusted' | 'local', after: number, through: number, limit: number): Promise<LogEntry[]> {
    const log = this.#state.log;
    const found: LogEntry[] = [];
    for (let pos = Math.max(after, 0) + 1; pos <= Math.min(log.length, through) && found.length < limit; pos++) {
      const entry = log.entryAt(pos, this.#rowKey);
      if (entry.lane === lane) found.push(entry);
    }
    return found;
  }

  async lastPos(): Promise<number> {
    return this.#state.log.length;
  }

  async cursor(peer: string): Promise<number> {
    return this.#cursors.get(peer) ?? 0;
  }

  async advanceCursor(peer: string, pos: number): Promise<void> {
    if (pos > (this.#cursors.get(peer) ?? 0)) this.#cursors.set(peer, pos);
  }

  async entriesByOuterId(outerIds: readonly string[]): Promise<LogEntry[]> {
    const log = this.#state.log;
    const positions = [...new Set(outerIds.map((id) => log.posOfOuterId(id)).filter((pos) => pos !== 0))];
    return positions.sort((a, b) => a - b).map((pos) => log.entryAt(pos, this.#rowKey));
  }

  async withheld(limit: number): Promise<WithheldRecord[]> {
    return [...this.#state.withheld.values()].sort((a, b) => a.at - b.at).slice(0, limit);
  }

  async watermark(peer: string): Promise<number> {
    return this.#state.watermarks.get(peer) ?? 0;
  }

  async rows(table: string): Promise<RowState[]> {
    const slots = this.#state.slotsByTable.get(table);
    return slots ? [...slots.values()].flatMap((slot) => (slot.state ? [slot.state] : [])) : [];
  }

  async row(table: string, row: string): Promise<RowState | undefined> {
    return findSlot(this.#state, table, row)?.state;
  }

  async parked(limit: number): Promise<ParkedEnvelope[]> {
    return [...this.#state.parked.values()].slice(0, limit);
  }

  async parkedCount(): Promise<number> {
    return this.#state.parked.size;
  }

  async reasonCounts(): Promise<ReasonCounts> {
    const count = (records: Iterable<{ readonly reason: string }>) => {
      const counts: Record<string, number> = {};
      for (const r of records) counts[r.reason] = (counts[r.reason] ?? 0) + 1;
      return counts;
    };
    return {
      parked: count(this.#state.parked.values()),
      withheld: count(this.#state.withheld.values()),
      rejected: count(this.#state.rejected.values()),
    };
  }

  async refusals(kind: RefusalKind, offset: number, limit: number): Promise<Refusal[]> {
    const records: (ParkedEnvelope | WithheldRecord | RejectionRecord)[] =
      kind === 'parked'
        ? [...this.#state.parked.values()]
        : kind === 'withheld'
          ? [...this.#state.withheld.values()]
          : [...this.#state.rejected.values()];
    const listed = records.map(refusalOf).sort((a, b) => b.at - a.at);
    return listed.slice(offset, offset + limit);
  }

  async rejections(limit: number): Promise<RejectionRecord[]> {
    return [...this.#state.rejected.values()].slice(-limit);
  }

  async resurrections(limit: number): Promise<Resurrection[]> {
    return [...this.#state.resurrections.values()].slice(-limit);
  }
}
