/**
 * Encrypted objects of a machine that runs in Node (headless node roles), in SQLite:
 * the same records as object-db.ts keeps in IndexedDB. Object bytes are ciphertext
 * named by their hash; pending records hold sealed manifests only (the secrets are in
 * the key store).
 */
import Database from 'better-sqlite3';
import type { BlobRecord, ObjectStore, PendingRecord } from './object-db.js';

const SCHEMA = `
  CREATE TABLE IF NOT EXISTS blobs (
    id TEXT PRIMARY KEY, bytes BLOB NOT NULL, size INTEGER NOT NULL, stored_at INTEGER NOT NULL,
    domain TEXT, uploaded INTEGER NOT NULL, tag TEXT
  );
  CREATE TABLE IF NOT EXISTS pending (
    id TEXT PRIMARY KEY, domain TEXT NOT NULL, tbl TEXT NOT NULL, sealed_manifest BLOB NOT NULL,
    formed_at INTEGER NOT NULL, refused TEXT
  );
`;

type BlobRow = {
  id: string;
  bytes?: Uint8Array;
  size: number;
  stored_at: number;
  domain: string | null;
  uploaded: number;
  tag: string | null;
};
type PendingRow = {
  id: string;
  domain: string;
  tbl: string;
  sealed_manifest: Uint8Array;
  formed_at: number;
  refused: string | null;
};

function meta(r: BlobRow): Omit<BlobRecord, 'bytes'> {
  return {
    id: r.id,
    size: r.size,
    storedAt: r.stored_at,
    ...(r.domain !== null ? { domain: r.domain } : {}),
    ...(r.tag !== null ? { tag: r.tag } : {}),
    uploaded: r.uploaded === 1,
  };
}

const blob = (r: BlobRow): BlobRecord => ({ ...meta(r), bytes: new Uint8Array(r.bytes!) });

const pendingOf = (r: PendingRow): PendingRecord => ({
  id: r.id,
  domain: r.domain,
  table: r.tbl,
  sealedManifest: new Uint8Array(r.sealed_manifest),
  formedAt: r.formed_at,
  ...(r.refused !== null ? { refused: r.refused } : {}),
});

export class SqliteObjectStore implements ObjectStore {
  readonly #db: Database.Database;

  /** `path`: a file, or ':memory:' for tests. */
  constructor(path: string) {
    this.#db = new Database(path);
    this.#db.pragma('journal_mode = WAL');
    // An object is on the disk before it is published (docs/architecture.md, durability).
    this.#db.pragma('synchronous = FULL');
    this.#db.exec(SCHEMA);
    // Stores made before storage machines kept the placement tag of what they copied lack the column.
    const columns = this.#db.prepare('PRAGMA table_info(blobs)').all() as { name: string }[];
    if (!columns.some((c) => c.name === 'tag')) this.#db.exec('ALTER TABLE blobs ADD COLUMN tag TEXT');
  }

  close(): void {
    this.#db.close();
  }

  async blob(id: string): Promise<BlobRecord | undefined> {
    const row = this.#db.prepare('SELECT * FROM blobs WHERE id = ?').get(id) as BlobRow | undefined;
    return row && blob(row);
  }

  async hasBlob(id: string): Promise<boolean> {
    return this.#db.prepare('SELECT 1 AS x FROM blobs WHERE id = ?').get(id) !== undefined;
  }

  async putBlob(r: BlobRecord): Promise<void> {
    this.#putBlob(r);
  }

  #putBlob(r: BlobRecord): void {
    this.#db
      .prepare(
        'INSERT OR REPLACE INTO blobs (id, bytes, size, stored_at, domain, uploaded, tag) VALUES (?, ?, ?, ?, ?, ?, ?)',
      )
      .run(r.id, r.bytes, r.size, r.storedAt, r.domain ?? null, r.uploaded ? 1 : 0, r.tag ?? null);
  }

  async markUploaded(id: string): Promise<void> {
    this.#db.prepare('UPDATE blobs SET uploaded = 1 WHERE id = ?').run(id);
  }

  async dropBlob(id: string): Promise<void> {
    this.#db.prepare('DELETE FROM blobs WHERE id = ?').run(id);
  }

  async held(): Promise<Omit<BlobRecord, 'bytes'>[]> {
    const rows = this.#db.prepare('SELECT id, size, stored_at, domain, uploaded, tag FROM blobs ORDER BY id').all();
    return (rows as BlobRow[]).map(meta);
  }

  async notUploaded(): Promise<BlobRecord[]> {
    const rows = this.#db.prepare('SELECT * FROM blobs WHERE uploaded = 0 AND domain IS NOT NULL').all();
    return (rows as BlobRow[]).map(blob);
  }

  async keepFormed(b: BlobRecord, p: PendingRecord): Promise<void> {
    this.#db.transaction(() => {
      this.#putBlob(b);
      this.#putPending(p);
    })();
  }

  async pendingAll(): Promise<PendingRecord[]> {
    return (this.#db.prepare('SELECT * FROM pending ORDER BY formed_at').all() as PendingRow[]).map(pendingOf);
  }

  async pending(id: string): Promise<PendingRecord | undefined> {
    const row = this.#db.prepare('SELECT * FROM pending WHERE id = ?').get(id) as PendingRow | undefined;
    return row && pendingOf(row);
  }

  async putPending(p: PendingRecord): Promise<void> {
    this.#putPending(p);
  }

  #putPending(p: PendingRecord): void {
    this.#db
      .prepare(
        'INSERT OR REPLACE INTO pending (id, domain, tbl, sealed_manifest, formed_at, refused) VALUES (?, ?, ?, ?, ?, ?)',
      )
      .run(p.id, p.domain, p.table, p.sealedManifest, p.formedAt, p.refused ?? null);
  }

  async deletePending(id: string): Promise<void> {
    this.#db.prepare('DELETE FROM pending WHERE id = ?').run(id);
  }
}
