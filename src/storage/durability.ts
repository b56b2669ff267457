/**
 * Durable before acknowledged: every IndexedDB database of a machine commits with
 * `durability: 'strict'`, so a transaction has reached the disk when it completes. The
 * engines' own default is relaxed (Chromium reports completion once the data is with the
 * OS, Firefox likewise), and Dexie passes the engine's default on unless told. A machine
 * acknowledges frames after its commits and the relay then deletes them; an inbox frame
 * is deleted at the relay once stored; an object is uploaded once stored; a relaxed
 * commit lost in a power cut would lose the only copy. The SQLite stores run
 * `synchronous = FULL` for the same reason. What it costs is measured by the catch-up
 * benchmarks (docs/architecture.md).
 */
import type { DexieOptions } from 'dexie';

export const STRICT: DexieOptions = { chromeTransactionDurability: 'strict' };
