/**
 * The Parquet worker's service (SOP/1, seed 003 "Writing an object"): forms encrypted
 * objects, keeps what it formed until publication, opens manifests and objects with the
 * generations this machine holds and exports them decrypted (object-reader.ts), and moves
 * object bytes to and from the relay's blind object store. Comlink exposes an instance in
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
import { fromBase64Url, toHex } from '../core/bytes.js';
import { encodeCbor } from '../core/cbor.js';
import { blake3 } from '../core/hash.js';
import { topicOf } from '../core/identity.js';
import { csvObject, tableName, type CsvImportError } from '../core/object/csv-import.js';
import { compactObjects, supersessions, type CompactError } from '../core/object/compact.js';
import { formDeleteObject, parseRowIds, type DeleteError } from '../core/object/deletes.js';
import { ObjectWriter, ROW_ORIGIN_BYTES, verifyStorageId, type FormedObject } from '../core/object/form.js';
import { isStorageId, objectKeys, storageIdBytes, type StorageId } from '../core/object/keys.js';
import { openManifest } from '../core/object/manifest.js';
import type { Clock } from '../core/ports.js';
import type { QueryResult, RowsFound } from '../core/query/execute.js';
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
import type { AccessKeys, GenerationMoved, NoDomainKey } from './access-keys.js';
import { systemClock } from './clock.js';
import { manifestView, type ManifestView } from './manifest-view.js';
import { accessOf, ObjectReader, type CatalogEntry, type ReadError } from './object-reader.js';
import { webPmeCipher } from './pme-cipher.js';
import { httpBaseOf } from './relay-http-client.js';
import { RelayObjectClient } from './relay-objects-client.js';
import { unwrapSecret, wrapSecret } from '../storage/key-wrap.js';
import { webRandom, webSigner, webVerifier } from './webcrypto.js';
import { zstdCompression } from './zstd.js';
import { blobText, sampleGroups, SAMPLE_COLUMNS } from './sample-objects.js';
import type { Codec } from '../core/parquet/write.js';

/** A sealed manifest travels in one state-plane cell (core/event.ts MAX_VALUE_CHARS, base64url). */
export const MAX_SEALED_MANIFEST = 12 * 1024;

export type ObjectError =
  | DeleteError
  | ReadError
  | CsvImportError
  | NoDomainKey
  | { readonly type: 'ManifestTooLarge'; readonly bytes: number }
  | GenerationMoved
  | { readonly type: 'NotPublishable'; readonly reason: string };

/** A compaction formed here: the new object, how many it supersedes, its rows and those left out as deleted. */
export type Compaction = {
  readonly object: PendingObject;
  readonly inputs: number;
  readonly rows: number;
  readonly dropped: number;
};

/** How long a superseded object's copy stays on a machine that reads it (a week). */
export const SUPERSEDED_GRACE_MS = 7 * 24 * 3600_000;

/** One object's new access record, from a rewrap. */
export type Rewrapped = { readonly id: string; readonly gen: number; readonly wrapped: Uint8Array };

export type { CatalogEntry } from './object-reader.js';
export type { ManifestView } from './manifest-view.js';

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

/**
 * How an import goes: rows written so far, its phase, and for a file, the bytes of it read
 * so far in this phase out of its size (a CSV file is read twice: once to infer its column
 * types, once to write them).
 */
