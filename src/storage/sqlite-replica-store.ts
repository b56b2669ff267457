/**
 * SQLite (better-sqlite3) adapter of the replica store, for machines that run in Node —
 * the headless node roles — with the same contract as the Dexie adapter
 * (test/storage/replica-store.test.ts runs both). One file per machine, WAL journal.
 *
 * `transact` is one SQLite transaction (BEGIN IMMEDIATE … COMMIT, ROLLBACK when the
 * callback throws) on the writing connection; transactions and writes outside them are
 * queued one behind the other. Reads outside a transaction go to a second, read-only
 * connection (WAL): they see only committed state, as with IndexedDB, and never wait
 * for a transaction — so a transaction's callback may read the store without deadlock.
 *
 * Records are stored as canonical CBOR (core/cbor.ts, written by sqlite-pack.ts) next to
 * the columns they are looked up by; absent optional fields are simply not in the map.
 *
 * Speed (bench merge, bench catchup-node): each SQL text is prepared once per connection;
 * the connection is tuned for a single owning process (`tune`); rows, heads and the clock
 * are upserted in place; the clock and chain heads, read and written by every event, are
 * kept for the length of a transaction and written once before COMMIT; a log record's
 * body is written from the event's signed bytes instead of being encoded again.
 */
import Database from 'better-sqlite3';
import { decodeCbor, decodeMapFields } from '../core/cbor.js';
import type { EventOp } from '../core/event.js';
import type { Hlc } from '../core/hlc.js';
import type { RowState } from '../core/merge.js';
import { stampedOf } from '../core/materialize.js';
import type { Awaitable } from '../core/steps.js';
import {
  MAX_REJECTION_RECORDS,
  refusalOf,
  rowKeyOf,
  type Refusal,
  type RefusalKind,
  type ChainHead,
  type LogEntry,
  type NewLogEntry,
  type ParkedEnvelope,
  type RejectionRecord,
  type ReasonCounts,
  type ReplicaStore,
  type ReplicaTx,
  type SealedEntry,
  type Resurrection,
  type WithheldRecord,
} from '../core/store.js';
import { pack } from './sqlite-pack.js';
import { migrateReasons, tune } from './sqlite-setup.js';

const SCHEMA = `
  CREATE TABLE IF NOT EXISTS log (
    pos INTEGER PRIMARY KEY,
    outer_id TEXT NOT NULL UNIQUE,
    event_id TEXT,
    row_key TEXT,
    op TEXT,
    signer TEXT,
    seq INTEGER,
    record BLOB NOT NULL
  );
  DROP INDEX IF EXISTS log_event;
  CREATE INDEX IF NOT EXISTS log_row ON log (row_key, op);
  CREATE INDEX IF NOT EXISTS log_signer ON log (signer, seq);
  CREATE INDEX IF NOT EXISTS log_opaque ON log (pos) WHERE event_id IS NULL;
  CREATE TABLE IF NOT EXISTS heads (chain TEXT PRIMARY KEY, seq INTEGER NOT NULL, event_id TEXT NOT NULL);
  CREATE TABLE IF NOT EXISTS rows (tbl TEXT NOT NULL, row TEXT NOT NULL, state BLOB NOT NULL, PRIMARY KEY (tbl, row));
  CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value BLOB NOT NULL);
  CREATE TABLE IF NOT EXISTS cursors (peer TEXT PRIMARY KEY, pos INTEGER NOT NULL);
  CREATE TABLE IF NOT EXISTS watermarks (peer TEXT PRIMARY KEY, pos INTEGER NOT NULL);
  CREATE TABLE IF NOT EXISTS parked (outer_id TEXT PRIMARY KEY, parked_at INTEGER NOT NULL, reason TEXT NOT NULL DEFAULT '', record BLOB NOT NULL);
  CREATE INDEX IF NOT EXISTS parked_at ON parked (parked_at);
  CREATE TABLE IF NOT EXISTS rejected (outer_id TEXT PRIMARY KEY, at INTEGER NOT NULL, reason TEXT NOT NULL DEFAULT '', record BLOB NOT NULL);
  CREATE INDEX IF NOT EXISTS rejected_at ON rejected (at);
  CREATE TABLE IF NOT EXISTS resurrections (
    key TEXT PRIMARY KEY, delete_id TEXT NOT NULL, edit_id TEXT NOT NULL, at INTEGER NOT NULL, record BLOB NOT NULL
  );
  CREATE INDEX IF NOT EXISTS resurrections_delete ON resurrections (delete_id);
  CREATE INDEX IF NOT EXISTS resurrections_edit ON resurrections (edit_id);
  CREATE INDEX IF NOT EXISTS resurrections_at ON resurrections (at);
  CREATE TABLE IF NOT EXISTS withheld (outer_id TEXT PRIMARY KEY, at INTEGER NOT NULL, reason TEXT NOT NULL DEFAULT '', record BLOB NOT NULL);
  CREATE INDEX IF NOT EXISTS withheld_at ON withheld (at);
`;

