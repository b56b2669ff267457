/**
 * The key store of a machine that runs in Node (headless node roles), in SQLite beside
 * its replica. Node cannot keep a CryptoKey the way a browser's IndexedDB does, so the
 * root of protection is a machine key file instead: 32 random bytes, created once with
 * mode 0600 in the data directory and imported as a non-extractable AES-GCM key. Every
 * private key is generated extractable only long enough to be exported (PKCS#8) and
 * wrapped under it, and is imported back non-extractable for use; secrets are wrapped
 * under it exactly as the browser wraps them under its machine key. Anyone who can read
 * the key file and the database can read the keys: protect the data directory as the
 * machine's identity (see README).
 */
import { chmodSync, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { decodeCbor, encodeCbor } from '../core/cbor.js';
import { unwrapPair, WRAP_ALL, wrapPair, type WrappedPair } from './key-keeping.js';
import type {
  IdentityMaker,
  IdentityRecord,
  InvitationRecord,
  KeyStore,
  ReplayRecord,
  SecretRecord,
} from './key-store.js';

export const MACHINE_KEY_FILE = 'machine.key';

const SCHEMA = `
  CREATE TABLE IF NOT EXISTS identity (id TEXT PRIMARY KEY, record BLOB NOT NULL);
  CREATE TABLE IF NOT EXISTS secrets (name TEXT PRIMARY KEY, iv BLOB NOT NULL, ct BLOB NOT NULL);
  CREATE TABLE IF NOT EXISTS invitations (inv TEXT PRIMARY KEY, expires_at INTEGER NOT NULL, closed TEXT);
  CREATE TABLE IF NOT EXISTS replay (rid TEXT PRIMARY KEY, ts INTEGER NOT NULL);
  CREATE INDEX IF NOT EXISTS replay_ts ON replay (ts);
`;

type InvitationRow = { inv: string; expires_at: number; closed: string | null };
const invitationOf = (r: InvitationRow): InvitationRecord => ({
  inv: r.inv,
  expiresAt: r.expires_at,
  ...(r.closed === null ? {} : { closed: r.closed }),
});

type StoredIdentity = {
  readonly signing: WrappedPair;
  readonly endpoint: WrappedPair;
  readonly frame: WrappedPair;
  readonly createdAt: number;
};

const copy = (bytes: Uint8Array): Uint8Array<ArrayBuffer> => new Uint8Array(bytes);

/** Reads the machine key file, creating it (0600) on first use; refuses one others may read. */
function machineKeyBytes(dir: string): Uint8Array {
  const path = join(dir, MACHINE_KEY_FILE);
  if (!existsSync(path)) {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    writeFileSync(path, crypto.getRandomValues(new Uint8Array(32)), { mode: 0o600, flag: 'wx' });
    chmodSync(path, 0o600);
  }
  if ((statSync(path).mode & 0o077) !== 0) {
    throw new Error(`key store: ${path} is readable by other users; chmod 600 it`);
  }
  const bytes = new Uint8Array(readFileSync(path));
  if (bytes.length !== 32) throw new Error(`key store: ${path} is not a 32-byte machine key`);
  return bytes;
}

export class SqliteKeyStore implements KeyStore {
  readonly #db: Database.Database;
  readonly #root: CryptoKey;
  #identity: IdentityRecord | undefined;

  private constructor(db: Database.Database, root: CryptoKey) {
    this.#db = db;
    this.#root = root;
  }

  /** Opens (or creates) `<dir>/keys.sqlite` under `<dir>/machine.key`. */
  static async open(dir: string): Promise<SqliteKeyStore> {
    const raw = machineKeyBytes(dir);
    const root = await crypto.subtle.importKey('raw', copy(raw), { name: 'AES-GCM' }, false, ['encrypt', 'decrypt']);
    raw.fill(0);
    const db = new Database(join(dir, 'keys.sqlite'));
    db.pragma('journal_mode = WAL');
    // A key or secret is on the disk when its write returns (docs/architecture.md, durability).
    db.pragma('synchronous = FULL');
    db.exec(SCHEMA);
    // Stores made before invitations could be closed lack the column.
    const columns = db.prepare('PRAGMA table_info(invitations)').all() as { name: string }[];
    if (!columns.some((c) => c.name === 'closed')) db.exec('ALTER TABLE invitations ADD COLUMN closed TEXT');
    return new SqliteKeyStore(db, root);
  }

  close(): void {
    this.#db.close();
  }

  async identity(): Promise<IdentityRecord | undefined> {
    if (this.#identity) return this.#identity;
    const row = this.#db.prepare('SELECT record FROM identity WHERE id = ?').get('self') as
      { record: Uint8Array } | undefined;
    if (!row) return undefined;
    const decoded = decodeCbor(new Uint8Array(row.record), 64 * 1024);
    if (!decoded.ok) throw new Error('key store: the identity record does not decode');
    const stored = decoded.value as StoredIdentity;
    let record: IdentityRecord;
    try {
      record = {
        id: 'self',
        signing: await unwrapPair(this.#root, 'signing', 'Ed25519', stored.signing),
        signingPublic: stored.signing.pub,
        endpoint: await unwrapPair(this.#root, 'endpoint', 'Ed25519', stored.endpoint),
        endpointPublic: stored.endpoint.pub,
        frame: await unwrapPair(this.#root, 'frame', 'X25519', stored.frame),
        framePublic: stored.frame.pub,
        wrapping: this.#root,
        createdAt: stored.createdAt,
      };
    } catch {
      throw new Error('key store: the identity does not open under this machine key');
    }
    this.#identity = record;
    return record;
  }

  async ensureIdentity(make: IdentityMaker, now: number): Promise<IdentityRecord> {
    const existing = await this.identity();
    if (existing) return existing;
    const stored = await this.#made(make, now);
    // OR IGNORE: if another process made the identity first, its identity is the one in force.
    this.#db.prepare('INSERT OR IGNORE INTO identity (id, record) VALUES (?, ?)').run('self', encodeCbor(stored));
    return (await this.identity())!;
  }

  /** A new identity's keys, each wrapped under the machine key. */
  async #made(make: IdentityMaker, now: number): Promise<StoredIdentity> {
    const keys = await make(WRAP_ALL);
    return {
      signing: await wrapPair(this.#root, 'signing', keys.signing),
      endpoint: await wrapPair(this.#root, 'endpoint', keys.endpoint),
      frame: await wrapPair(this.#root, 'frame', keys.frame),
      createdAt: now,
    };
  }

  async replaceIdentity(make: IdentityMaker, now: number, unless: string): Promise<IdentityRecord | undefined> {
    const stored = await this.#made(make, now);
    const replace = this.#db.transaction(() => {
      if (this.#db.prepare('SELECT 1 FROM secrets WHERE name = ?').get(unless)) return false;
      this.#db.prepare('DELETE FROM secrets').run();
      this.#db.prepare('INSERT OR REPLACE INTO identity (id, record) VALUES (?, ?)').run('self', encodeCbor(stored));
      return true;
    });
    if (!replace()) return undefined;
    this.#identity = undefined;
    return this.identity();
  }

  async secret(name: string): Promise<SecretRecord | undefined> {
    const row = this.#db.prepare('SELECT name, iv, ct FROM secrets WHERE name = ?').get(name) as
      { name: string; iv: Uint8Array; ct: Uint8Array } | undefined;
    return row && { name: row.name, iv: new Uint8Array(row.iv), ct: new Uint8Array(row.ct) };
  }

  async secretsUnder(prefix: string): Promise<SecretRecord[]> {
    const rows = this.#db
      .prepare('SELECT name, iv, ct FROM secrets WHERE substr(name, 1, length(?)) = ? ORDER BY name')
      .all(prefix, prefix) as { name: string; iv: Uint8Array; ct: Uint8Array }[];
    return rows.map((r) => ({ name: r.name, iv: new Uint8Array(r.iv), ct: new Uint8Array(r.ct) }));
  }

  async putSecrets(records: readonly SecretRecord[]): Promise<void> {
    const put = this.#db.prepare('INSERT OR REPLACE INTO secrets (name, iv, ct) VALUES (?, ?, ?)');
    this.#db.transaction(() => {
      for (const r of records) put.run(r.name, r.iv, r.ct);
    })();
  }

  async deleteSecrets(names: readonly string[]): Promise<void> {
    const del = this.#db.prepare('DELETE FROM secrets WHERE name = ?');
    this.#db.transaction(() => {
      for (const n of names) del.run(n);
    })();
  }

  async invitation(inv: string): Promise<InvitationRecord | undefined> {
    const row = this.#db.prepare('SELECT inv, expires_at, closed FROM invitations WHERE inv = ?').get(inv) as
      InvitationRow | undefined;
    return row && invitationOf(row);
  }

  async putInvitation(record: InvitationRecord): Promise<void> {
    this.#db
      .prepare('INSERT OR REPLACE INTO invitations (inv, expires_at, closed) VALUES (?, ?, ?)')
      .run(record.inv, record.expiresAt, record.closed ?? null);
  }

  async deleteInvitation(inv: string): Promise<void> {
    this.#db.prepare('DELETE FROM invitations WHERE inv = ?').run(inv);
  }

  async openInvitations(now: number): Promise<InvitationRecord[]> {
    const rows = this.#db
      .prepare('SELECT inv, expires_at, closed FROM invitations WHERE expires_at >= ?')
      .all(now) as InvitationRow[];
    return rows.map(invitationOf);
  }

  async replays(before: number): Promise<ReplayRecord[]> {
    this.#db.prepare('DELETE FROM replay WHERE ts < ?').run(before);
    return this.#db.prepare('SELECT rid, ts FROM replay ORDER BY ts').all() as ReplayRecord[];
  }

  async putReplays(records: readonly ReplayRecord[]): Promise<void> {
    if (records.length === 0) return;
    const put = this.#db.prepare('INSERT OR REPLACE INTO replay (rid, ts) VALUES (?, ?)');
    // One transaction, so one synced commit for a whole batch of frames.
    this.#db.transaction(() => {
      for (const r of records) put.run(r.rid, r.ts);
    })();
  }
}
