/**
 * In-memory `ReplicaStore` for tests, benchmarks and short-lived headless use.
 * Transactions run one at a time and keep an undo log, so a callback that
 * throws leaves the store exactly as it was, like the durable adapters.
 *
 * A replica holds millions of entries, so what each one keeps alive is kept
 * small (the garbage collector walks all of it): sealed bytes are copied into
 * shared arena chunks instead of one buffer each, every entry of a row shares
 * one row key string and one slot holding the row's state and its per-op
 * positions, and every entry of a signer shares one copy of its id and key.
 */
import { bytesEqual } from '../core/bytes.js';
import type { EventOp } from '../core/event.js';
import type { Hlc } from '../core/hlc.js';
import type { RowState } from '../core/merge.js';
import {
  MAX_REJECTION_RECORDS,
  rowKeyOf,
  type ChainHead,
  type LogEntry,
  type NewLogEntry,
  type ParkedEnvelope,
  type RejectionRecord,
  type ReplicaStore,
  type ReplicaTx,
  type Resurrection,
  type WithheldRecord,
} from '../core/store.js';

/**
 * One row: its materialised state and the log positions of its entries, all of
 * them and per op (so a put finds its row's deletes without scanning its edits).
 * Slots are never removed (an empty one changes no value), so rollback leaves them.
 */
type RowSlot = {
  /** `rowKeyOf(table, row)`, shared by every entry of the row. */
  readonly key: string;
  state: RowState | undefined;
  readonly all: number[];
  readonly put: number[];
  readonly del: number[];
  readonly remove: number[];
};

type State = {
  log: LogEntry[];
  outerIds: Set<string>;
  eventIds: Set<string>;
  /** Row key → slot, and table → row → the same slot (a lookup by table and row builds no key). */
  slots: Map<string, RowSlot>;
  slotsByTable: Map<string, Map<string, RowSlot>>;
  bySigner: Map<string, number[]>;
  heads: Map<string, ChainHead>;
  arena: Arena;
  parked: Map<string, ParkedEnvelope>;
  rejected: Map<string, RejectionRecord>;
  resurrections: Map<string, Resurrection>;
  withheld: Map<string, WithheldRecord>;
  watermarks: Map<string, number>;
  hlc: Hlc | undefined;
  /** Shared copies of signer ids and keys (not undone on rollback: sharing changes no value). */
  signers: Map<string, SignerCopy>;
};

function newState(): State {
  return {
    log: [],
    outerIds: new Set(),
    eventIds: new Set(),
    slots: new Map(),
    slotsByTable: new Map(),
    bySigner: new Map(),
    heads: new Map(),
    arena: new Arena(),
    parked: new Map(),
    rejected: new Map(),
    resurrections: new Map(),
    withheld: new Map(),
    watermarks: new Map(),
    hlc: undefined,
    signers: new Map(),
  };
}

/**
 * Copies of small byte strings packed into shared chunks: one buffer per chunk,
 * not per entry. (Entries read back are views of a chunk: fine to read and send,
 * not to hand to a structured clone, which would copy the whole chunk.)
 */
class Arena {
  static readonly CHUNK = 1 << 20;
  #chunk = new Uint8Array(Arena.CHUNK);
  #used = 0;

