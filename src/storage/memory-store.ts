/**
 * In-memory `ReplicaStore` for tests, benchmarks and short-lived headless use.
 * Transactions run one at a time and keep an undo log, so a callback that
 * throws leaves the store exactly as it was, like the durable adapters.
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

type State = {
  log: LogEntry[];
  outerIds: Set<string>;
  eventIds: Set<string>;
  byRow: Map<string, number[]>;
  /** `${rowKey}\u0000${op}` → positions, so a put finds its row's deletes without scanning its edits. */
  byRowOp: Map<string, number[]>;
  bySigner: Map<string, number[]>;
  heads: Map<string, ChainHead>;
  rows: Map<string, RowState>;
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
    byRow: new Map(),
    byRowOp: new Map(),
    bySigner: new Map(),
    heads: new Map(),
    rows: new Map(),
    parked: new Map(),
    rejected: new Map(),
    resurrections: new Map(),
    withheld: new Map(),
    watermarks: new Map(),
    hlc: undefined,
    signers: new Map(),
  };
}

const rowOpKey = (rowKey: string, op: EventOp): string => `${rowKey}\u0000${op}`;

type SignerCopy = { readonly id: string; readonly key: Uint8Array };

/**
 * A few signers write millions of entries: every entry of one signer shares one
 * copy of its id and its key bytes (same values, so nothing a reader sees changes).
 */
function shareSigner(signers: Map<string, SignerCopy>, entry: NewLogEntry): Partial<NewLogEntry> {
  if (entry.signer === undefined) return {};
  let copy = signers.get(entry.signer);
  if (!copy) {
    if (!entry.body) return {};
    copy = { id: entry.signer, key: entry.body.signer };
    signers.set(copy.id, copy);
  }
  const body = entry.body;
  if (!body || body.signer === copy.key || !bytesEqual(body.signer, copy.key)) return { signer: copy.id };
  return { signer: copy.id, body: { ...body, signer: copy.key } };
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
function index(map: Map<string, number[]>, key: string, pos: number, undo: Undoable): void {
  const positions = map.get(key);
  if (!positions) return undo.set(map, key, [pos]);
  positions.push(pos);
  undo.steps.push(() => positions.pop());
}

/** Like `index`, for a position that may be older than the newest indexed (a filled entry). */
function indexInOrder(map: Map<string, number[]>, key: string, pos: number, undo: Undoable): void {
  const positions = map.get(key);
  if (!positions) return undo.set(map, key, [pos]);
  const at = positions.findIndex((p) => p > pos);
  const i = at < 0 ? positions.length : at;
  positions.splice(i, 0, pos);
  undo.steps.push(() => positions.splice(i, 1));
}

function txOver(s: State, undo: Undoable): ReplicaTx {
  const entries = (positions: readonly number[] | undefined): LogEntry[] =>
    (positions ?? []).map((pos) => s.log[pos - 1]!);
  return {
    getHlc: async () => s.hlc,
    setHlc: async (hlc) => {
      const old = s.hlc;
      undo.steps.push(() => (s.hlc = old));
      s.hlc = hlc;
    },
    head: async (signer) => s.heads.get(signer),
    setHead: async (signer, head) => undo.set(s.heads, signer, head),
    hasOuterId: async (id) => s.outerIds.has(id),
    hasEventId: async (id) => s.eventIds.has(id),
    append: async (entry: NewLogEntry) => {
      const pos = s.log.length + 1;
      // Object.assign, not `{ ...entry, pos }`: V8 gives every spread-plus-field object its own hidden class.
      s.log.push(Object.assign({ pos }, entry, shareSigner(s.signers, entry)));
      s.outerIds.add(entry.outerId);
      if (entry.eventId) s.eventIds.add(entry.eventId);
      undo.steps.push(() => {
        s.log.pop();
        s.outerIds.delete(entry.outerId);
        if (entry.eventId) s.eventIds.delete(entry.eventId);
      });
      if (entry.rowKey) index(s.byRow, entry.rowKey, pos, undo);
      if (entry.rowKey && entry.op) index(s.byRowOp, rowOpKey(entry.rowKey, entry.op), pos, undo);
      if (entry.signer) index(s.bySigner, entry.signer, pos, undo);
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
      s.log[pos - 1] = Object.assign({ pos }, entry, shareSigner(s.signers, entry));
      if (entry.eventId) s.eventIds.add(entry.eventId);
      undo.steps.push(() => {
        s.log[pos - 1] = old;
        if (entry.eventId) s.eventIds.delete(entry.eventId);
      });
      if (entry.rowKey) indexInOrder(s.byRow, entry.rowKey, pos, undo);
      if (entry.rowKey && entry.op) indexInOrder(s.byRowOp, rowOpKey(entry.rowKey, entry.op), pos, undo);
      if (entry.signer) indexInOrder(s.bySigner, entry.signer, pos, undo);
    },
    rowEntries: async (rowKey, op?: EventOp) =>
      entries(op === undefined ? s.byRow.get(rowKey) : s.byRowOp.get(rowOpKey(rowKey, op))),
    signerEntriesAbove: async (signer, seq) => entries(s.bySigner.get(signer)).filter((e) => (e.seq ?? 0) > seq),
    setRevoked: async (pos, revoked) => {
      const old = s.log[pos - 1]!;
      const rest: LogEntry = { ...old };
      delete (rest as { revoked?: true }).revoked;
      s.log[pos - 1] = revoked ? { ...rest, revoked: true } : rest;
      undo.steps.push(() => (s.log[pos - 1] = old));
    },
    getRow: async (table, row) => s.rows.get(rowKeyOf(table, row)),
    putRow: async (state) => undo.set(s.rows, rowKeyOf(state.table, state.row), state),
    deleteRow: async (table, row) => undo.delete(s.rows, rowKeyOf(table, row)),
    park: async (envelope) => undo.set(s.parked, envelope.outerId, envelope),
    unpark: async (outerId) => undo.delete(s.parked, outerId),
    isParked: async (outerId) => s.parked.has(outerId),
    parkedAll: async () => [...s.parked.values()],
    parkedCount: async () => s.parked.size,
    recordRejection: async (record) => {
      undo.set(s.rejected, record.outerId, record);
      for (const oldest of s.rejected.keys()) {
        if (s.rejected.size <= MAX_REJECTION_RECORDS) break;
        undo.delete(s.rejected, oldest);
      }
    },
    isRejected: async (outerId) => s.rejected.has(outerId),
    rejectionReason: async (outerId) => s.rejected.get(outerId)?.reason,
    withhold: async (record) => undo.set(s.withheld, record.outerId, record),
    withheldRecord: async (outerId) => s.withheld.get(outerId),
    release: async (outerId) => undo.delete(s.withheld, outerId),
    addResurrection: async (r) => undo.set(s.resurrections, r.key, r),
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
    return [...this.#state.rows.values()].filter((r) => r.table === table);
  }

  async row(table: string, row: string): Promise<RowState | undefined> {
    return this.#state.rows.get(rowKeyOf(table, row));
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
