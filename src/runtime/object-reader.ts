/**
 * Reading objects (seed 003 "Reading"), for the Parquet worker's service: opening manifests,
 * SQL over a catalog, exports, and the check that holding is not reading. An object's secret
 * is the local one of an object formed here, else it comes from the key holder, which opens
 * the object's access records (runtime/access-keys.ts) — for a query, for all of its objects
 * in one call. The secrets are used here and not kept; opened manifests are (they never
 * change).
 */
import { bytesEqual, toHex } from '../core/bytes.js';
import type { AccessRecord } from '../core/object/access.js';
import { parquetCsv } from '../core/object/csv-import.js';
import { compactionCandidates, type CompactInput } from '../core/object/compact.js';
import { deletedIds, isDeleteManifest, keepRows, Tombstones } from '../core/object/deletes.js';
import { openObject, type OpenError } from '../core/object/form.js';
import { isStorageId, objectKeys, type StorageId } from '../core/object/keys.js';
import { openManifest, type ObjectManifest } from '../core/object/manifest.js';
import { openParquet, type ByteSource, type ParquetFile } from '../core/parquet/read.js';
import { ROW_ID_COLUMN, type ColumnSpec } from '../core/parquet/schema.js';
import type { Verifier } from '../core/ports.js';
import { execute, type ExecuteError, type QueryResult, type RowsFound } from '../core/query/execute.js';
import { tableSchema } from '../core/query/plan.js';
import { bind, type QueryError } from '../core/query/query.js';
import { parseSql } from '../core/query/sql.js';
import { err, ok, type Result } from '../core/result.js';
import type { DomainName } from '../core/schema.js';
import type { AccessKeys, NoKeyOpens } from './access-keys.js';
import { webPmeCipher } from './pme-cipher.js';
import type { ObjectClientError } from './relay-objects-client.js';
import { zstdDecompressors } from './zstd.js';

/** What the catalog says about one object: where its records come from is the caller's business. */
export type CatalogEntry = {
  readonly id: string;
  readonly domain: DomainName;
  /** The signer whose row published the manifest (hex). */
  readonly producer: string;
  readonly sealedManifest: Uint8Array;
  readonly access: readonly { readonly gen: number; readonly wrapped: Uint8Array }[];
};

/** What reading an object may answer instead (ObjectError, object-service.ts, holds these). */
export type ReadError =
  | OpenError
  | ObjectClientError
  | { readonly type: 'NotReady'; readonly reason: string }
  | { readonly type: 'UnknownObject'; readonly id: string }
  /** No key this machine holds opens the object: the answer a storage-only machine expects. */
  | NoKeyOpens
  | { readonly type: 'ProducerMismatch'; readonly detail: string }
  | QueryError
  | ExecuteError;

/** What the reader needs of the service around it. */
export type ReaderDeps = {
  /** The domain keys' holder (the crypto worker), asked to open access records. */
  readonly access: AccessKeys;
  readonly verifier: Verifier;
  /** The secret of an object formed here and not yet published (kept under the machine key). */
  readonly localSecret: (id: string) => Promise<Uint8Array | undefined>;
  /** The sealed manifest of an object formed here and not yet published: it has no catalog row. */
  readonly pendingManifest: (id: string) => Promise<Uint8Array | undefined>;
  /** An object's bytes: held here, or fetched from the relay (verified) and kept. */
  readonly bytes: (id: string) => Promise<Result<Uint8Array, ReadError>>;
  /** An object's bytes if this machine holds them; never fetched. */
  readonly held: (id: string) => Promise<Uint8Array | undefined>;
  /**
   * An object this machine does not hold, read in ranges from the relay's blind store as a
   * query needs them (`size` from its signed manifest); `onFetched` is told each byte count.
   */
  readonly remote: (id: string, size: number, onFetched: (bytes: number) => void) => Result<ByteSource, ReadError>;
};

/** How many query ids the reader remembers as cancelled early, or as ended. */
const QUERY_IDS_KEPT = 256;

function keepNewest(ids: Set<string>, id: string): void {
  ids.delete(id);
  ids.add(id);
  for (const oldest of ids) {
    if (ids.size <= QUERY_IDS_KEPT) break;
    ids.delete(oldest);
  }
}

