/**
 * In-memory `ReplicaStore` for tests, benchmarks and short-lived headless use.
 * Transactions run one at a time and keep an undo log, so a callback that
 * throws leaves the store exactly as it was, like the durable adapters.
 */
import type { ChainHead, LogEntry, NewLogEntry, ReplicaStore, ReplicaTx } from '../core/store.js';
import type { Hlc } from '../core/hlc.js';
import type { RowState } from '../core/merge.js';

type State = {
  log: LogEntry[];
  heads: Map<string, ChainHead>;
  outerIds: Set<string>;
  eventIds: Set<string>;
  rows: Map<string, RowState>;
  hlc: Hlc | undefined;
};

const rowKey = (table: string, row: string): string => `${table}\u0000${row}`;

/** A transaction view that writes through and records how to undo each write. */
function txOver(s: State, undo: (() => void)[]): ReplicaTx {
  const restoreMap = <K, V>(map: Map<K, V>, key: K): void => {
    const had = map.has(key);
    const old = map.get(key);
    undo.push(() => (had ? map.set(key, old as V) : map.delete(key)));
  };
  return {
    getHlc: async () => s.hlc,
    setHlc: async (hlc) => {
      const old = s.hlc;
      undo.push(() => (s.hlc = old));
      s.hlc = hlc;
    },
    head: async (signer) => s.heads.get(signer),
    setHead: async (signer, head) => {
      restoreMap(s.heads, signer);
      s.heads.set(signer, head);
    },
    hasOuterId: async (id) => s.outerIds.has(id),
    hasEventId: async (id) => s.eventIds.has(id),
    append: async (entry: NewLogEntry) => {
      const pos = s.log.length + 1;
      s.log.push({ ...entry, pos });
      s.outerIds.add(entry.outerId);
      if (entry.eventId) s.eventIds.add(entry.eventId);
      undo.push(() => {
        s.log.pop();
        s.outerIds.delete(entry.outerId);
        if (entry.eventId) s.eventIds.delete(entry.eventId);
      });
      return pos;
    },
    getRow: async (table, row) => s.rows.get(rowKey(table, row)),
    putRow: async (state) => {
      const key = rowKey(state.table, state.row);
      restoreMap(s.rows, key);
      s.rows.set(key, state);
    },
  };
}

export class MemoryReplicaStore implements ReplicaStore {
  readonly #state: State = {
    log: [],
    heads: new Map(),
    outerIds: new Set(),
    eventIds: new Set(),
    rows: new Map(),
    hlc: undefined,
  };
  readonly #cursors = new Map<string, number>();
  #queue: Promise<unknown> = Promise.resolve();

  transact<T>(fn: (tx: ReplicaTx) => Promise<T>): Promise<T> {
    const run = async (): Promise<T> => {
      const undo: (() => void)[] = [];
      try {
        return await fn(txOver(this.#state, undo));
      } catch (e) {
        for (const step of undo.reverse()) step();
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

  async rows(table: string): Promise<RowState[]> {
    return [...this.#state.rows.values()].filter((r) => r.table === table);
  }

  async row(table: string, row: string): Promise<RowState | undefined> {
    return this.#state.rows.get(rowKey(table, row));
  }
}
