/**
 * The Parquet worker's service (SOP/1, seed 003 "Writing an object"): forms encrypted
 * objects, keeps what it formed until publication, opens manifests and objects with the
 * generations this machine holds, exports them decrypted, and moves object bytes to and
 * from the relay's blind object store. Comlink exposes an instance in
 * `workers/parquet.worker.ts`; tests drive it directly in Node (fake IndexedDB).
 *
 * Keys: this worker reads from the machine's key store the signing key (manifests), the
 * endpoint key (signed relay requests) and the group secret (topic and placement tags) —
 * non-extractable CryptoKeys or bytes wrapped under the non-extractable machine key. It
 * holds no domain key: the crypto worker is their one holder, and this worker asks it
 * (runtime/access-keys.ts) to wrap an object secret into an access record or to open
 * access records, getting object secrets back. A formed object's secret is wrapped under
 * the machine key (`object/<id>`) until publication, when it is wrapped under the domain's
 * then-current generation, so a producer that formed objects offline is never stranded on
 * a stale key. Nothing here logs or returns a key.
 */
import { bytesEqual, fromBase64Url, toHex } from '../core/bytes.js';
import { encodeCbor } from '../core/cbor.js';
import { blake3 } from '../core/hash.js';
import { topicOf } from '../core/identity.js';
import type { AccessRecord } from '../core/object/access.js';
import { csvObject, parquetCsv, tableName, type CsvImportError } from '../core/object/csv-import.js';
import { ObjectWriter, openObject, verifyStorageId, type FormedObject, type OpenError } from '../core/object/form.js';
import { isStorageId, objectKeys, storageIdBytes, type StorageId } from '../core/object/keys.js';
import { boundValue, openManifest, type ManifestError, type ObjectManifest } from '../core/object/manifest.js';
import type { Clock } from '../core/ports.js';
import { openParquet, type ParquetFile } from '../core/parquet/read.js';
import { ROW_ID_COLUMN, type CellValue, type ColumnSpec } from '../core/parquet/schema.js';
import { execute, type ExecuteError, type QueryResult, type RowsFound } from '../core/query/execute.js';
import { tableSchema } from '../core/query/plan.js';
import { bind, type QueryError } from '../core/query/query.js';
import { parseSql } from '../core/query/sql.js';
import { err, ok, type Result } from '../core/result.js';
import { isDomainName, type DomainName } from '../core/schema.js';
import {
  DexieKeyStore,
  keyStoreOf,
  type IdentityRecord,
  type KeyDatabase,
  type KeyStore,
} from '../storage/key-store.js';
import {
  DexieObjectStore,
  objectSecretName,
  objectStoreOf,
  type ObjectDatabase,
  type ObjectStore,
  type PendingRecord,
} from '../storage/object-db.js';
import type { AccessKeys, NoDomainKey, NoKeyOpens } from './access-keys.js';
import { systemClock } from './clock.js';
import { webPmeCipher } from './pme-cipher.js';
import { httpBaseOf } from './relay-http-client.js';
import { RelayObjectClient, type ObjectClientError } from './relay-objects-client.js';
import { unwrapSecret, wrapSecret } from '../storage/key-wrap.js';
import { webRandom, webSigner, webVerifier } from './webcrypto.js';

/** A sealed manifest travels in one state-plane cell (core/event.ts MAX_VALUE_CHARS, base64url). */
export const MAX_SEALED_MANIFEST = 12 * 1024;

export type ObjectError =
  | CsvImportError
  | OpenError
  | ManifestError
  | ObjectClientError
  | { readonly type: 'NotReady'; readonly reason: string }
  | NoDomainKey
  | { readonly type: 'ManifestTooLarge'; readonly bytes: number }
  | { readonly type: 'UnknownObject'; readonly id: string }
  /** No key this machine holds opens the object: the answer a storage-only machine expects. */
  | NoKeyOpens
  | { readonly type: 'ProducerMismatch'; readonly detail: string }
  | { readonly type: 'NotPublishable'; readonly reason: string }
  | QueryError
  | ExecuteError;