export class ObjectReader {
  readonly #deps: ReaderDeps;
  /** The row identities each delete object opened here names, by its storage id (objects never change). */
  readonly #deleted = new Map<string, ReadonlySet<string>>();
  /** Manifests opened here, by storage id, with the sealed bytes they were opened from. */
  readonly #manifests = new Map<string, { sealed: Uint8Array; manifest: ObjectManifest }>();
  /** Queries running, by the id their caller gave, to cancel them. */
  readonly #queries = new Map<string, AbortController>();
  /**
   * Ids cancelled before their query reached the reader (the caller gathers the
   * catalog first): the query stops as it arrives. A cancel for a query that has
   * ended already (`#ended`) is no early cancel. Both keep only the newest QUERY_IDS_KEPT.
   */
  readonly #cancelledEarly = new Set<string>();
  readonly #ended = new Set<string>();

  constructor(deps: ReaderDeps) {
    this.#deps = deps;
  }

  /**
   * The object secrets of catalog entries, in order: the local one of an object formed here,
   * else one from its access records, which the key holder opens for every entry in one call.
   */
  async #secrets(entries: readonly CatalogEntry[]): Promise<Result<Uint8Array, ReadError>[]> {
    const local = await Promise.all(entries.map((e) => this.#deps.localSecret(e.id)));
    const asked = entries.flatMap((e, i) =>
      !local[i] && isStorageId(e.id) ? [{ i, records: accessOf(e.id, e) }] : [],
    );
    const opened = asked.length > 0 ? await this.#deps.access.unwrap(asked.map((a) => a.records)) : [];
    const byIndex = new Map(asked.map((a, n) => [a.i, opened[n]!]));
    return entries.map((e, i) => {
      const secret = local[i];
      return secret ? ok(secret) : (byIndex.get(i) ?? err({ type: 'UnknownObject', id: e.id }));
    });
  }

  async #secretOf(entry: CatalogEntry): Promise<Result<Uint8Array, ReadError>> {
    return (await this.#secrets([entry]))[0]!;
  }

  /**
   * A catalog entry's manifest: decrypted, signature checked, and signed by the row's writer.
   * `secret`, when the caller has it already (a query asks for all of its objects' at once).
   */
  async manifest(
    entry: CatalogEntry,
    secret?: Result<Uint8Array, ReadError>,
  ): Promise<Result<ObjectManifest, ReadError>> {
    // A manifest never changes: other sealed bytes for the same id are opened (and refused) afresh.
    const cached = this.#manifests.get(entry.id);
    if (
      cached &&
      bytesEqual(cached.sealed, entry.sealedManifest) &&
      cached.manifest.producer === entry.producer &&
      cached.manifest.domain === entry.domain
    ) {
      return ok(cached.manifest);
    }
    const opened = secret ?? (await this.#secretOf(entry));
    if (!opened.ok) return opened;
    // An object formed here and not yet published has no catalog row: its pending record has the manifest.
    const sealed = entry.sealedManifest.length > 0 ? entry.sealedManifest : await this.#deps.pendingManifest(entry.id);
    if (!sealed) return err({ type: 'UnknownObject', id: entry.id });
    const manifest = await openManifest(
      sealed,
      entry.id as StorageId,
      objectKeys(opened.value).manifestKey,
      this.#deps.verifier,
    );
    if (!manifest.ok) return manifest;
    if (manifest.value.producer !== entry.producer) {
      return err({ type: 'ProducerMismatch', detail: 'the manifest was signed by another machine than published it' });
    }
    if (manifest.value.domain !== entry.domain) {
      return err({ type: 'ManifestMismatch', detail: 'the manifest names another domain than its catalog row' });
    }
    this.#manifests.set(entry.id, { sealed: sealed.slice(), manifest: manifest.value });
    return manifest;
  }

  /**
   * The manifests of the entries this machine can read, with each one's secret (asked for in
   * one call); undefined once `cancelled` says so.
   */
  async #readable(entries: readonly CatalogEntry[], cancelled: () => boolean = () => false) {
    const secrets = await this.#secrets(entries);
    const manifests: ObjectManifest[] = [];
    const secretById = new Map<string, Result<Uint8Array, ReadError>>();
    for (const [i, entry] of entries.entries()) {
      if (cancelled()) return undefined;
      const m = await this.manifest(entry, secrets[i]);
      if (!m.ok) continue; // not readable here: not part of this machine's catalog
      manifests.push(m.value);
      secretById.set(entry.id, secrets[i]!);
    }
    return { manifests, secretOf: (m: ObjectManifest) => secretById.get(m.storageId)! };
  }

  /** The manifests of the entries this machine can read. */
  async readable(entries: readonly CatalogEntry[]): Promise<ObjectManifest[]> {
    return (await this.#readable(entries))!.manifests;
  }

  /** The tombstones of `table`'s deletes among `manifests`, when its rows may be deleted. */
  #tableTombstones(
    manifests: readonly ObjectManifest[],
    table: string,
    deletable: readonly string[],
    secretOf: (m: ObjectManifest) => Result<Uint8Array, ReadError>,
  ): Promise<Result<Tombstones, ReadError>> {
    const deletes = deletable.includes(table) ? manifests.filter((m) => isDeleteManifest(m) && m.table === table) : [];
    return this.#tombstones(deletes, secretOf);
  }

  /**
   * What compacting `table` in `domain` takes (core/object/compact.ts): the small data objects
   * nothing sets aside, opened, and the filter that leaves out the rows a delete hides.
   */
  async compactionInputs(
    entries: readonly CatalogEntry[],
    domain: DomainName,
    table: string,
    deletable: readonly string[],
  ): Promise<
    Result<{ inputs: CompactInput[]; keepRow?: (rowId: Uint8Array, object: ObjectManifest) => boolean }, ReadError>
  > {
    const { manifests, secretOf } = (await this.#readable(entries))!;
    const picked = compactionCandidates(manifests, domain, table);
    if (picked.length === 0) return ok({ inputs: [] });
    const tombstones = await this.#tableTombstones(manifests, table, deletable, secretOf);
    if (!tombstones.ok) return tombstones;
    const inputs: CompactInput[] = [];
    for (const m of picked) {
      const file = await this.#openFile(m, secretOf(m));
      if (!file.ok) return file;
      inputs.push({ manifest: m, file: file.value });
    }
    const keepRow = tombstones.value.keepRow();
    return ok({ inputs, ...(keepRow ? { keepRow } : {}) });
  }

  /**
   * An object's Parquet file, decrypted under the DEK of its secret: from the copy held here,
   * else read in ranges from the relay — its tail, then only the column chunks the query
   * decodes (the rest of the object never leaves the relay). A ranged read cannot be checked
   * against the storage id (that hashes the whole), so the object must have an encrypted
   * footer: its footer and every module are sealed under this object's own key, and bytes
   * from anywhere else fail to open. `fetched` counts the bytes fetched.
   */
  async #openFile(
    m: ObjectManifest,
    secret: Result<Uint8Array, ReadError>,
    fetched?: { bytes: number },
  ): Promise<Result<ParquetFile, ExecuteError>> {
    if (!secret.ok) return err({ type: 'ObjectUnavailable', id: m.storageId, reason: secret.error.type });
    const held = await this.#deps.held(m.storageId);
    let input: Uint8Array | ByteSource;
    if (held) input = held;
    else {
      const remote = this.#deps.remote(m.storageId, m.bytes, (n) => {
        if (fetched) fetched.bytes += n;
      });
      if (!remote.ok) return err({ type: 'ObjectUnavailable', id: m.storageId, reason: remote.error.type });
      input = remote.value;
    }
    const file = await openParquet(input, { footerKey: objectKeys(secret.value).dek }, webPmeCipher, {
      decompressors: await zstdDecompressors(),
    });
    if (file.ok && !held && file.value.mode !== 'encrypted') {
      return err({ type: 'ObjectUnavailable', id: m.storageId, reason: 'HashMismatch' });
    }
    return file;
  }

  /**
   * Runs SQL over the catalog entries this machine can read (seed 003 "Reading"): the
   * plan is made on their manifests alone; only objects that survive it have their bytes
   * decrypted. Their secrets come first, from one call to the key holder for the lot (an
   * access record opens in microseconds; a round trip per object would cost more). `id`
   * names the query for `cancelQuery`.
   */
  async query(
    sql: string,
    entries: readonly CatalogEntry[],
    id?: string,
    /** Top-level arguments, so comlink can hand them over as proxies. */
    progress?: (done: number, total: number) => void,
    onRows?: RowsFound,
    /** The object tables whose rows may be deleted (`object_tables`): only their deletes apply. */
    deletable: readonly string[] = [],
  ): Promise<Result<QueryResult, ReadError>> {
    const options = { id, progress, onRows };
    // Cancellable from the first moment: opening the manifests of a large catalog takes a while too.
    const controller = new AbortController();
    if (options.id) this.#queries.set(options.id, controller);
    if (options.id && this.#cancelledEarly.delete(options.id)) controller.abort();
    // A function, not the property: a cancel lands between awaits.
    const cancelled = (): boolean => controller.signal.aborted;
    try {
      if (cancelled()) return err({ type: 'Cancelled' });
      const parsed = parseSql(sql);
      if (!parsed.ok) return parsed;
      const readable = await this.#readable(entries, cancelled);
      if (!readable) return err({ type: 'Cancelled' });
      const { manifests, secretOf } = readable;
      const table = parsed.value.table;
      const data = manifests.filter((m) => m.kind === undefined);
      const bound = bind(parsed.value, tableSchema(data, table));
      if (!bound.ok) return bound;
      const tombstones = await this.#tableTombstones(manifests, table, deletable, secretOf);
      if (!tombstones.ok) return tombstones;
      const keepRow = tombstones.value.keepRow();
      const fetched = { bytes: 0 };
      const result = await execute(data, bound.value, {
        withRowIds: true,
        ...(keepRow ? { keepRow } : {}),
        open: (m) => this.#openFile(m, secretOf(m), fetched),
        signal: controller.signal,
        ...(options.progress ? { progress: options.progress } : {}),
        ...(options.onRows ? { onRows: options.onRows } : {}),
      });
      return result.ok
        ? ok({ ...result.value, explain: { ...result.value.explain, bytesFetched: fetched.bytes } })
        : result;
    } finally {
      if (options.id && this.#queries.get(options.id) === controller) {
        this.#queries.delete(options.id);
        keepNewest(this.#ended, options.id);
      }
    }
  }

  /**
   * The identities the given delete objects name. One that cannot be read fails the lot: a
   * query or export that went on without it would show rows someone deleted.
   */
  async #tombstones(
    deletes: readonly ObjectManifest[],
    secretOf: (m: ObjectManifest) => Result<Uint8Array, ReadError>,
  ): Promise<Result<Tombstones, ReadError>> {
    const tombstones = new Tombstones();
    for (const m of deletes) {
      let ids = this.#deleted.get(m.storageId);
      if (!ids) {
        const file = await this.#openFile(m, secretOf(m));
        const read = file.ok ? await deletedIds(file.value) : file;
        if (!read.ok) {
          const reason = read.error.type === 'ObjectUnavailable' ? read.error.reason : read.error.type;
          return err({ type: 'ObjectUnavailable', id: m.storageId, reason });
        }
        ids = read.value;
        this.#deleted.set(m.storageId, ids);
      }
      tombstones.add(m.domain, ids);
    }
    return ok(tombstones);
  }

  async cancelQuery(id: string): Promise<void> {
    const running = this.#queries.get(id);
    if (running) return running.abort();
    if (!this.#ended.has(id)) keepNewest(this.#cancelledEarly, id);
  }

  async #open(entry: CatalogEntry): Promise<Result<ParquetFile, ReadError>> {
    const secret = await this.#secretOf(entry);
    if (!secret.ok) return secret;
    const bytes = await this.#deps.bytes(entry.id);
    if (!bytes.ok) return bytes;
    // An object not yet published has no catalog row: its sealed manifest is the pending record's.
    const sealedManifest =
      entry.sealedManifest.length > 0 ? entry.sealedManifest : await this.#deps.pendingManifest(entry.id);
    if (!sealedManifest) return err({ type: 'UnknownObject', id: entry.id });
    const opened = await openObject(
      bytes.value,
      { storageId: entry.id as StorageId, secret: secret.value, sealedManifest },
      { verifier: this.#deps.verifier, cipher: webPmeCipher, read: { decompressors: await zstdDecompressors() } },
    );
    return opened.ok ? ok(opened.value.file) : opened;
  }

  /**
   * The object decrypted, as CSV (with `_row_id` in hex) or as a plaintext Parquet file,
   * without the rows the deletes among `catalog` hide when its table's rows may be deleted.
   */
  async export(
    entry: CatalogEntry,
    format: 'csv' | 'parquet',
    catalog: readonly CatalogEntry[] = [],
    deletable: readonly string[] = [],
  ): Promise<Result<Uint8Array, ReadError>> {
    const file = await this.#open(entry);
    if (!file.ok) return file;
    const manifest = await this.manifest(entry);
    const table = manifest.ok ? manifest.value.table : undefined;
    let keepRow: ((rowId: Uint8Array) => boolean) | undefined;
    if (table !== undefined && manifest.ok && manifest.value.kind === undefined) {
      const { manifests, secretOf } = (await this.#readable(catalog.filter((e) => e.domain === entry.domain)))!;
      const tombstones = await this.#tableTombstones(manifests, table, deletable, secretOf);
      if (!tombstones.ok) return tombstones;
      const keep = tombstones.value.keepRow();
      const object = { domain: entry.domain };
      if (keep) keepRow = (rowId) => keep(rowId, object);
    }
    if (format === 'csv') {
      const csv = await parquetCsv(file.value, keepRow ? { keepRow } : {});
      return csv.ok ? ok(new TextEncoder().encode(csv.value)) : csv;
    }
    return plaintextParquet(file.value, keepRow);
  }

  /**
   * Holding is not reading: every key this machine holds — each generation of each
   * domain, through every access record given, whatever domain it names — tried on an
   * object it holds. `NoKeyOpens` is the answer for an object of a domain it does not read.
   *
   * A domain key is not also tried as the object's footer key: no object is encrypted
   * under one. The footer key is the object's DEK, derived from its own random secret
   * (core/object/keys.ts, form.ts); a domain key only ever wraps that secret into an
   * access record. And this worker, which forms every object here, holds no domain key
   * to form one with.
   */
  async tryEveryKey(
    id: string,
    access: readonly { readonly domain: DomainName; readonly gen: number; readonly wrapped: Uint8Array }[] = [],
  ): Promise<Result<{ readonly opened: true }, ReadError>> {
    const held = await this.#deps.held(id);
    if (!held || !isStorageId(id)) return err({ type: 'UnknownObject', id });
    const records = access.map((a) => ({ storageId: id, domain: a.domain, gen: a.gen, wrapped: a.wrapped }));
    const tried = await this.#deps.access.tryEveryKey(records);
    for (const secret of tried.secrets) {
      const file = await openParquet(held, { footerKey: objectKeys(secret).dek }, webPmeCipher);
      if (file.ok) return ok({ opened: true });
    }
    return err({ type: 'NoKeyOpens', keys: tried.keys, records: access.length });
  }
}

/** A catalog entry's access records, as core/object/access.ts takes them. */
export function accessOf(storageId: StorageId, entry: CatalogEntry): AccessRecord[] {
  return entry.access.map((a) => ({ storageId, domain: entry.domain, gen: a.gen, wrapped: a.wrapped }));
}

const PLAIN_TYPE = {
  boolean: 'BOOLEAN',
  int32: 'INT32',
  int64: 'INT64',
  float: 'FLOAT',
  double: 'DOUBLE',
  string: 'STRING',
  timestamp: 'TIMESTAMP',
  rowid: 'STRING',
} as const;

/**
 * Rewrites an opened object as plaintext Parquet (hyparquet-writer), row ids as hex strings,
 * without the rows `keepRow` refuses.
 */
async function plaintextParquet(
  file: ParquetFile,
  keepRow?: (rowId: Uint8Array) => boolean,
): Promise<Result<Uint8Array, ReadError>> {
  const { parquetWriteBuffer } = await import('hyparquet-writer');
  const names = [...new Set(file.columns.map((c) => c.name))];
  const columns = await file.readColumns({ columns: names });
  if (!columns.ok) return columns;
  if (keepRow) keepRows(columns.value, keepRow);
  const specs = new Map<string, ColumnSpec>();
  for (const c of file.columns) specs.set(c.name, { name: c.name, type: columnTypeOf(file, c.name), nullable: true });
  const data = names.map((name) => {
    const spec = specs.get(name)!;
    const values = columns.value[name]!;
    const converted =
      name === ROW_ID_COLUMN || spec.type === 'rowid'
        ? Array.from(values as ArrayLike<unknown>, (v) => (v instanceof Uint8Array ? toHex(v) : v))
        : values;
    return { name, data: converted as never, type: PLAIN_TYPE[spec.type], nullable: true };
  });
  return ok(new Uint8Array(parquetWriteBuffer({ columnData: data, createdBy: 'sovereign-mesh export' })));
}

/** Our column type of a top-level column of an opened file. */
function columnTypeOf(file: ParquetFile, name: string): ColumnSpec['type'] {
  if (name === ROW_ID_COLUMN) return 'rowid';
  const element = file.metadata.schema.find((e) => e.name === name);
  if (element?.logical_type?.type === 'TIMESTAMP' || element?.converted_type?.startsWith('TIMESTAMP'))
    return 'timestamp';
  switch (element?.type) {
    case 'BOOLEAN':
      return 'boolean';
    case 'INT32':
      return 'int32';
    case 'INT64':
      return 'int64';
    case 'FLOAT':
      return 'float';
    case 'DOUBLE':
      return 'double';
    default:
      return 'string';
  }
}
