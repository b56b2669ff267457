/**
 * The replica's storage contract. The core decides; an adapter (Dexie in
 * browsers, memory in tests and benchmarks, SQLite for headless nodes later)
 * only keeps. `transact` must be atomic and serialised: every write inside one
 * call lands together or not at all, so an apply and the watermark it moves can
 * never be split by a crash. Callbacks passed to `transact` touch only the
 * transaction (no other awaits), which is what IndexedDB requires.
 */
import type { Hlc } from './hlc.js';
import type { RowState } from './merge.js';
import type { DomainName } from './schema.js';

/** One envelope in the local log, in arrival order; `pos` starts at 1. */
export type LogEntry = {
  readonly pos: number;
  /** outer id (hex): BLAKE3 of the ciphertext; every machine can compute it. */
  readonly outerId: string;
  readonly domain: DomainName;
  readonly sealed: Uint8Array;
  /** Known only when this machine could open the envelope. */
  readonly eventId?: string;
  readonly signer?: string;
  readonly seq?: number;
};

export type NewLogEntry = Omit<LogEntry, 'pos'>;

export type ChainHead = { readonly seq: number; readonly eventId: string };

export type ReplicaMeta = {
  hlc: Hlc;
};

export interface ReplicaTx {
  getHlc(): Promise<Hlc | undefined>;
  setHlc(hlc: Hlc): Promise<void>;
  head(signer: string): Promise<ChainHead | undefined>;
  setHead(signer: string, head: ChainHead): Promise<void>;
  hasOuterId(outerId: string): Promise<boolean>;
  hasEventId(eventId: string): Promise<boolean>;
  append(entry: NewLogEntry): Promise<number>;
  getRow(table: string, row: string): Promise<RowState | undefined>;
  putRow(state: RowState): Promise<void>;
}

export interface ReplicaStore {
  transact<T>(fn: (tx: ReplicaTx) => Promise<T>): Promise<T>;
  /** Log entries with pos > `after`, in order, at most `limit`. */
  entriesAfter(after: number, limit: number): Promise<LogEntry[]>;
  lastPos(): Promise<number>;
  /** Highest log position the peer has acknowledged (0 if none). */
  cursor(peer: string): Promise<number>;
  /** Moves the peer's cursor forward; never backward. */
  advanceCursor(peer: string, pos: number): Promise<void>;
  rows(table: string): Promise<RowState[]>;
  row(table: string, row: string): Promise<RowState | undefined>;
}
