/** The store a machine of the mesh keeps: its replica and its small durable values. */
import type { ReplicaStore } from '../core/store.js';

/** A machine's replica store with its small durable values (IndexedDB in browsers, SQLite in Node). */
export type MachineStore = ReplicaStore & {
  getMeta<T>(key: string): Promise<T | undefined>;
  setMeta(key: string, value: unknown): Promise<void>;
  deleteMeta(key: string): Promise<void>;
  /** Envelopes held without being readable here, oldest first. */
  opaque(limit: number): Promise<{ readonly domain: string; readonly sealed: Uint8Array }[]>;
};
