/**
 * SQLite implementation of the relay's `MailboxStore` (better-sqlite3@12, synchronous).
 *
 * File: `<dataDir>/relay.sqlite`, created with its directory (mode 0700) if missing.
 * Durability: WAL journal with `synchronous = FULL`, so a frame whose id `enqueue` returned
 * is on disk before the relay tells anyone about it, and survives a crash or power loss.
 *
 * Schema (version 1):
 *   frames(id INTEGER PRIMARY KEY AUTOINCREMENT, topic, recipient, sender, body, size)
 *     AUTOINCREMENT so ids stay strictly increasing and are never reused, even when the
 *     newest frame was acknowledged before a restart (an endpoint acks by id).
 *   mailbox_usage(topic, recipient, frames, bytes) — running totals kept in the same
 *     transaction as every insert/delete, so the per-mailbox bound costs one lookup.
 *   members(topic, endpoint) — endpoints that authenticated under a topic.
 * Version 2 adds:
 *   admissions(topic, record) — the admin-signed admission list in force per topic.
 *   invited(topic, endpoint, invite) — joiners served on an open invitation.
 *
 * Threats: every statement is prepared and parameterised; ids and sizes are checked by the
 * shared helpers in relay/mailbox.ts; bounds are enforced before anything is written.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { ok, type Result } from '../core/result.js';
import {
  DEFAULT_MAILBOX_LIMITS,
  checkId,
  checkLimits,
  checkPage,
  overLimit,
  type MailboxError,
  type MailboxFrame,
  type MailboxLimits,
  type MailboxStore,
  type NewFrame,
} from '../core/mailbox.js';

export const RELAY_DB_FILE = 'relay.sqlite';
const SCHEMA_VERSION = 2;

const SCHEMA = `
CREATE TABLE IF NOT EXISTS frames (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  topic BLOB NOT NULL,
  recipient BLOB NOT NULL,
  sender BLOB NOT NULL,
  body BLOB NOT NULL,
  size INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS frames_by_mailbox ON frames (topic, recipient, id);
CREATE TABLE IF NOT EXISTS mailbox_usage (
  topic BLOB NOT NULL,
  recipient BLOB NOT NULL,
  frames INTEGER NOT NULL,
  bytes INTEGER NOT NULL,
  PRIMARY KEY (topic, recipient)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS members (
  topic BLOB NOT NULL,
  endpoint BLOB NOT NULL,
  PRIMARY KEY (topic, endpoint)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS admissions (
  topic BLOB PRIMARY KEY,
  record BLOB NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS invited (
  topic BLOB NOT NULL,
  endpoint BLOB NOT NULL,
  invite BLOB NOT NULL,
  PRIMARY KEY (topic, endpoint)
) WITHOUT ROWID;
`;

type Usage = { frames: number; bytes: number };
type UsageDelta = { topic: Uint8Array; recipient: Uint8Array; frames: number; bytes: number };
type FrameRow = { id: number; sender: Uint8Array; body: Uint8Array };

function prepareStatements(db: Database.Database) {
  return {
    usage: db.prepare<[Uint8Array, Uint8Array], Usage>(
      'SELECT frames, bytes FROM mailbox_usage WHERE topic = ? AND recipient = ?',
    ),
    insert: db.prepare<[Uint8Array, Uint8Array, Uint8Array, Uint8Array, number]>(
      'INSERT INTO frames (topic, recipient, sender, body, size) VALUES (?, ?, ?, ?, ?)',
    ),
    addUsage: db.prepare<[UsageDelta]>(
      `INSERT INTO mailbox_usage (topic, recipient, frames, bytes) VALUES (@topic, @recipient, @frames, @bytes)
       ON CONFLICT (topic, recipient) DO UPDATE SET frames = frames + @frames, bytes = bytes + @bytes`,
    ),
    dropEmpty: db.prepare<[Uint8Array, Uint8Array]>(
      'DELETE FROM mailbox_usage WHERE topic = ? AND recipient = ? AND frames <= 0',
    ),
    pending: db.prepare<[Uint8Array, Uint8Array, number, number], FrameRow>(
      `SELECT id, sender, body FROM frames WHERE topic = ? AND recipient = ? AND id > ?
       ORDER BY id LIMIT ?`,
    ),
    remove: db.prepare<[Uint8Array, Uint8Array, number], { size: number }>(
      'DELETE FROM frames WHERE topic = ? AND recipient = ? AND id = ? RETURNING size',
    ),
    noteMember: db.prepare<[Uint8Array, Uint8Array]>('INSERT OR IGNORE INTO members (topic, endpoint) VALUES (?, ?)'),
    isMember: db.prepare<[Uint8Array, Uint8Array], { one: number }>(
      'SELECT 1 AS one FROM members WHERE topic = ? AND endpoint = ?',
    ),
    admission: db.prepare<[Uint8Array], { record: Uint8Array }>('SELECT record FROM admissions WHERE topic = ?'),
    setAdmission: db.prepare<[Uint8Array, Uint8Array]>(
      'INSERT INTO admissions (topic, record) VALUES (?, ?) ON CONFLICT (topic) DO UPDATE SET record = excluded.record',
    ),
    noteInvited: db.prepare<[Uint8Array, Uint8Array, Uint8Array]>(
      'INSERT OR REPLACE INTO invited (topic, endpoint, invite) VALUES (?, ?, ?)',
    ),
    invitedWith: db.prepare<[Uint8Array, Uint8Array], { invite: Uint8Array }>(
      'SELECT invite FROM invited WHERE topic = ? AND endpoint = ?',
    ),
    endpointsOf: db.prepare<[Uint8Array, Uint8Array], { endpoint: Uint8Array }>(
      `SELECT recipient AS endpoint FROM mailbox_usage WHERE topic = ?
       UNION SELECT endpoint FROM invited WHERE topic = ?`,
    ),
    dropFrames: db.prepare<[Uint8Array, Uint8Array]>('DELETE FROM frames WHERE topic = ? AND recipient = ?'),
    dropUsage: db.prepare<[Uint8Array, Uint8Array]>('DELETE FROM mailbox_usage WHERE topic = ? AND recipient = ?'),
    dropInvited: db.prepare<[Uint8Array, Uint8Array]>('DELETE FROM invited WHERE topic = ? AND endpoint = ?'),
    dropMember: db.prepare<[Uint8Array, Uint8Array]>('DELETE FROM members WHERE topic = ? AND endpoint = ?'),
  };
}

type Statements = ReturnType<typeof prepareStatements>;

function openDatabase(dataDir: string): Database.Database {
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const db = new Database(join(dataDir, RELAY_DB_FILE));
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = FULL');
  db.pragma('foreign_keys = ON');
  db.pragma('busy_timeout = 5000');
  const version = db.pragma('user_version', { simple: true });
  if (typeof version === 'number' && version > SCHEMA_VERSION) {
    db.close();
    throw new Error(`sqlite-mailbox: ${RELAY_DB_FILE} has schema ${version}, newer than ${SCHEMA_VERSION}`);
  }
  db.exec(SCHEMA);
  db.pragma(`user_version = ${SCHEMA_VERSION}`);
  return db;
}

/** better-sqlite3 returns Buffers; hand out plain Uint8Array views over the same bytes. */
const view = (b: Uint8Array): Uint8Array => new Uint8Array(b.buffer, b.byteOffset, b.byteLength);