const MAX_RECORD = 1 << 24;
const HLC_KEY = 'hlc';

function unpack(bytes: Uint8Array): unknown {
  const decoded = decodeCbor(new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength), MAX_RECORD);
  if (!decoded.ok) throw new Error(`sqlite-store: a stored record does not decode (${decoded.error.reason})`);
  return decoded.value;
}

type LogRow = { pos: number; record: Uint8Array };

function logEntry(row: LogRow): LogEntry {
  return { ...(unpack(row.record) as NewLogEntry), pos: row.pos };
}

const SEALED_FIELDS: ReadonlySet<string> = new Set(['sealed', 'signer', 'lane', 'revoked']);

/** A record's sealed bytes, signer and lane, its body stepped over (a view: each row's record is its own buffer). */
function sealedEntry(row: LogRow): SealedEntry {
  const bytes = row.record;
  const fields = decodeMapFields(new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength), SEALED_FIELDS, {
    views: true,
  });
  if (!fields.ok) throw new Error(`sqlite-store: a stored record does not decode (${fields.error.reason})`);
  return { ...(fields.value as Omit<SealedEntry, 'pos'>), pos: row.pos };
}

/**
 * The prepared statements of one connection: each SQL text is prepared once, on its first
 * use. The texts are the store's own, plus `entriesByOuterId`'s lists of 1 to 500 ids: a
 * bounded set. better-sqlite3 resets a statement once it has answered, so a cached one
 * holds no read snapshot (which would keep checkpoints from completing).
 */
class Statements {
  readonly #db: Database.Database;
  readonly #prepared = new Map<string, Database.Statement>();

  constructor(db: Database.Database) {
    this.#db = db;
  }

  of(sql: string): Database.Statement {
    let statement = this.#prepared.get(sql);
    if (statement === undefined) {
      statement = this.#db.prepare(sql);
      this.#prepared.set(sql, statement);
    }
    return statement;
  }
}

/** A row's columns upserted in place: `INSERT OR REPLACE` deleted the old row and inserted a new one (two more pages). */
const PUT_ROW =
  'INSERT INTO rows (tbl, row, state) VALUES (?, ?, ?) ON CONFLICT (tbl, row) DO UPDATE SET state = excluded.state';
const PUT_META = 'INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value';
const PUT_HEAD =
  'INSERT INTO heads (chain, seq, event_id) VALUES (?, ?, ?) ON CONFLICT (chain) DO UPDATE SET seq = excluded.seq, event_id = excluded.event_id';

/**
 * What one transaction has read or written of the clock and the chain heads — each event
 * reads and writes both (and its chain head twice) — kept in memory and written once,
 * just before COMMIT; and the rows it read or wrote. Thrown away with the transaction
 * when it rolls back.
 */