export type ImportProgress = (
  rows: number,
  phase: 'reading' | 'writing' | 'storing',
  file?: { readonly read: number; readonly size: number },
) => void;

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
  /** Manifests, queries, exports: reading objects (object-reader.ts). */
  readonly #reader: ObjectReader;
  /** Manifests of objects formed here, opened for the page while they wait for publication. */
  readonly #pendingViews = new Map<string, ManifestView>();
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
    this.#reader = new ObjectReader({
      access,
      verifier: this.#verifier,
      localSecret: (id) => this.#localSecret(id),
      pendingManifest: async (id) => (await this.#db.pending(id))?.sealedManifest,
      bytes: (id) => this.#bytes(id),
      held: async (id) => (await this.#db.blob(id))?.bytes,
    });
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

  #client(): Result<RelayObjectClient, ReadError> {
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
    let written = 0;
    const text = blobText(file, (read, pass) =>
      progress?.(written, pass === 1 ? 'reading' : 'writing', { read, size: file.size }),
    );
    const formed = await csvObject(text, {
      ...(await this.#formOptions(options.domain, options.table ?? tableName(file.name ?? 'imported'))),
      progress: (rows) => progress?.((written = rows), 'writing'),
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
      ...(await this.#formOptions(options.domain, options.table ?? 'measurements')),
      columns: SAMPLE_COLUMNS,
      timeColumn: 'time',
    });
    if (!started.ok) return started;
    for (const group of sampleGroups(rows, this.#clock.now())) {
      const added = await started.value.add(group.cells);
      if (!added.ok) return added;
      progress?.(group.upto, 'writing');
    }
    const formed = await started.value.finish();
    if (!formed.ok) return formed;
    return this.#keep(formed.value, progress);
  }

  /**
   * Forms the delete objects hiding these rows of `table` (identities in hex, as a query
   * answers them: object/deletes.ts), one per domain the rows' objects are in — a delete
   * hides rows of its own domain only. Each waits here until published, like any object.
   */
  async deleteRows(options: {
    readonly table: string;
    readonly rowIds: readonly string[];
    readonly entries: readonly CatalogEntry[];
  }): Promise<Result<PendingObject[], ObjectError>> {
    const parsed = parseRowIds(options.rowIds);
    if (!parsed.ok) return parsed;
    const domainOf = new Map<string, DomainName>();
    for (const m of await this.#reader.readable(options.entries)) {
      if (m.kind === undefined && m.table === options.table) domainOf.set(m.rowOrigin, m.domain);
    }
    const byDomain = new Map<DomainName, string[]>();
    for (const id of parsed.value) {
      const domain = domainOf.get(id.slice(0, ROW_ORIGIN_BYTES * 2));
      if (domain === undefined) {
        return err({ type: 'InvalidDelete', detail: `no object of ${options.table} here holds row ${id}` });
      }
      byDomain.set(domain, [...(byDomain.get(domain) ?? []), id]);
    }
    const formed: PendingObject[] = [];
    for (const [domain, ids] of byDomain) {
      const ready = await this.#canForm(domain);
      if (!ready.ok) return ready;
      const object = await formDeleteObject(ids, await this.#formOptions(domain, options.table));
      if (!object.ok) return object;
      const kept = await this.#keep(object.value);
      if (!kept.ok) return kept;
      formed.push(kept.value);
    }
    return ok(formed);
  }

  /**
   * Compacts the small objects of `table` in `domain` into one (core/object/compact.ts): their
   * rows without the ones a delete hides, under a fresh secret; it supersedes them once
   * published. Nothing (undefined) when fewer than two objects are worth it.
   */
  async compact(options: {
    readonly domain: DomainName;
    readonly table: string;
    readonly entries: readonly CatalogEntry[];
    readonly deletable: readonly string[];
  }): Promise<Result<Compaction | undefined, ObjectError | CompactError>> {
    const ready = await this.#canForm(options.domain);
    if (!ready.ok) return ready;
    const taken = await this.#reader.compactionInputs(
      options.entries,
      options.domain,
      options.table,
      options.deletable,
    );
    if (!taken.ok) return taken;
    if (taken.value.inputs.length === 0) return ok(undefined);
    const compacted = await compactObjects(taken.value.inputs, {
      ...(await this.#formOptions(options.domain, options.table)),
      ...(taken.value.keepRow ? { keepRow: taken.value.keepRow } : {}),
    });
    if (!compacted.ok) return compacted;
    const kept = await this.#keep(compacted.value.formed);
    if (!kept.ok) return kept;
    const { rows, dropped } = compacted.value;
    return ok({ object: kept.value, inputs: taken.value.inputs.length, rows, dropped });
  }

  /**
   * Drops this machine's copies of objects a compaction superseded, once that compaction is
   * older than `graceMs` (by its clock): their rows live on in it. The relay keeps every object,
   * and so do machines that store a domain without reading it (they cannot see `sup`).
   */
  async dropSuperseded(entries: readonly CatalogEntry[], graceMs = SUPERSEDED_GRACE_MS): Promise<number> {
    const supersededAt = supersessions(await this.#reader.readable(entries));
    const now = this.#clock.now();
    let dropped = 0;
    for (const { id } of await this.#db.held()) {
      const at = supersededAt.get(id);
      if (at === undefined || now - at < graceMs || (await this.#db.pending(id))) continue;
      await this.#db.dropBlob(id);
      dropped++;
    }
    return dropped;
  }

  async #canForm(domain: DomainName): Promise<Result<void, ObjectError>> {
    if (!isDomainName(domain) || domain === 'CONTROL') return err({ type: 'NoDomainKey', domain });
    // Forming needs no key of the domain (publication does), but a machine that never held
    // one is not a reader of it and must not produce into it.
    if ((await this.#access.current(domain)) === undefined) return err({ type: 'NoDomainKey', domain });
    return ok(undefined);
  }

  async #formOptions(domain: DomainName, table: string) {
    const { identity } = this.#id();
    return {
      compression: await zstdCompression(),
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

  /**
   * Rotation by rewrap (SOP/1): for each catalog object of `domain`, a new access record
   * under the domain's current generation, which must be `gen` (`GenerationMoved`
   * otherwise: the caller plans again). The key holder opens and wraps each secret; the
   * object's bytes, storage id, manifest and producer signature are untouched. An object
   * none of whose records opens here is left out of the answer.
   */
  async rewrap(
    domain: DomainName,
    gen: number,
    entries: readonly CatalogEntry[],
  ): Promise<Result<Rewrapped[], ObjectError>> {
    const objects = entries.filter((e) => e.domain === domain && isStorageId(e.id) && e.access.length > 0);
    const records = await this.#access.rewrap(
      domain,
      gen,
      objects.map((e) => accessOf(e.id as StorageId, e)),
    );
    if (!records.ok) return records;
    return ok(records.value.flatMap((r) => (r ? [{ id: r.storageId, gen: r.gen, wrapped: r.wrapped }] : [])));
  }

  // ---- reading ------------------------------------------------------------------------

  /** Opens a catalog entry's manifest: decrypted, signature checked, and signed by the row's writer. */
  async openManifest(entry: CatalogEntry): Promise<Result<ManifestView, ObjectError>> {
    const opened = await this.#reader.manifest(entry);
    return opened.ok ? ok(manifestView(opened.value)) : opened;
  }

  /**
   * Runs SQL over the catalog entries this machine can read (ObjectReader.query). `id` names
   * the query for `cancelQuery`; the rest are top-level arguments so comlink can hand them
   * over as proxies.
   */
  query(
    sql: string,
    entries: readonly CatalogEntry[],
    id?: string,
    progress?: (done: number, total: number) => void,
    onRows?: RowsFound,
    deletable: readonly string[] = [],
  ): Promise<Result<QueryResult, ObjectError>> {
    return this.#reader.query(sql, entries, id, progress, onRows, deletable);
  }

  cancelQuery(id: string): Promise<void> {
    return this.#reader.cancelQuery(id);
  }

  /** How the objects formed here compress their pages: ZSTD, or Snappy where WebAssembly cannot start. */
  async compression(): Promise<Codec> {
    return (await zstdCompression()).codec;
  }

  /**
   * The object decrypted, as CSV (with `_row_id` in hex) or as a plaintext Parquet file,
   * without the rows the deletes among `catalog` hide (tables in `deletable` only).
   */
  export(
    entry: CatalogEntry,
    format: 'csv' | 'parquet',
    catalog: readonly CatalogEntry[] = [],
    deletable: readonly string[] = [],
  ): Promise<Result<Uint8Array, ObjectError>> {
    return this.#reader.export(entry, format, catalog, deletable);
  }

  /** The bytes of an object: held here, or fetched from the relay (verified) and kept. */
  async #bytes(id: string): Promise<Result<Uint8Array, ReadError>> {
    const held = await this.#db.blob(id);
    if (held) return ok(held.bytes);
    return this.fetchObject(id);
  }

  /** Fetches one object from the relay's blind store into this machine, verified against its id. */
  async fetchObject(id: string, domain?: DomainName): Promise<Result<Uint8Array, ReadError>> {
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
   * Holding is not reading: every key this machine holds tried on an object it holds,
   * through every access record given (ObjectReader.tryEveryKey). `NoKeyOpens` is the answer
   * for an object of a domain it does not read.
   */
  tryEveryKey(
    id: string,
    access: readonly { readonly domain: DomainName; readonly gen: number; readonly wrapped: Uint8Array }[] = [],
  ): Promise<Result<{ readonly opened: true }, ObjectError>> {
    return this.#reader.tryEveryKey(id, access);
  }
}

/** Decodes a base64url catalog cell; undefined when it is not one. */
export function catalogBytes(value: unknown): Uint8Array | undefined {
  return typeof value === 'string' ? fromBase64Url(value) : undefined;
}
