/**
 * SQLite implementation of the blind sequencer's store (core/mls/sequencer.ts).
 *
 * File: `<dataDir>/sequencer.sqlite` (WAL, `synchronous = FULL`: a receipt the
 * relay handed out is on disk first, so a restarted relay never signs a second
 * commit for an epoch it already gave away).
 *
 *   commits(topic, group_id, epoch, seq, receipt, bundle)
 *     PRIMARY KEY (topic, group_id, epoch) — first commit wins is this key:
 *     a second insert for a taken epoch fails inside SQLite, atomically.
 *     UNIQUE (topic, group_id, seq) — one receipt chain per group.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import type { SequencedCommit, SequencerStore } from '../core/mls/sequencer.js';

export const SEQUENCER_DB_FILE = 'sequencer.sqlite';

const SCHEMA = `
CREATE TABLE IF NOT EXISTS commits (
  topic BLOB NOT NULL,
  group_id BLOB NOT NULL,
  epoch INTEGER NOT NULL,
  seq INTEGER NOT NULL,
  receipt BLOB NOT NULL,
  bundle BLOB NOT NULL,
  PRIMARY KEY (topic, group_id, epoch),
  UNIQUE (topic, group_id, seq)
) WITHOUT ROWID;
`;

type Row = { epoch: number; seq: number; receipt: Uint8Array; bundle: Uint8Array };

const toCommit = (row: Row): SequencedCommit => ({
  epoch: row.epoch,
  seq: row.seq,
  receipt: new Uint8Array(row.receipt),
  bundle: new Uint8Array(row.bundle),
});

export class SqliteSequencerStore implements SequencerStore {
  readonly #db: Database.Database;
  readonly #head: Database.Statement<[Uint8Array, Uint8Array], Row>;
  readonly #at: Database.Statement<[Uint8Array, Uint8Array, number], Row>;
  readonly #since: Database.Statement<[Uint8Array, Uint8Array, number, number], Row>;
  readonly #insert: Database.Statement<[Uint8Array, Uint8Array, number, number, Uint8Array, Uint8Array]>;

  private constructor(db: Database.Database) {
    this.#db = db;
    const cols = 'epoch, seq, receipt, bundle';
    this.#head = db.prepare(`SELECT ${cols} FROM commits WHERE topic = ? AND group_id = ? ORDER BY epoch DESC LIMIT 1`);
    this.#at = db.prepare(`SELECT ${cols} FROM commits WHERE topic = ? AND group_id = ? AND epoch = ?`);
    this.#since = db.prepare(
      `SELECT ${cols} FROM commits WHERE topic = ? AND group_id = ? AND epoch >= ? ORDER BY epoch LIMIT ?`,
    );
    this.#insert = db.prepare(
      'INSERT OR IGNORE INTO commits (topic, group_id, epoch, seq, receipt, bundle) VALUES (?, ?, ?, ?, ?, ?)',
    );
  }

  static open(dataDir: string): SqliteSequencerStore {
    mkdirSync(dataDir, { recursive: true, mode: 0o700 });
    const db = new Database(join(dataDir, SEQUENCER_DB_FILE));
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = FULL');
    db.pragma('busy_timeout = 5000');
    db.exec(SCHEMA);
    return new SqliteSequencerStore(db);
  }

  head(topic: Uint8Array, group: Uint8Array): Promise<SequencedCommit | undefined> {
    const row = this.#head.get(topic, group);
    return Promise.resolve(row && toCommit(row));
  }

  at(topic: Uint8Array, group: Uint8Array, epoch: number): Promise<SequencedCommit | undefined> {
    const row = this.#at.get(topic, group, epoch);
    return Promise.resolve(row && toCommit(row));
  }

  since(topic: Uint8Array, group: Uint8Array, from: number, limit: number): Promise<SequencedCommit[]> {
    return Promise.resolve(this.#since.all(topic, group, from, limit).map(toCommit));
  }

  insert(topic: Uint8Array, group: Uint8Array, c: SequencedCommit): Promise<boolean> {
    return Promise.resolve(this.#insert.run(topic, group, c.epoch, c.seq, c.receipt, c.bundle).changes === 1);
  }

  close(): void {
    this.#db.close();
  }
}