  /** A copy of `bytes` (a view into a chunk, or its own buffer when large). */
  copy(bytes: Uint8Array): Uint8Array {
    if (bytes.length > Arena.CHUNK / 16) return bytes.slice();
    if (this.#used + bytes.length > Arena.CHUNK) {
      this.#chunk = new Uint8Array(Arena.CHUNK);
      this.#used = 0;
    }
    // The constructor, not subarray() (which looks up a species constructor on every call).
    const view = new Uint8Array(this.#chunk.buffer, this.#used, bytes.length);
    view.set(bytes);
    this.#used += bytes.length;
    return view;
  }
}

function splitRowKey(rowKey: string): [string, string] {
  const at = rowKey.indexOf('\u0000');
  return [rowKey.slice(0, at), rowKey.slice(at + 1)];
}

function slotAt(s: State, table: string, row: string, rowKey?: string): RowSlot {
  let rows = s.slotsByTable.get(table);
  if (!rows) s.slotsByTable.set(table, (rows = new Map<string, RowSlot>()));
  let slot = rows.get(row);
  if (!slot) {
    const key = rowKey ?? rowKeyOf(table, row);
    slot = { key, state: undefined, all: [], put: [], del: [], remove: [] };
    rows.set(row, slot);
    s.slots.set(key, slot);
  }
  return slot;
}

const findSlot = (s: State, table: string, row: string): RowSlot | undefined => s.slotsByTable.get(table)?.get(row);

function slotOfKey(s: State, rowKey: string): RowSlot {
  const slot = s.slots.get(rowKey);
  if (slot) return slot;
  const [table, row] = splitRowKey(rowKey);
  return slotAt(s, table, row, rowKey);
}

type SignerCopy = { readonly id: string; readonly key: Uint8Array };

type Mutable<T> = { -readonly [K in keyof T]: T[K] };

/**
 * The entry as kept: sealed bytes (and the body's `prev`) copied into the arena,
 * the row key and the signer's id and key bytes shared with every other entry
 * of the row and of the signer — same values, so nothing a reader sees changes.
 */
function keptEntry(s: State, pos: number, entry: NewLogEntry, slot: RowSlot | undefined): LogEntry {
  const kept: Mutable<LogEntry> = {
    pos,
    outerId: entry.outerId,
    domain: entry.domain,
    sealed: s.arena.copy(entry.sealed),
  };
  if (entry.eventId !== undefined) kept.eventId = entry.eventId;
  if (entry.signer !== undefined) kept.signer = entry.signer;
  if (entry.seq !== undefined) kept.seq = entry.seq;
  if (entry.body !== undefined) kept.body = entry.body;
  if (entry.rowKey !== undefined) kept.rowKey = slot?.key ?? entry.rowKey;
  if (entry.op !== undefined) kept.op = entry.op;
  if (entry.revoked) kept.revoked = true;
  if (entry.lane !== undefined) kept.lane = entry.lane;
  if (entry.signer === undefined || entry.body === undefined) return kept;
  let copy = s.signers.get(entry.signer);
  if (!copy) {
    copy = { id: entry.signer, key: entry.body.signer.slice() };
    s.signers.set(copy.id, copy);
  }
  kept.signer = copy.id;
  const key = bytesEqual(entry.body.signer, copy.key) ? copy.key : s.arena.copy(entry.body.signer);
  kept.body = { ...entry.body, signer: key, prev: s.arena.copy(entry.body.prev) };
  return kept;
}

/** The row slot an entry belongs to, if it names a row. */
function slotOfEntry(s: State, entry: NewLogEntry): RowSlot | undefined {
  if (entry.rowKey === undefined) return undefined;
  const body = entry.body;
  if (body) {
    const slot = slotAt(s, body.table, body.row, entry.rowKey);
    if (slot.key === entry.rowKey) return slot;
  }
  return slotOfKey(s, entry.rowKey);
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

/** Indexes an entry under its row (all and per op) and its signer. */
function indexEntry(
  s: State,
  entry: NewLogEntry,
  slot: RowSlot | undefined,
  pos: number,
  undo: Undoable,
  place: typeof index,
): void {
  if (slot) {
    place(slot.all, pos, undo);
    if (entry.op) place(slot[entry.op], pos, undo);
  }
  if (entry.signer === undefined) return;
  const positions = s.bySigner.get(entry.signer);
  if (positions) place(positions, pos, undo);
  else undo.set(s.bySigner, entry.signer, [pos]);
}

function setState(slot: RowSlot, state: RowState | undefined, undo: Undoable): void {
  const old = slot.state;
  slot.state = state;
  undo.steps.push(() => (slot.state = old));
}

/*
 * The hottest lookups answer with a settled promise instead of running an async
 * function: the same result for the caller's `await`, without the async frame.
 */
const YES = Promise.resolve(true);
const NO = Promise.resolve(false);
const NOTHING: Promise<undefined> = Promise.resolve(undefined);
const answer = (yes: boolean): Promise<boolean> => (yes ? YES : NO);
const settled = <T>(value: T | undefined): Promise<T | undefined> =>
  value === undefined ? NOTHING : Promise.resolve(value);

function txOver(s: State, undo: Undoable): ReplicaTx {
  const entries = (positions: readonly number[] | undefined): LogEntry[] =>
    (positions ?? []).map((pos) => s.log[pos - 1]!);
  return {
    getHlc: () => settled(s.hlc),
    setHlc: async (hlc) => {
      const old = s.hlc;
      undo.steps.push(() => (s.hlc = old));
      s.hlc = hlc;
    },
    head: (signer) => settled(s.heads.get(signer)),
    setHead: (signer, head) => {
      undo.set(s.heads, signer, head);
      return NOTHING;
    },
    hasOuterId: (id) => answer(s.outerIds.has(id)),
    hasEventId: (id) => answer(s.eventIds.has(id)),
    append: async (entry: NewLogEntry) => {
      const pos = s.log.length + 1;
      const slot = slotOfEntry(s, entry);
      s.log.push(keptEntry(s, pos, entry, slot));
      s.outerIds.add(entry.outerId);
      if (entry.eventId) s.eventIds.add(entry.eventId);
      undo.steps.push(() => {
        s.log.pop();
        s.outerIds.delete(entry.outerId);
        if (entry.eventId) s.eventIds.delete(entry.eventId);
      });
      indexEntry(s, entry, slot, pos, undo, index);
      return pos;
    },
    opaqueAfter: async (after, limit) =>
      s.log
        .slice(after)
        .filter((e) => e.eventId === undefined)
        .slice(0, limit),
    fill: async (pos, entry) => {
      const old = s.log[pos - 1];
      if (!old || old.eventId !== undefined || old.outerId !== entry.outerId) {
        throw new Error('memory-store: fill names no opaque entry of that outer id');
      }
      const slot = slotOfEntry(s, entry);
      s.log[pos - 1] = keptEntry(s, pos, entry, slot);
      if (entry.eventId) s.eventIds.add(entry.eventId);
      undo.steps.push(() => {
        s.log[pos - 1] = old;
        if (entry.eventId) s.eventIds.delete(entry.eventId);
      });
      indexEntry(s, entry, slot, pos, undo, indexInOrder);
    },
    rowEntries: async (rowKey, op?: EventOp) => {
      const slot = s.slots.get(rowKey);
      return entries(op === undefined ? slot?.all : slot?.[op]);
    },
    signerEntriesAbove: async (signer, seq) => entries(s.bySigner.get(signer)).filter((e) => (e.seq ?? 0) > seq),
    setRevoked: async (pos, revoked) => {
      const old = s.log[pos - 1]!;
      const rest: LogEntry = { ...old };
      delete (rest as { revoked?: true }).revoked;
      s.log[pos - 1] = revoked ? { ...rest, revoked: true } : rest;
      undo.steps.push(() => (s.log[pos - 1] = old));
    },
    getRow: (table, row) => settled(findSlot(s, table, row)?.state),
    putRow: (state) => {
      setState(slotAt(s, state.table, state.row), state, undo);
      return NOTHING;
    },
    deleteRow: async (table, row) => {
      const slot = findSlot(s, table, row);
      if (slot?.state) setState(slot, undefined, undo);
    },
    park: async (envelope) => undo.set(s.parked, envelope.outerId, envelope),
    unpark: async (outerId) => undo.delete(s.parked, outerId),
    isParked: (outerId) => answer(s.parked.has(outerId)),
    parkedAll: async () => [...s.parked.values()],
    parkedCount: async () => s.parked.size,
    recordRejection: async (record) => {
      undo.set(s.rejected, record.outerId, record);
      for (const oldest of s.rejected.keys()) {
        if (s.rejected.size <= MAX_REJECTION_RECORDS) break;
        undo.delete(s.rejected, oldest);
      }
    },
    isRejected: (outerId) => answer(s.rejected.has(outerId)),
    rejectionReason: async (outerId) => s.rejected.get(outerId)?.reason,
    withhold: async (record) => undo.set(s.withheld, record.outerId, record),
    withheldRecord: (outerId) => settled(s.withheld.get(outerId)),
    release: async (outerId) => undo.delete(s.withheld, outerId),
    addResurrection: (r) => {
      undo.set(s.resurrections, r.key, r);
      return NOTHING;
    },
    hasResurrection: async (key) => s.resurrections.has(key),
    dropResurrectionsOf: async (eventId) => {
      for (const r of [...s.resurrections.values()]) {
        if (r.deleteId === eventId || r.editId === eventId) undo.delete(s.resurrections, r.key);
      }
    },
    setWatermark: async (peer, upto) => {
      if (upto > (s.watermarks.get(peer) ?? 0)) undo.set(s.watermarks, peer, upto);
    },
  };
}

export class MemoryReplicaStore implements ReplicaStore {
  readonly #state: State = newState();
  readonly #cursors = new Map<string, number>();
  #queue: Promise<unknown> = Promise.resolve();

  transact<T>(fn: (tx: ReplicaTx) => Promise<T>): Promise<T> {
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
    return this.#state.log.slice(after, after + limit);
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
    const wanted = new Set(outerIds.filter((id) => this.#state.outerIds.has(id)));
    if (wanted.size === 0) return [];
    return this.#state.log.filter((e) => wanted.has(e.outerId));
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

  async rejections(limit: number): Promise<RejectionRecord[]> {
    return [...this.#state.rejected.values()].slice(-limit);
  }

  async resurrections(limit: number): Promise<Resurrection[]> {
    return [...this.#state.resurrections.values()].slice(-limit);
  }
}