/** A manifest as the UI shows it: plain values only (structured-cloneable). */
export type ManifestView = {
  readonly storageId: string;
  readonly domain: DomainName;
  readonly table: string;
  readonly producer: string;
  readonly rows: number;
  readonly bytes: number;
  readonly time: { readonly column: string; readonly min: number; readonly max: number } | undefined;
  readonly partitions: Readonly<Record<string, string>>;
  readonly schema: readonly ColumnSpec[];
  readonly columns: readonly {
    readonly name: string;
    readonly nulls: number;
    readonly min: string | undefined;
    readonly max: string | undefined;
  }[];
  readonly formedAt: number;
};

/** What the catalog says about one object: where its records come from is the caller's business. */
export type CatalogEntry = {
  readonly id: string;
  readonly domain: DomainName;
  /** The signer whose row published the manifest (hex). */
  readonly producer: string;
  readonly sealedManifest: Uint8Array;
  readonly access: readonly { readonly gen: number; readonly wrapped: Uint8Array }[];
};

export type Publication = {
  readonly id: string;
  readonly domain: DomainName;
  readonly sealedManifest: Uint8Array;
  readonly gen: number;
  readonly wrapped: Uint8Array;
};

export type HeldObject = {
  readonly id: string;
  readonly size: number;
  readonly domain: string | undefined;
  readonly uploaded: boolean;
};

export type PendingObject = {
  readonly id: string;
  readonly domain: DomainName;
  readonly table: string;
  readonly refused: string | undefined;
  readonly manifest: ManifestView | undefined;
};

export type ImportProgress = (rows: number, phase: 'reading' | 'writing' | 'storing') => void;

const SAMPLE_DEVICES = ['north-shed', 'south-field', 'pump-house', 'weir', 'orchard', 'ridge'];
const SAMPLE_COLUMNS: readonly ColumnSpec[] = [
  { name: 'time', type: 'timestamp', nullable: false },
  { name: 'device', type: 'string', nullable: false },
  { name: 'temperature', type: 'double', nullable: true },
  { name: 'humidity', type: 'double', nullable: true },
  { name: 'pressure', type: 'double', nullable: true },
  { name: 'battery', type: 'double', nullable: true },
  { name: 'status', type: 'string', nullable: true },
];
const SAMPLE_GROUP_ROWS = 50_000;

/** How many query ids the service remembers as cancelled early, or as ended. */
const QUERY_IDS_KEPT = 256;

function keepNewest(ids: Set<string>, id: string): void {
  ids.delete(id);
  ids.add(id);
  for (const oldest of ids) {
    if (ids.size <= QUERY_IDS_KEPT) break;
    ids.delete(oldest);
  }
}

/** Reads a Blob's text in chunks (ReadableStream async iteration is not everywhere yet). */
function blobText(blob: Blob): () => AsyncIterable<string> {
  return async function* () {
    const reader = blob.stream().pipeThrough(new TextDecoderStream()).getReader();
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) return;
        yield value;
      }
    } finally {
      reader.releaseLock();
    }
  };
}

function boundText(spec: ColumnSpec, bytes: Uint8Array | undefined): string | undefined {
  if (!bytes) return undefined;
  const value = boundValue(spec.type, bytes);
  if (spec.type === 'timestamp' && typeof value === 'number') return new Date(value).toISOString();
  return value instanceof Uint8Array ? toHex(value) : String(value);
}

export function manifestView(m: ObjectManifest): ManifestView {
  return {
    storageId: m.storageId,
    domain: m.domain,
    table: m.table,
    producer: m.producer,
    rows: m.rows,
    bytes: m.bytes,
    time: m.time,
    partitions: m.partitions,
    schema: m.schema,
    columns: m.schema.map((spec) => {
      const b = m.columns[spec.name];
      return { name: spec.name, nulls: b?.nulls ?? 0, min: boundText(spec, b?.min), max: boundText(spec, b?.max) };
    }),
    formedAt: m.hlc.ms,
  };
}

/** The placement tag of a domain: the relay groups objects by it without learning the domain. */
export function placementTag(groupSecret: Uint8Array, domain: DomainName): Uint8Array {
  return blake3(encodeCbor(['sov/1/placement', groupSecret, domain]));
}

type Loaded = { identity: IdentityRecord; group: Uint8Array | undefined };