class TxCache {
  /** undefined: not read yet; null: read, absent. */
  hlc: Hlc | null | undefined;
  hlcDirty = false;
  /**
   * Rows read or written, by row key (null: absent): authorising each event reads the
   * signer's keyring and roles rows, the same two rows for a whole batch.
   */
  readonly rows = new Map<string, RowState | null>();
  /** chain → head (null: absent); `dirtyHeads` names those to write. */
  readonly heads = new Map<string, ChainHead | null>();
  readonly dirtyHeads = new Set<string>();
}

export class SqliteReplicaStore implements ReplicaStore {
  readonly #db: Database.Database;
  readonly #sql: Statements;
  /** Committed state only (a second connection); the writer itself for ':memory:', which has no file to share. */
  readonly #reader: Database.Database;
  readonly #readSql: Statements;
  #queue: Promise<unknown> = Promise.resolve();

  /** `path`: a file, or ':memory:' for tests. */
  constructor(path: string) {
    this.#db = new Database(path);
    this.#db.pragma('journal_mode = WAL');
    this.#db.pragma('synchronous = FULL');
    tune(this.#db);
    this.#db.exec(SCHEMA);
    migrateReasons(this.#db);
    this.#sql = new Statements(this.#db);
    this.#reader = path === ':memory:' ? this.#db : new Database(path, { readonly: true, fileMustExist: true });
    this.#readSql = this.#reader === this.#db ? this.#sql : new Statements(this.#reader);
  }

  close(): void {
    if (this.#reader !== this.#db) this.#reader.close();
    this.#db.close();
  }

  #serial<T>(fn: () => Promise<T> | T): Promise<T> {
    const run = this.#queue.then(fn, fn);
    this.#queue = run.catch(() => undefined);
    return run;
  }

  transact<T>(fn: (tx: ReplicaTx) => Awaitable<T>): Promise<T> {
    return this.#serial(async () => {
      const sql = this.#sql;
      sql.of('BEGIN IMMEDIATE').run();
      try {
        const cache = new TxCache();
        const result = await fn(this.#tx(cache));
        this.#flush(cache);
        sql.of('COMMIT').run();
        return result;
      } catch (e) {
        // A failed statement may have ended the transaction already (SQLite rolls back on some errors).
        if (this.#db.inTransaction) sql.of('ROLLBACK').run();
        throw e;
      }
    });
  }

  /** Writes what the transaction's cache holds back to its tables. */
  #flush(cache: TxCache): void {
    if (cache.hlcDirty && cache.hlc) this.#sql.of(PUT_META).run(HLC_KEY, pack(cache.hlc));
    for (const chain of cache.dirtyHeads) {
      const head = cache.heads.get(chain)!;
      this.#sql.of(PUT_HEAD).run(chain, head.seq, head.eventId);
    }
  }

  /** Every answer is immediate (better-sqlite3 is synchronous), so the apply path runs without suspending (steps.ts). */
  #tx(cache: TxCache): ReplicaTx {
    const sql = this.#sql;
    // eslint-disable-next-line @typescript-eslint/no-unnecessary-type-parameters -- names the row shape a query returns
    const one = <T>(text: string, ...params: unknown[]) => sql.of(text).get(...params) as T | undefined;
    const all = <T>(text: string, ...params: unknown[]) => sql.of(text).all(...params) as T[];
    const run = (text: string, ...params: unknown[]) => sql.of(text).run(...params);
    // The body's signed bytes, when given, are its encoding already (the contract of `append`).
    const record = (entry: NewLogEntry, bodyBytes: Uint8Array | undefined) => [
      entry.outerId,
      entry.eventId ?? null,
      entry.rowKey ?? null,
      entry.op ?? null,
      entry.signer ?? null,
      entry.seq ?? null,
      pack(entry, entry.body && bodyBytes && { value: entry.body, bytes: bodyBytes }),
    ];
    const getHead = (chain: string): ChainHead | null => {
      let head = cache.heads.get(chain);
      if (head === undefined) {
        const row = one<{ seq: number; event_id: string }>('SELECT seq, event_id FROM heads WHERE chain = ?', chain);
        head = row ? { seq: row.seq, eventId: row.event_id } : null;
        cache.heads.set(chain, head);
      }
      return head;
    };
    const getHlc = (): Hlc | null => {
      if (cache.hlc === undefined) {
        const row = one<{ value: Uint8Array }>('SELECT value FROM meta WHERE key = ?', HLC_KEY);
        cache.hlc = row ? (unpack(row.value) as Hlc) : null;
      }
      return cache.hlc;
    };
    const stamps = (rowKey: string, op: EventOp) =>
      all<LogRow>('SELECT pos, record FROM log WHERE row_key = ? AND op = ? ORDER BY pos', rowKey, op).map(logEntry);
    return {
      getHlc: () => {
        const hlc = getHlc();
        return hlc === null ? undefined : { ...hlc };
      },
      setHlc: (hlc) => {
        cache.hlc = { ...hlc };
        cache.hlcDirty = true;
      },
      head: (chain) => {
        const head = getHead(chain);
        return head === null ? undefined : { seq: head.seq, eventId: head.eventId };
      },
      setHead: (chain, head) => {
        cache.heads.set(chain, { seq: head.seq, eventId: head.eventId });
        cache.dirtyHeads.add(chain);
      },
      hasOuterId: (id) => one('SELECT 1 AS x FROM log WHERE outer_id = ?', id) !== undefined,
      envelopeState: (outerId) => {
        const found = one<{ logged: number; rejected: number; withheld: Uint8Array | null }>(
          `SELECT EXISTS (SELECT 1 FROM log WHERE outer_id = @id) AS logged,
             EXISTS (SELECT 1 FROM rejected WHERE outer_id = @id) AS rejected,
             (SELECT record FROM withheld WHERE outer_id = @id) AS withheld`,
          { id: outerId },
        )!;
        return {
          logged: found.logged === 1,
          rejected: found.rejected === 1,
          withheld: found.withheld === null ? undefined : (unpack(found.withheld) as WithheldRecord),
        };
      },
      hasEvent: (signer, seq, id) =>
        one('SELECT 1 AS x FROM log WHERE signer = ? AND seq = ? AND event_id = ?', signer, seq, id) !== undefined,
      append: (entry, bodyBytes) =>
        Number(
          run(
            'INSERT INTO log (outer_id, event_id, row_key, op, signer, seq, record) VALUES (?, ?, ?, ?, ?, ?, ?)',
            ...record(entry, bodyBytes),
          ).lastInsertRowid,
        ),
      opaqueAfter: (after, limit) =>
        all<LogRow>(
          'SELECT pos, record FROM log WHERE event_id IS NULL AND pos > ? ORDER BY pos LIMIT ?',
          after,
          limit,
        ).map(logEntry),
      fill: (pos, entry, bodyBytes) => {
        const old = one<{ outer_id: string; event_id: string | null }>(
          'SELECT outer_id, event_id FROM log WHERE pos = ?',
          pos,
        );
        if (!old || old.event_id !== null || old.outer_id !== entry.outerId) {
          throw new Error('sqlite-store: fill names no opaque entry of that outer id');
        }
        run(
          'UPDATE log SET outer_id = ?, event_id = ?, row_key = ?, op = ?, signer = ?, seq = ?, record = ? WHERE pos = ?',
          ...record(entry, bodyBytes),
          pos,
        );
      },
      rowEntries: (rowKey, op?: EventOp) =>
        op === undefined
          ? all<LogRow>('SELECT pos, record FROM log WHERE row_key = ? ORDER BY pos', rowKey).map(logEntry)
          : stamps(rowKey, op),
      rowStamps: (rowKey, op) => stampedOf(stamps(rowKey, op)),
      signerEntriesAbove: (signer, seq) =>
        all<LogRow>('SELECT pos, record FROM log WHERE signer = ? AND seq > ? ORDER BY pos', signer, seq).map(logEntry),
      setRevoked: (pos, revoked) => {
        const row = one<LogRow>('SELECT pos, record FROM log WHERE pos = ?', pos);
        if (!row) return;
        const rest: { -readonly [K in keyof LogEntry]?: LogEntry[K] } = { ...logEntry(row) };
        delete rest.pos;
        delete rest.revoked;
        run('UPDATE log SET record = ? WHERE pos = ?', pack(revoked ? { ...rest, revoked: true } : rest), pos);
      },
      getRow: (table, row) => {
        const key = rowKeyOf(table, row);
        let state = cache.rows.get(key);
        if (state === undefined) {
          const found = one<{ state: Uint8Array }>('SELECT state FROM rows WHERE tbl = ? AND row = ?', table, row);
          state = found ? (unpack(found.state) as RowState) : null;
          cache.rows.set(key, state);
        }
        return state ?? undefined;
      },
      putRow: (state) => {
        run(PUT_ROW, state.table, state.row, pack(state));
        cache.rows.set(rowKeyOf(state.table, state.row), state);
      },
      deleteRow: (table, row) => {
        run('DELETE FROM rows WHERE tbl = ? AND row = ?', table, row);
        cache.rows.set(rowKeyOf(table, row), null);
      },
      park: (envelope) =>
        void run(
          'INSERT OR REPLACE INTO parked (outer_id, parked_at, reason, record) VALUES (?, ?, ?, ?)',
          envelope.outerId,
          envelope.parkedAt,
          envelope.reason,
          pack(envelope),
        ),
      unpark: (outerId) => void run('DELETE FROM parked WHERE outer_id = ?', outerId),
      isParked: (outerId) => one('SELECT 1 AS x FROM parked WHERE outer_id = ?', outerId) !== undefined,
      parkedAll: () =>
        all<{ record: Uint8Array }>('SELECT record FROM parked ORDER BY parked_at').map(
          (r) => unpack(r.record) as ParkedEnvelope,
        ),
      parkedCount: () => one<{ n: number }>('SELECT count(*) AS n FROM parked')!.n,
      recordRejection: (r) => {
        run(
          'INSERT OR REPLACE INTO rejected (outer_id, at, reason, record) VALUES (?, ?, ?, ?)',
          r.outerId,
          r.at,
          r.reason,
          pack(r),
        );
        const excess = one<{ n: number }>('SELECT count(*) AS n FROM rejected')!.n - MAX_REJECTION_RECORDS;
        if (excess > 0) {
          run('DELETE FROM rejected WHERE outer_id IN (SELECT outer_id FROM rejected ORDER BY at LIMIT ?)', excess);
        }
      },
      isRejected: (outerId) => one('SELECT 1 AS x FROM rejected WHERE outer_id = ?', outerId) !== undefined,
      rejectionReason: (outerId) => {
        const row = one<{ record: Uint8Array }>('SELECT record FROM rejected WHERE outer_id = ?', outerId);
        return row && (unpack(row.record) as RejectionRecord).reason;
      },
      withhold: (w) =>
        void run(
          'INSERT OR REPLACE INTO withheld (outer_id, at, reason, record) VALUES (?, ?, ?, ?)',
          w.outerId,
          w.at,
          w.reason,
          pack(w),
        ),
      withheldRecord: (outerId) => {
        const row = one<{ record: Uint8Array }>('SELECT record FROM withheld WHERE outer_id = ?', outerId);
        return row && (unpack(row.record) as WithheldRecord);
      },
      release: (outerId) => void run('DELETE FROM withheld WHERE outer_id = ?', outerId),
      addResurrection: (r) =>
        void run(
          'INSERT OR REPLACE INTO resurrections (key, delete_id, edit_id, at, record) VALUES (?, ?, ?, ?, ?)',
          r.key,
          r.deleteId,
          r.editId,
          r.at,
          pack(r),
        ),
      hasResurrection: (key) => one('SELECT 1 AS x FROM resurrections WHERE key = ?', key) !== undefined,
      dropResurrectionsOf: (eventId) =>
        void run('DELETE FROM resurrections WHERE delete_id = ? OR edit_id = ?', eventId, eventId),
      setWatermark: (peer, upto) =>
        void run(
          'INSERT INTO watermarks (peer, pos) VALUES (?, ?) ON CONFLICT (peer) DO UPDATE SET pos = max(pos, excluded.pos)',
          peer,
          upto,
        ),
    };
  }

