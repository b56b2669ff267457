/**
 * Setting up the headless node's SQLite replica store (sqlite-replica-store.ts): the
 * connection's settings, and the one migration of files written by earlier versions.
 */
import type Database from 'better-sqlite3';
import { decodeCbor } from '../core/cbor.js';

const MAX_RECORD = 1 << 24;

function reasonOf(bytes: Uint8Array): string {
  const decoded = decodeCbor(new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength), MAX_RECORD);
  if (!decoded.ok) throw new Error(`sqlite-store: a stored record does not decode (${decoded.error.reason})`);
  return (decoded.value as { reason: string }).reason;
}

/**
 * Stores made before reasons were columns: add them and fill them from the records, once,
 * so the Sync panel counts by reason without reading a record.
 */
export function migrateReasons(db: Database.Database): void {
  for (const table of ['parked', 'withheld', 'rejected'] as const) {
    const columns = db.prepare(`PRAGMA table_info(${table})`).all() as { name: string }[];
    if (columns.some((c) => c.name === 'reason')) continue;
    db.transaction(() => {
      db.exec(`ALTER TABLE ${table} ADD COLUMN reason TEXT NOT NULL DEFAULT ''`);
      const rows = db.prepare(`SELECT outer_id, record FROM ${table}`).all() as {
        outer_id: string;
        record: Uint8Array;
      }[];
      const set = db.prepare(`UPDATE ${table} SET reason = ? WHERE outer_id = ?`);
      for (const row of rows) set.run(reasonOf(row.record), row.outer_id);
    })();
  }
}

/**
 * Connection settings for one process that owns the file (the headless node). Kept per
 * connection, none of them changes the file's format.
 *
 * - `synchronous = FULL` (set by the store): a commit is on the disk, the WAL synced, when
 *   `transact` resolves. The machine acknowledges frames after those commits and the relay
 *   then deletes them: with NORMAL a power loss right after an ack could lose the only copy.
 * - `cache_size`: 64 MiB of pages instead of 2 MiB, so the index pages an apply touches
 *   (random 64-hex keys) are mostly found in memory.
 * - `wal_autocheckpoint`: every apply batch dirties ~1,000 pages, so at the default 1,000
 *   pages every commit ran a checkpoint of its own. At 10,000 pages (~40 MiB) one
 *   checkpoint serves several commits, and a page written by several of them is copied
 *   to the database once. The WAL stays bounded: the checkpoint runs at the first commit
 *   past that size (so the WAL holds at most ~10,000 pages plus one transaction), the
 *   only other connection (the reader) holds a snapshot only for the length of one
 *   statement and so never keeps it from completing, and the WAL file is then reused from
 *   its start; `journal_size_limit` truncates a file that one large transaction grew
 *   beyond 64 MiB back to that size.
 * - `temp_store = MEMORY`: sorts and temporary indexes never touch the disk.
 */
export function tune(db: Database.Database): void {
  db.pragma('cache_size = -65536');
  db.pragma('wal_autocheckpoint = 10000');
  db.pragma(`journal_size_limit = ${64 * 1024 * 1024}`);
  db.pragma('temp_store = MEMORY');
}