export class ObjectService {
  /** The domain keys' holder (the crypto worker), asked for access records and object secrets. */
  readonly #access: AccessKeys;
  readonly #keys: KeyStore;
  readonly #db: ObjectStore;
  readonly #clock: Clock;
  readonly #fetch: typeof fetch | undefined;
  readonly #verifier = webVerifier();
  /** Manifests opened here, by storage id, with the sealed bytes they were opened from. */
  readonly #manifests = new Map<string, { sealed: Uint8Array; manifest: ObjectManifest }>();
  /** Manifests of objects formed here, opened for the page while they wait for publication. */
  readonly #pendingViews = new Map<string, ManifestView>();
  /** Queries running, by the id their caller gave, to cancel them. */
  readonly #queries = new Map<string, AbortController>();
  /**
   * Ids cancelled before their query reached this service (the caller gathers the
   * catalog first): the query stops as it arrives. A cancel for a query that has
   * ended already (`#ended`) is no early cancel. Both keep only the newest QUERY_IDS_KEPT.
   */
  readonly #cancelledEarly = new Set<string>();
  readonly #ended = new Set<string>();
  #loaded: Loaded | undefined;
  #relay: RelayObjectClient | undefined;
  #relayUrl: string | undefined;

  constructor(
    access: AccessKeys,
    keys: KeyDatabase | KeyStore = new DexieKeyStore(),
    objects: ObjectDatabase | ObjectStore = new DexieObjectStore(),
    clock: Clock = systemClock,
    fetchImpl?: typeof fetch,
  ) {
    this.#access = access;
    this.#keys = keyStoreOf(keys);
    this.#db = objectStoreOf(objects);
    this.#clock = clock;
    this.#fetch = fetchImpl;
  }

  /**
   * Takes up what the key store holds now: identity and group secret. Run at start and
   * whenever the mesh may have changed (founded, joined, a new relay).
   */
  async reload(relayUrl?: string): Promise<void> {
    const identity = await this.#keys.identity();
    if (!identity) throw new Error('objects: this machine has no identity yet');
    const groupRecord = await this.#keys.secret('group');
    const group = groupRecord ? await unwrapSecret(identity.wrapping, 'group', groupRecord) : undefined;
    this.#loaded = { identity, group };
    if (relayUrl !== undefined) this.#relayUrl = relayUrl;
    this.#relay = undefined;
  }

  #id(): Loaded {
    if (!this.#loaded) throw new Error('objects: reload() first');
    return this.#loaded;
  }