  #all<T>(sql: string, ...params: unknown[]): Promise<T[]> {
    return Promise.resolve(this.#readSql.of(sql).all(...params) as T[]);
  }

  #one<T>(sql: string, ...params: unknown[]): Promise<T | undefined> {
    return Promise.resolve(this.#readSql.of(sql).get(...params) as T | undefined);
  }

  async entriesAfter(after: number, limit: number): Promise<LogEntry[]> {
    return (
      await this.#all<LogRow>('SELECT pos, record FROM log WHERE pos > ? ORDER BY pos LIMIT ?', after, limit)
    ).map(logEntry);
  }

  async sealedAfter(after: number, through: number, limit: number, except?: string): Promise<SealedEntry[]> {
    // A signer is never '': without `except`, nothing is left out.
    const rows = await this.#all<LogRow>(
      'SELECT pos, record FROM log WHERE pos > ? AND pos <= ? AND (signer IS NULL OR signer <> ?) ORDER BY pos LIMIT ?',
      after,
      through,
      except ?? '',
      limit,
    );
    return rows.map(sealedEntry);
  }

  /** The lane is inside each record here: the entries are read in pages and picked (SQLite reads them fast). */
  async laneAfter(lane: 'trusted' | 'local', after: number, through: number, limit: number): Promise<SealedEntry[]> {
    const found: SealedEntry[] = [];
    for (let next = after; next < through && found.length < limit;) {
      const page = (
        await this.#all<LogRow>(
          'SELECT pos, record FROM log WHERE pos > ? AND pos <= ? ORDER BY pos LIMIT ?',
          next,
          through,
          1024,
        )
      ).map(sealedEntry);
      if (page.length === 0) break;
      for (const entry of page) if (entry.lane === lane && found.length < limit) found.push(entry);
      next = page.at(-1)!.pos;
    }
    return found;
  }

  /** Envelopes held without being readable here (domains this machine is not a member of), oldest first. */
  async opaque(limit: number): Promise<LogEntry[]> {
    return (
      await this.#all<LogRow>('SELECT pos, record FROM log WHERE event_id IS NULL ORDER BY pos LIMIT ?', limit)
    ).map(logEntry);
  }

  async lastPos(): Promise<number> {
    return (await this.#one<{ pos: number | null }>('SELECT max(pos) AS pos FROM log'))?.pos ?? 0;
  }

  async cursor(peer: string): Promise<number> {
    return (await this.#one<{ pos: number }>('SELECT pos FROM cursors WHERE peer = ?', peer))?.pos ?? 0;
  }

  advanceCursor(peer: string, pos: number): Promise<void> {
    return this.#serial(() => {
      this.#sql
        .of(
          'INSERT INTO cursors (peer, pos) VALUES (?, ?) ON CONFLICT (peer) DO UPDATE SET pos = max(pos, excluded.pos)',
        )
        .run(peer, pos);
    });
  }

  async entriesByOuterId(outerIds: readonly string[]): Promise<LogEntry[]> {
    if (outerIds.length === 0) return [];
    const out: LogRow[] = [];
    // SQLite bounds the number of parameters of one statement.
    for (let i = 0; i < outerIds.length; i += 500) {
      const ids = outerIds.slice(i, i + 500);
      out.push(
        ...(await this.#all<LogRow>(
          `SELECT pos, record FROM log WHERE outer_id IN (${ids.map(() => '?').join(',')})`,
          ...ids,
        )),
      );
    }
    return out.sort((a, b) => a.pos - b.pos).map(logEntry);
  }

  async withheld(limit: number): Promise<WithheldRecord[]> {
    return (await this.#all<{ record: Uint8Array }>('SELECT record FROM withheld ORDER BY at LIMIT ?', limit)).map(
      (r) => unpack(r.record) as WithheldRecord,
    );
  }

  async watermark(peer: string): Promise<number> {
    return (await this.#one<{ pos: number }>('SELECT pos FROM watermarks WHERE peer = ?', peer))?.pos ?? 0;
  }

  async rows(table: string): Promise<RowState[]> {
    return (await this.#all<{ state: Uint8Array }>('SELECT state FROM rows WHERE tbl = ?', table)).map(
      (r) => unpack(r.state) as RowState,
    );
  }

  async row(table: string, row: string): Promise<RowState | undefined> {
    const found = await this.#one<{ state: Uint8Array }>(
      'SELECT state FROM rows WHERE tbl = ? AND row = ?',
      table,
      row,
    );
    return found && (unpack(found.state) as RowState);
  }

  async parked(limit: number): Promise<ParkedEnvelope[]> {
    return (await this.#all<{ record: Uint8Array }>('SELECT record FROM parked ORDER BY parked_at LIMIT ?', limit)).map(
      (r) => unpack(r.record) as ParkedEnvelope,
    );
  }

  async parkedCount(): Promise<number> {
    return (await this.#one<{ n: number }>('SELECT count(*) AS n FROM parked'))!.n;
  }

  async reasonCounts(): Promise<ReasonCounts> {
    const count = async (table: 'parked' | 'withheld' | 'rejected') =>
      Object.fromEntries(
        (
          await this.#all<{ reason: string; n: number }>(`SELECT reason, count(*) AS n FROM ${table} GROUP BY reason`)
        ).map((r) => [r.reason, r.n]),
      );
    return { parked: await count('parked'), withheld: await count('withheld'), rejected: await count('rejected') };
  }

  async refusals(kind: RefusalKind, offset: number, limit: number): Promise<Refusal[]> {
    const by = kind === 'parked' ? 'parked_at' : 'at';
    const rows = await this.#all<{ record: Uint8Array }>(
      `SELECT record FROM ${kind} ORDER BY ${by} DESC LIMIT ? OFFSET ?`,
      limit,
      offset,
    );
    return rows.map((r) => refusalOf(unpack(r.record) as ParkedEnvelope | WithheldRecord | RejectionRecord));
  }

  async rejections(limit: number): Promise<RejectionRecord[]> {
    return (await this.#all<{ record: Uint8Array }>('SELECT record FROM rejected ORDER BY at DESC LIMIT ?', limit)).map(
      (r) => unpack(r.record) as RejectionRecord,
    );
  }

  async resurrections(limit: number): Promise<Resurrection[]> {
    return (
      await this.#all<{ record: Uint8Array }>('SELECT record FROM resurrections ORDER BY at DESC LIMIT ?', limit)
    ).map((r) => unpack(r.record) as Resurrection);
  }

  async getMeta<T>(key: string): Promise<T | undefined> {
    const row = await this.#one<{ value: Uint8Array }>('SELECT value FROM meta WHERE key = ?', key);
    return row && (unpack(row.value) as T);
  }

  deleteMeta(key: string): Promise<void> {
    return this.#serial(() => {
      this.#sql.of('DELETE FROM meta WHERE key = ?').run(key);
    });
  }

  setMeta(key: string, value: unknown): Promise<void> {
    return this.#serial(() => {
      this.#sql.of(PUT_META).run(key, pack(value));
    });
  }
}
