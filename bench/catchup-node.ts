/**
 * Benchmark `catchup-node`: the catch-up of `bench catchup` (100,000 events from two
 * writers, through the real relay, every envelope decrypted, every chain verified) into
 * the store a headless node runs: SQLite (SqliteReplicaStore, better-sqlite3, a file in a
 * temp directory), by the same core pipeline the node's StateService drives (Replica and
 * SyncEngine). Two readers, as in `catchup`: envelopes opened in this thread, and on a
 * worker-thread pool; the figure is the faster.
 *
 *   anchor   `sqlite_bulk_insert_seconds`: the same records — each log entry the reader
 *            stored (sealed envelope, ids, signer, seq, row key) and its row — inserted into
 *            a fresh SQLite file with one prepared statement per table in one transaction.
 */
import Database from 'better-sqlite3';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { encodeCbor } from '../src/core/cbor.js';
import { SqliteReplicaStore } from '../src/storage/sqlite-replica-store.js';
import { EVENTS, measure } from './catchup.ts';
import type { BenchResult } from './run.ts';
import type { ReplicaStore } from '../src/core/store.js';

/** Seconds to insert every log entry and row of `store` into a fresh SQLite file, one transaction. */
async function bulkInsertSeconds(store: ReplicaStore, path: string): Promise<number> {
  const entries = [];
  for (let after = 0; ;) {
    const page = await store.entriesAfter(after, 10_000);
    if (page.length === 0) break;
    entries.push(...page);
    after = page[page.length - 1]!.pos;
  }
  const rows = await store.rows('device_profiles');
  const records = entries.map((e) => ({
    pos: e.pos,
    outer: e.outerId,
    event: e.eventId ?? null,
    signer: e.signer ?? null,
    seq: e.seq ?? null,
    row_key: e.rowKey ?? null,
    sealed: Buffer.from(e.sealed),
  }));
  const states = rows.map((r) => ({ table_name: r.table, row_id: r.row, state: Buffer.from(encodeCbor(r.cells)) }));
  const db = new Database(path);
  db.pragma('journal_mode = WAL');
  db.exec(`CREATE TABLE log (pos INTEGER PRIMARY KEY, outer TEXT UNIQUE, event TEXT, signer TEXT, seq INTEGER,
    row_key TEXT, sealed BLOB);
    CREATE TABLE rows (table_name TEXT, row_id TEXT, state BLOB, PRIMARY KEY (table_name, row_id));`);
  const insertLog = db.prepare(
    'INSERT INTO log (pos, outer, event, signer, seq, row_key, sealed) VALUES (@pos, @outer, @event, @signer, @seq, @row_key, @sealed)',
  );
  const insertRow = db.prepare(
    'INSERT OR REPLACE INTO rows (table_name, row_id, state) VALUES (@table_name, @row_id, @state)',
  );
  const started = performance.now();
  db.transaction(() => {
    for (const r of records) insertLog.run(r);
    for (const s of states) insertRow.run(s);
  })();
  const seconds = (performance.now() - started) / 1000;
  db.close();
  return seconds;
}

export async function run(): Promise<BenchResult> {
  const dir = await mkdtemp(join(tmpdir(), 'sov-bench-catchup-node-'));
  try {
    const stores: SqliteReplicaStore[] = [];
    const timings = await measure((i) => {
      const store = new SqliteReplicaStore(join(dir, `reader-${i}.sqlite`));
      stores.push(store);
      return store;
    });
    const best = Math.min(timings.inThreadMs, timings.pooledMs) / 1000;
    const anchor = await bulkInsertSeconds(timings.stores[0]!, join(dir, 'anchor.sqlite'));
    for (const store of stores) store.close();
    return {
      figures: {
        events: EVENTS,
        seconds_100k_events: best,
        events_per_s: EVENTS / best,
        seconds_in_thread: timings.inThreadMs / 1000,
        seconds_worker_pool: timings.pooledMs / 1000,
        frames: timings.frames,
      },
      anchors: { sqlite_bulk_insert_seconds: anchor },
      ratios: { catchup_time_vs_sqlite_bulk_insert: best / anchor },
    };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
