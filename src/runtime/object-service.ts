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
import { fromBase64Url, fromHex, toHex } from '../core/bytes.js';
import { encodeCbor } from '../core/cbor.js';
import { blake3 } from '../core/hash.js';
import { topicOf } from '../core/identity.js';
import { verifyStorageId } from '../core/object/form.js';
import { isStorageId, objectKeys, storageIdBytes, type StorageId } from '../core/object/keys.js';
import { openManifest } from '../core/object/manifest.js';
import type { Clock } from '../core/ports.js';
import type { QueryResult, RowsFound } from '../core/query/execute.js';
import { err, ok, type Result } from '../core/result.js';
import type { DomainName } from '../core/schema.js';
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
} from '../storage/object-db.js';
import type { AccessKeys } from './access-keys.js';
import { RecoveryObjects } from './recovery-objects.js';
import { recoveryTags } from '../core/recovery/checkpoint.js';
import { ObjectForming, type ObjectError, type PendingObject } from './object-forming.js';
import { systemClock } from './clock.js';
import { manifestView, type ManifestView } from './manifest-view.js';
import { accessOf, ObjectReader, type CatalogEntry, type ReadError } from './object-reader.js';
import { httpBaseOf } from './relay-http-client.js';
import { RelayObjectClient, relayByteSource } from './relay-objects-client.js';
import { unwrapSecret } from '../storage/key-wrap.js';
import { webRandom, webSigner, webVerifier } from './webcrypto.js';
import { zstdCompression } from './zstd.js';
import type { Codec } from '../core/parquet/write.js';

/** One object's new access record, from a rewrap. */
export type Rewrapped = { readonly id: string; readonly gen: number; readonly wrapped: Uint8Array };