export class SqliteMailboxStore implements MailboxStore {
  readonly #db: Database.Database;
  readonly #sql: Statements;
  readonly #limits: MailboxLimits;
  readonly #enqueueTx: (t: Uint8Array, r: Uint8Array, s: Uint8Array, b: Uint8Array) => Result<number, MailboxError>;
  readonly #enqueueAllTx: (frames: readonly NewFrame[]) => Result<number, MailboxError>[];
  readonly #ackTx: (t: Uint8Array, r: Uint8Array, ids: readonly number[]) => number;
  readonly #dropTx: (t: Uint8Array, e: Uint8Array) => number;

  private constructor(db: Database.Database, limits: MailboxLimits) {
    this.#db = db;
    this.#limits = checkLimits(limits);
    this.#sql = prepareStatements(db);
    this.#enqueueTx = db.transaction((t: Uint8Array, r: Uint8Array, s: Uint8Array, b: Uint8Array) =>
      this.#enqueueInTx(t, r, s, b),
    ).immediate;
    this.#enqueueAllTx = db.transaction((frames: readonly NewFrame[]) =>
      frames.map((f) => this.#enqueueInTx(f.topic, f.recipient, f.sender, f.body)),
    ).immediate;
    this.#ackTx = db.transaction((t: Uint8Array, r: Uint8Array, ids: readonly number[]) =>
      this.#ackInTx(t, r, ids),
    ).immediate;
    this.#dropTx = db.transaction((t: Uint8Array, e: Uint8Array) => {
      const dropped = this.#sql.dropFrames.run(t, e).changes;
      this.#sql.dropUsage.run(t, e);
      this.#sql.dropInvited.run(t, e);
      this.#sql.dropMember.run(t, e);
      return dropped;
    }).immediate;
  }

  /** Opens (creating if needed) `<dataDir>/relay.sqlite`. Throws if the file cannot be opened. */
  static open(dataDir: string, limits: MailboxLimits = DEFAULT_MAILBOX_LIMITS): SqliteMailboxStore {
    return new SqliteMailboxStore(openDatabase(dataDir), limits);
  }

  enqueue(
    topic: Uint8Array,
    recipient: Uint8Array,
    sender: Uint8Array,
    body: Uint8Array,
  ): Result<number, MailboxError> {
    checkId(topic, 'topic');
    checkId(recipient, 'recipient');
    checkId(sender, 'sender');
    return this.#enqueueTx(topic, recipient, sender, body);
  }

  enqueueAll(frames: readonly NewFrame[]): Result<number, MailboxError>[] {
    for (const f of frames) {
      checkId(f.topic, 'topic');
      checkId(f.recipient, 'recipient');
      checkId(f.sender, 'sender');
    }
    return frames.length === 0 ? [] : this.#enqueueAllTx(frames);
  }

  pending(topic: Uint8Array, recipient: Uint8Array, afterId: number, limit: number): readonly MailboxFrame[] {
    this.#check(topic, recipient);
    const max = checkPage(afterId, limit);
    return this.#sql.pending
      .all(topic, recipient, afterId, max)
      .map((row) => ({ id: row.id, sender: view(row.sender), body: view(row.body) }));
  }

  ack(topic: Uint8Array, recipient: Uint8Array, ids: readonly number[]): number {
    this.#check(topic, recipient);
    const valid = ids.filter((id) => Number.isSafeInteger(id) && id > 0);
    return valid.length === 0 ? 0 : this.#ackTx(topic, recipient, valid);
  }

  countFor(topic: Uint8Array, recipient: Uint8Array): number {
    return this.#usage(topic, recipient).frames;
  }

  bytesFor(topic: Uint8Array, recipient: Uint8Array): number {
    return this.#usage(topic, recipient).bytes;
  }

  noteMember(topic: Uint8Array, endpoint: Uint8Array): void {
    this.#check(topic, endpoint);
    this.#sql.noteMember.run(topic, endpoint);
  }

  isMember(topic: Uint8Array, endpoint: Uint8Array): boolean {
    this.#check(topic, endpoint);
    return this.#sql.isMember.get(topic, endpoint) !== undefined;
  }

  admission(topic: Uint8Array): Uint8Array | undefined {
    checkId(topic, 'topic');
    const row = this.#sql.admission.get(topic);
    return row && view(row.record);
  }

  setAdmission(topic: Uint8Array, record: Uint8Array): void {
    checkId(topic, 'topic');
    this.#sql.setAdmission.run(topic, record);
  }

  noteInvited(topic: Uint8Array, endpoint: Uint8Array, invite: Uint8Array): void {
    this.#check(topic, endpoint);
    this.#sql.noteInvited.run(topic, endpoint, invite);
  }

  invitedWith(topic: Uint8Array, endpoint: Uint8Array): Uint8Array | undefined {
    this.#check(topic, endpoint);
    const row = this.#sql.invitedWith.get(topic, endpoint);
    return row && view(row.invite);
  }

  forgetInvited(topic: Uint8Array, endpoint: Uint8Array): void {
    this.#check(topic, endpoint);
    this.#sql.dropInvited.run(topic, endpoint);
  }

  endpointsOf(topic: Uint8Array): Uint8Array[] {
    checkId(topic, 'topic');
    return this.#sql.endpointsOf.all(topic, topic).map((r) => view(r.endpoint));
  }

  dropEndpoint(topic: Uint8Array, endpoint: Uint8Array): number {
    this.#check(topic, endpoint);
    return this.#dropTx(topic, endpoint);
  }

  close(): void {
    if (this.#db.open) this.#db.close();
  }

  #check(topic: Uint8Array, endpoint: Uint8Array): void {
    checkId(topic, 'topic');
    checkId(endpoint, 'endpoint');
  }

  #usage(topic: Uint8Array, recipient: Uint8Array): Usage {
    this.#check(topic, recipient);
    return this.#sql.usage.get(topic, recipient) ?? { frames: 0, bytes: 0 };
  }

  #enqueueInTx(
    topic: Uint8Array,
    recipient: Uint8Array,
    sender: Uint8Array,
    body: Uint8Array,
  ): Result<number, MailboxError> {
    const usage = this.#sql.usage.get(topic, recipient) ?? { frames: 0, bytes: 0 };
    const full = overLimit(this.#limits, usage.frames, usage.bytes, body.length);
    if (full) return full;
    const info = this.#sql.insert.run(topic, recipient, sender, body, body.length);
    this.#sql.addUsage.run({ topic, recipient, frames: 1, bytes: body.length });
    return ok(Number(info.lastInsertRowid));
  }

  #ackInTx(topic: Uint8Array, recipient: Uint8Array, ids: readonly number[]): number {
    let frames = 0;
    let bytes = 0;
    for (const id of new Set(ids)) {
      const row = this.#sql.remove.get(topic, recipient, id);
      if (row === undefined) continue;
      frames += 1;
      bytes += row.size;
    }
    if (frames === 0) return 0;
    this.#sql.addUsage.run({ topic, recipient, frames: -frames, bytes: -bytes });
    this.#sql.dropEmpty.run(topic, recipient);
    return frames;
  }
}