  #client(): Result<RelayObjectClient, ObjectError> {
    if (this.#relay) return ok(this.#relay);
    const { identity, group } = this.#id();
    const baseUrl = this.#relayUrl === undefined ? undefined : httpBaseOf(this.#relayUrl);
    if (!group || baseUrl === undefined) return err({ type: 'NotReady', reason: 'objects: no mesh or no relay' });
    this.#relay = new RelayObjectClient({
      baseUrl,
      topic: topicOf(group),
      signer: webSigner({ keys: identity.endpoint, publicKey: identity.endpointPublic }),
      clock: this.#clock,
      random: webRandom,
      fetch: this.#fetch,
    });
    return ok(this.#relay);
  }

  // ---- forming ----------------------------------------------------------------------

  /** Forms one object of every row of a CSV file, in `domain`; it waits here until published. */
  async importCsv(
    file: Blob & { readonly name?: string },
    options: { readonly domain: DomainName; readonly table?: string },
    progress?: ImportProgress,
  ): Promise<Result<PendingObject, ObjectError>> {
    const ready = await this.#canForm(options.domain);
    if (!ready.ok) return ready;
    const formed = await csvObject(blobText(file), {
      ...this.#formOptions(options.domain, options.table ?? tableName(file.name ?? 'imported')),
      progress: (rows) => progress?.(rows, 'writing'),
    });
    if (!formed.ok) return formed;
    return this.#keep(formed.value, progress);
  }

  /** Forms an object of generated measurements (six devices, one reading a minute each, ending now). */
  async importSample(
    options: { readonly domain: DomainName; readonly rows: number; readonly table?: string },
    progress?: ImportProgress,
  ): Promise<Result<PendingObject, ObjectError>> {
    const ready = await this.#canForm(options.domain);
    if (!ready.ok) return ready;
    const rows = Math.max(1, Math.min(Math.floor(options.rows), 5_000_000));
    const started = await ObjectWriter.start({
      ...this.#formOptions(options.domain, options.table ?? 'measurements'),
      columns: SAMPLE_COLUMNS,
      timeColumn: 'time',
    });
    if (!started.ok) return started;
    const end = Math.floor(this.#clock.now() / 60_000) * 60_000;
    const start = end - Math.ceil(rows / SAMPLE_DEVICES.length) * 60_000;
    for (let from = 0; from < rows; from += SAMPLE_GROUP_ROWS) {
      const n = Math.min(SAMPLE_GROUP_ROWS, rows - from);
      const cells: Record<string, CellValue[]> = Object.fromEntries(SAMPLE_COLUMNS.map((c) => [c.name, []]));
      for (let i = from; i < from + n; i++) {
        const device = i % SAMPLE_DEVICES.length;
        const minute = Math.floor(i / SAMPLE_DEVICES.length);
        const phase = (minute / 1440) * 2 * Math.PI;
        const noise = webRandom.bytes(1)[0]! / 255 - 0.5;
        cells['time']!.push(start + minute * 60_000);
        cells['device']!.push(SAMPLE_DEVICES[device]!);
        cells['temperature']!.push(Math.round((12 + 8 * Math.sin(phase) + device + noise) * 100) / 100);
        cells['humidity']!.push(Math.round((60 - 20 * Math.sin(phase) + noise * 4) * 10) / 10);
        cells['pressure']!.push(i % 97 === 13 ? null : Math.round((1013 + 5 * Math.cos(phase / 7) + noise) * 10) / 10);
        cells['battery']!.push(Math.round(Math.max(0, 100 - minute / 200) * 10) / 10);
        cells['status']!.push(i % 211 === 7 ? 'fault' : i % 53 === 0 ? null : 'ok');
      }
      const added = await started.value.add(cells);
      if (!added.ok) return added;
      progress?.(from + n, 'writing');
    }
    const formed = await started.value.finish();
    if (!formed.ok) return formed;
    return this.#keep(formed.value, progress);
  }

  async #canForm(domain: DomainName): Promise<Result<void, ObjectError>> {
    if (!isDomainName(domain) || domain === 'CONTROL') return err({ type: 'NoDomainKey', domain });
    // Forming needs no key of the domain (publication does), but a machine that never held
    // one is not a reader of it and must not produce into it.
    if ((await this.#access.current(domain)) === undefined) return err({ type: 'NoDomainKey', domain });
    return ok(undefined);
  }

  #formOptions(domain: DomainName, table: string) {
    const { identity } = this.#id();
    return {
      domain,
      table,
      signer: webSigner({ keys: identity.signing, publicKey: identity.signingPublic }),
      random: webRandom,
      cipher: webPmeCipher,
      hlc: { ms: this.#clock.now(), counter: 0 },
    };
  }

  /** Stores a formed object and its secret (wrapped under the machine key) until publication. */
  async #keep(formed: FormedObject, progress?: ImportProgress): Promise<Result<PendingObject, ObjectError>> {
    if (formed.sealedManifest.length > MAX_SEALED_MANIFEST) {
      return err({ type: 'ManifestTooLarge', bytes: formed.sealedManifest.length });
    }
    progress?.(formed.manifest.rows, 'storing');
    const { identity } = this.#id();
    const id = formed.storageId;
    const secretName = objectSecretName(id);
    const wrapped = await wrapSecret(identity.wrapping, secretName, formed.secret);
    const bytes = formed.bytes!;
    const now = this.#clock.now();
    const pending: PendingRecord = {
      id,
      domain: formed.manifest.domain,
      table: formed.manifest.table,
      sealedManifest: formed.sealedManifest,
      formedAt: now,
    };
    await this.#keys.putSecrets([{ name: secretName, ...wrapped }]);
    await this.#db.keepFormed(
      { id, bytes, size: bytes.length, storedAt: now, domain: formed.manifest.domain, uploaded: false },
      pending,
    );
    return ok({ ...pending, refused: undefined, manifest: manifestView(formed.manifest) });
  }

  // ---- publication --------------------------------------------------------------------

  /**
   * Objects formed here and not yet published, with their manifests (opened with the
   * local secret once: the page asks on every change).
   */
  async pending(): Promise<PendingObject[]> {
    const out: PendingObject[] = [];
    for (const p of await this.#db.pendingAll()) {
      let view = this.#pendingViews.get(p.id);
      if (!view && !p.refused) {
        const secret = await this.#localSecret(p.id);
        const opened =
          secret &&
          (await openManifest(p.sealedManifest, p.id as StorageId, objectKeys(secret).manifestKey, this.#verifier));
        if (opened?.ok) this.#pendingViews.set(p.id, (view = manifestView(opened.value)));
      }
      out.push({ id: p.id, domain: p.domain, table: p.table, refused: p.refused, manifest: view });
    }
    return out;
  }

  async #localSecret(id: string): Promise<Uint8Array | undefined> {
    const name = objectSecretName(id);
    const record = await this.#keys.secret(name);
    return record && unwrapSecret(this.#id().identity.wrapping, name, record);
  }

  /**
   * The access record of a pending object under its domain's current generation — what
   * the caller publishes with the sealed manifest. The caller must have caught up with the
   * domain's group first (seed: "sealed under the then-current generation").
   */
  async publication(id: string): Promise<Result<Publication, ObjectError>> {
    const p = await this.#db.pending(id);
    if (!p || !isStorageId(id)) return err({ type: 'UnknownObject', id });
    if (p.refused) return err({ type: 'NotPublishable', reason: p.refused });
    const secret = await this.#localSecret(id);
    if (!secret) return err({ type: 'NotPublishable', reason: 'its object secret is gone from this machine' });
    const record = await this.#access.wrap(secret, { storageId: id, domain: p.domain });
    if (!record.ok) return record;
    const { gen, wrapped } = record.value;
    return ok({ id, domain: p.domain, sealedManifest: p.sealedManifest, gen, wrapped });
  }

  /** The publication is durable in the state plane: the local secret is no longer needed. */
  async published(id: string): Promise<void> {
    this.#pendingViews.delete(id);
    await this.#db.deletePending(id);
    await this.#keys.deleteSecrets([objectSecretName(id)]);
  }

  /**
   * This machine may no longer publish (it was removed): every pending object is refused
   * for good and its secret destroyed, so nothing formed here can later be unlocked.
   */
  async refuseAll(reason: string): Promise<number> {
    const pending = (await this.#db.pendingAll()).filter((p) => !p.refused);
    for (const p of pending) {
      await this.#keys.deleteSecrets([objectSecretName(p.id)]);
      await this.#db.putPending({ ...p, refused: reason });
    }
    return pending.length;
  }

  // ---- reading ------------------------------------------------------------------------

  /**
   * The object secrets of catalog entries, in order: the local one of an object formed here,
   * else one from its access records, which the key holder opens for every entry in one call.
   */
  async #secrets(entries: readonly CatalogEntry[]): Promise<Result<Uint8Array, ObjectError>[]> {
    const local = await Promise.all(entries.map((e) => this.#localSecret(e.id)));
    const asked = entries.flatMap((e, i) =>
      !local[i] && isStorageId(e.id) ? [{ i, records: accessOf(e.id, e) }] : [],
    );
    const opened = asked.length > 0 ? await this.#access.unwrap(asked.map((a) => a.records)) : [];
    const byIndex = new Map(asked.map((a, n) => [a.i, opened[n]!]));
    return entries.map((e, i) => {
      const secret = local[i];
      return secret ? ok(secret) : (byIndex.get(i) ?? err({ type: 'UnknownObject', id: e.id }));
    });
  }

  async #secretOf(entry: CatalogEntry): Promise<Result<Uint8Array, ObjectError>> {
    return (await this.#secrets([entry]))[0]!;
  }

  /** Opens a catalog entry's manifest: decrypted, signature checked, and signed by the row's writer. */
  async openManifest(entry: CatalogEntry): Promise<Result<ManifestView, ObjectError>> {
    const opened = await this.#manifest(entry);
    return opened.ok ? ok(manifestView(opened.value)) : opened;
  }

  /** `secret`, when the caller has it already (a query asks for all of its objects' at once). */
  async #manifest(
    entry: CatalogEntry,
    secret?: Result<Uint8Array, ObjectError>,
  ): Promise<Result<ObjectManifest, ObjectError>> {
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
    const manifest = await openManifest(
      entry.sealedManifest,
      entry.id as StorageId,
      objectKeys(opened.value).manifestKey,
      this.#verifier,
    );
    if (!manifest.ok) return manifest;
    if (manifest.value.producer !== entry.producer) {
      return err({ type: 'ProducerMismatch', detail: 'the manifest was signed by another machine than published it' });
    }
    if (manifest.value.domain !== entry.domain) {
      return err({ type: 'ManifestMismatch', detail: 'the manifest names another domain than its catalog row' });
    }
    this.#manifests.set(entry.id, { sealed: entry.sealedManifest.slice(), manifest: manifest.value });
    return manifest;
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
  ): Promise<Result<QueryResult, ObjectError>> {
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
      const secrets = await this.#secrets(entries);
      const manifests: ObjectManifest[] = [];
      const secretById = new Map<string, Result<Uint8Array, ObjectError>>();
      for (const [i, entry] of entries.entries()) {
        if (cancelled()) return err({ type: 'Cancelled' });
        const m = await this.#manifest(entry, secrets[i]);
        if (!m.ok) continue; // not readable here: not part of this machine's catalog
        manifests.push(m.value);
        secretById.set(entry.id, secrets[i]!);
      }
      const bound = bind(parsed.value, tableSchema(manifests, parsed.value.table));
      if (!bound.ok) return bound;
      return await execute(manifests, bound.value, {
        open: async (m) => {
          const secret = secretById.get(m.storageId)!;
          if (!secret.ok) return err({ type: 'ObjectUnavailable', id: m.storageId, reason: secret.error.type });
          const bytes = await this.#bytes(m.storageId);
          if (!bytes.ok) return err({ type: 'ObjectUnavailable', id: m.storageId, reason: bytes.error.type });
          return openParquet(bytes.value, { footerKey: objectKeys(secret.value).dek }, webPmeCipher);
        },
        signal: controller.signal,
        ...(options.progress ? { progress: options.progress } : {}),
        ...(options.onRows ? { onRows: options.onRows } : {}),
      });
    } finally {
      if (options.id && this.#queries.get(options.id) === controller) {
        this.#queries.delete(options.id);
        keepNewest(this.#ended, options.id);
      }
    }
  }

  async cancelQuery(id: string): Promise<void> {
    const running = this.#queries.get(id);
    if (running) return running.abort();
    if (!this.#ended.has(id)) keepNewest(this.#cancelledEarly, id);
  }

  async #open(entry: CatalogEntry): Promise<Result<ParquetFile, ObjectError>> {
    const secret = await this.#secretOf(entry);
    if (!secret.ok) return secret;
    const bytes = await this.#bytes(entry.id);
    if (!bytes.ok) return bytes;
    // An object not yet published has no catalog row: its sealed manifest is the pending record's.
    const sealedManifest =
      entry.sealedManifest.length > 0 ? entry.sealedManifest : (await this.#db.pending(entry.id))?.sealedManifest;
    if (!sealedManifest) return err({ type: 'UnknownObject', id: entry.id });
    const opened = await openObject(
      bytes.value,
      { storageId: entry.id as StorageId, secret: secret.value, sealedManifest },
      { verifier: this.#verifier, cipher: webPmeCipher },
    );
    return opened.ok ? ok(opened.value.file) : opened;
  }

  /** The object decrypted, as CSV (with `_row_id` in hex) or as a plaintext Parquet file. */
  async export(entry: CatalogEntry, format: 'csv' | 'parquet'): Promise<Result<Uint8Array, ObjectError>> {
    const file = await this.#open(entry);
    if (!file.ok) return file;
    if (format === 'csv') {
      const csv = await parquetCsv(file.value);
      return csv.ok ? ok(new TextEncoder().encode(csv.value)) : csv;
    }
    return plaintextParquet(file.value);
  }

  /** The bytes of an object: held here, or fetched from the relay (verified) and kept. */
  async #bytes(id: string): Promise<Result<Uint8Array, ObjectError>> {
    const held = await this.#db.blob(id);
    if (held) return ok(held.bytes);
    return this.fetchObject(id);
  }

  /** Fetches one object from the relay's blind store into this machine, verified against its id. */
  async fetchObject(id: string, domain?: DomainName): Promise<Result<Uint8Array, ObjectError>> {
    if (!isStorageId(id)) return err({ type: 'UnknownObject', id });
    const client = this.#client();
    if (!client.ok) return client;
    const got = await client.value.download(storageIdBytes(id));
    if (!got.ok) return got;
    const verified = await verifyStorageId(got.value, id);
    if (!verified.ok) return verified;
    await this.#db.putBlob({
      id,
      bytes: got.value,
      size: got.value.length,
      storedAt: this.#clock.now(),
      ...(domain ? { domain } : {}),
      uploaded: true,
    });
    return ok(got.value);
  }

  // ---- placement ----------------------------------------------------------------------

  async held(): Promise<HeldObject[]> {
    return (await this.#db.held()).map((b) => ({ id: b.id, size: b.size, domain: b.domain, uploaded: b.uploaded }));
  }

  /** Uploads every object formed here (and published) that the relay does not hold yet. */
  async uploadPending(): Promise<Result<{ uploaded: number }, ObjectError>> {
    const client = this.#client();
    if (!client.ok) return client;
    const { group } = this.#id();
    const pendingIds = new Set((await this.#db.pendingAll()).map((p) => p.id));
    const waiting = await this.#db.notUploaded();
    let uploaded = 0;
    for (const b of waiting) {
      if (pendingIds.has(b.id)) continue; // published first, so the catalog never names bytes nobody holds
      const put = await client.value.upload(
        storageIdBytes(b.id as StorageId),
        placementTag(group!, b.domain!),
        b.bytes,
      );
      if (!put.ok) return put;
      await this.#db.markUploaded(b.id);
      uploaded++;
    }
    return ok({ uploaded });
  }

  /**
   * A storage machine's placement: copies every object the relay holds for these domains
   * (or, with '*', for the whole mesh) that this machine does not hold yet.
   */
  async place(domains: readonly DomainName[] | '*'): Promise<Result<{ fetched: number; held: number }, ObjectError>> {
    const client = this.#client();
    if (!client.ok) return client;
    const { group } = this.#id();
    const tags = domains === '*' ? [null] : domains.map((d) => placementTag(group!, d));
    let fetched = 0;
    for (const tag of tags) {
      const listed = await client.value.listAll(tag);
      if (!listed.ok) return listed;
      for (const o of listed.value) {
        const id = toHex(o.id);
        if (await this.#db.hasBlob(id)) continue;
        const got = await this.fetchObject(id);
        if (!got.ok) return got;
        fetched++;
      }
    }
    return ok({ fetched, held: (await this.#db.held()).length });
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
  ): Promise<Result<{ readonly opened: true }, ObjectError>> {
    const held = await this.#db.blob(id);
    if (!held || !isStorageId(id)) return err({ type: 'UnknownObject', id });
    const records = access.map((a) => ({ storageId: id, domain: a.domain, gen: a.gen, wrapped: a.wrapped }));
    const tried = await this.#access.tryEveryKey(records);
    for (const secret of tried.secrets) {
      const file = await openParquet(held.bytes, { footerKey: objectKeys(secret).dek }, webPmeCipher);
      if (file.ok) return ok({ opened: true });
    }
    return err({ type: 'NoKeyOpens', keys: tried.keys, records: access.length });
  }
}

/** A catalog entry's access records, as core/object/access.ts takes them. */
function accessOf(storageId: StorageId, entry: CatalogEntry): AccessRecord[] {
  return entry.access.map((a) => ({ storageId, domain: entry.domain, gen: a.gen, wrapped: a.wrapped }));
}

/** Decodes a base64url catalog cell; undefined when it is not one. */
export function catalogBytes(value: unknown): Uint8Array | undefined {
  return typeof value === 'string' ? fromBase64Url(value) : undefined;
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

/** Rewrites an opened object as plaintext Parquet (hyparquet-writer), row ids as hex strings. */
async function plaintextParquet(file: ParquetFile): Promise<Result<Uint8Array, ObjectError>> {
  const { parquetWriteBuffer } = await import('hyparquet-writer');
  const names = [...new Set(file.columns.map((c) => c.name))];
  const columns = await file.readColumns({ columns: names });
  if (!columns.ok) return columns;
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