export type { CatalogEntry } from './object-reader.js';
export {
  MAX_SEALED_MANIFEST,
  SUPERSEDED_GRACE_MS,
  type Compaction,
  type ImportProgress,
  type ObjectError,
  type PendingObject,
} from './object-forming.js';
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
  /** Imports, deletes, compactions (object-forming.ts). */
  readonly #forming: ObjectForming;
  /** Checkpoints and recovery roots in the blind store (recovery-objects.ts). */
  readonly #recovery = new RecoveryObjects({
    client: () => this.#client(),
    group: () => this.#id().group,
    hasBlob: (id) => this.#db.hasBlob(id),
    placementTag: (domain) => placementTag(this.#id().group!, domain),
  });
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
      remote: (id, size, onFetched) => {
        if (!isStorageId(id)) return err({ type: 'UnknownObject', id });
        const client = this.#client();
        return client.ok ? ok(relayByteSource(client.value, storageIdBytes(id), size, onFetched)) : client;
      },
    });
    this.#forming = new ObjectForming({
      access,
      keys: this.#keys,
      db: this.#db,
      clock,
      reader: this.#reader,
      identity: () => this.#id(),
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

  // ---- forming (object-forming.ts) ------------------------------------------------------

  importCsv(...args: Parameters<ObjectForming['importCsv']>): ReturnType<ObjectForming['importCsv']> {
    return this.#forming.importCsv(...args);
  }

  importSample(...args: Parameters<ObjectForming['importSample']>): ReturnType<ObjectForming['importSample']> {
    return this.#forming.importSample(...args);
  }

  deleteRows(...args: Parameters<ObjectForming['deleteRows']>): ReturnType<ObjectForming['deleteRows']> {
    return this.#forming.deleteRows(...args);
  }

  compact(...args: Parameters<ObjectForming['compact']>): ReturnType<ObjectForming['compact']> {
    return this.#forming.compact(...args);
  }

  dropSuperseded(...args: Parameters<ObjectForming['dropSuperseded']>): ReturnType<ObjectForming['dropSuperseded']> {
    return this.#forming.dropSuperseded(...args);
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
  async fetchObject(id: string, domain?: DomainName, tag?: string): Promise<Result<Uint8Array, ReadError>> {
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
      ...(tag ? { tag } : {}),
      uploaded: true,
    });
    return ok(got.value);
  }

  // ---- recovery objects (recovery-objects.ts) -------------------------------------------
  readonly putRecovery: RecoveryObjects['put'] = (kind, bytes) => this.#recovery.put(kind, bytes);
  readonly recoveryRoots: RecoveryObjects['roots'] = (after) => this.#recovery.roots(after);
  readonly recoveryCheckpoint: RecoveryObjects['checkpoint'] = (id) => this.#recovery.checkpoint(id);
  readonly missingObjects: RecoveryObjects['missing'] = (objects) => this.#recovery.missing(objects);

  // ---- placement ----------------------------------------------------------------------

  async held(): Promise<HeldObject[]> {
    return (await this.#db.held()).map((b) => ({ id: b.id, size: b.size, domain: b.domain, uploaded: b.uploaded }));
  }

  /** Uploads every object formed here (published or waiting to be) that the relay does not hold yet. */
  async uploadPending(): Promise<Result<{ uploaded: number }, ObjectError>> {
    const client = this.#client();
    if (!client.ok) return client;
    const { group } = this.#id();
    // Before publication too (mesh-objects.ts: bytes, then access record, then manifest), but
    // never an object this machine may no longer publish.
    const refused = new Set((await this.#db.pendingAll()).filter((p) => p.refused).map((p) => p.id));
    const waiting = await this.#db.notUploaded();
    let uploaded = 0;
    for (const b of waiting) {
      if (refused.has(b.id)) continue;
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
   * A storage machine's placement: copies every object the relay holds for these domains that
   * this machine does not hold yet — and gives the relay back every object it placed here that
   * the relay no longer holds (`reseeded`: a relay that lost its store, or a new one, is filled
   * again from the archives). A machine placed for every domain names them all (mesh-objects.ts):
   * its listings look like any other storage machine's, one placement tag at a time, so the
   * relay cannot tell an archive from a store by how it lists (issue 26).
   */
  async place(
    domains: readonly DomainName[],
  ): Promise<Result<{ fetched: number; held: number; reseeded: number }, ObjectError>> {
    const client = this.#client();
    if (!client.ok) return client;
    const { group } = this.#id();
    // Storage machines keep the mesh's checkpoints and recovery roots whatever they place.
    const recovery = recoveryTags(group!);
    const tags = [...new Set(domains)].map((d) => placementTag(group!, d));
    tags.push(recovery.roots, recovery.checkpoints);
    let fetched = 0;
    let reseeded = 0;
    for (const tag of tags) {
      const listed = await client.value.listAll(tag);
      if (!listed.ok) return listed;
      const onRelay = new Set<string>();
      for (const o of listed.value) {
        const id = toHex(o.id);
        onRelay.add(id);
        if (await this.#db.hasBlob(id)) continue;
        const got = await this.fetchObject(id, undefined, toHex(o.tag));
        if (!got.ok) return got;
        fetched++;
      }
      const put = await this.#reseed(client.value, onRelay, toHex(tag));
      if (!put.ok) return put;
      reseeded += put.value;
    }
    return ok({ fetched, held: (await this.#db.held()).length, reseeded });
  }

  /** Uploads the copies held here under `tag` that the relay's listing lacks. */
  async #reseed(client: RelayObjectClient, onRelay: ReadonlySet<string>, tag: string) {
    let reseeded = 0;
    for (const b of await this.#db.held()) {
      if (b.tag !== tag || onRelay.has(b.id)) continue;
      const held = await this.#db.blob(b.id);
      const tagBytes = fromHex(b.tag);
      if (!held || !tagBytes || !isStorageId(b.id)) continue;
      const put = await client.upload(storageIdBytes(b.id), tagBytes, held.bytes);
      if (!put.ok) return put;
      reseeded++;
    }
    return ok(reseeded);
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
