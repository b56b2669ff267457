/**
 * Forming objects on this machine (SOP/1 "Writing an object"), for the Parquet worker's
 * ObjectService: CSV and sample imports, delete objects, compactions, and dropping the copies
 * a compaction superseded. Each formed object waits here, its secret wrapped under the machine
 * key (`object/<id>`), until ObjectService publishes it under the domain's then-current
 * generation. Forming needs no domain key, only that this machine reads the domain.
 */
import { csvObject, tableName, type CsvImportError } from '../core/object/csv-import.js';
import { compactObjects, supersessions, type CompactError } from '../core/object/compact.js';
import { formDeleteObject, parseRowIds, type DeleteError } from '../core/object/deletes.js';
import { ObjectWriter, ROW_ORIGIN_BYTES, type FormedObject } from '../core/object/form.js';
import type { Clock } from '../core/ports.js';
import { err, ok, type Result } from '../core/result.js';
import { isDomainName, type DomainName } from '../core/schema.js';
import type { IdentityRecord, KeyStore } from '../storage/key-store.js';
import { wrapSecret } from '../storage/key-wrap.js';
import { objectSecretName, type ObjectStore, type PendingRecord } from '../storage/object-db.js';
import type { AccessKeys, GenerationMoved, NoDomainKey } from './access-keys.js';
import { manifestView, type ManifestView } from './manifest-view.js';
import type { CatalogEntry, ObjectReader, ReadError } from './object-reader.js';
import { webPmeCipher } from './pme-cipher.js';
import { blobText, sampleGroups, SAMPLE_COLUMNS } from './sample-objects.js';
import { webRandom, webSigner } from './webcrypto.js';
import { zstdCompression } from './zstd.js';

/** A sealed manifest travels in one state-plane cell (core/event.ts MAX_VALUE_CHARS, base64url). */
export const MAX_SEALED_MANIFEST = 12 * 1024;

/** How long a superseded object's copy stays on a machine that reads it (a week). */
export const SUPERSEDED_GRACE_MS = 7 * 24 * 3600_000;

export type ObjectError =
  | DeleteError
  | ReadError
  | CsvImportError
  | NoDomainKey
  | { readonly type: 'ManifestTooLarge'; readonly bytes: number }
  | GenerationMoved
  | { readonly type: 'NotPublishable'; readonly reason: string };

export type PendingObject = {
  readonly id: string;
  readonly domain: DomainName;
  readonly table: string;
  readonly refused: string | undefined;
  readonly manifest: ManifestView | undefined;
};

/** A compaction formed here: the new object, how many it supersedes, its rows and those left out as deleted. */
export type Compaction = {
  readonly object: PendingObject;
  readonly inputs: number;
  readonly rows: number;
  readonly dropped: number;
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

export type FormingDeps = {
  /** The domain keys' holder: forming asks only whether this machine reads a domain. */
  readonly access: AccessKeys;
  readonly keys: KeyStore;
  readonly db: ObjectStore;
  readonly clock: Clock;
  readonly reader: ObjectReader;
  /** This machine's identity (ObjectService.reload). */
  readonly identity: () => { readonly identity: IdentityRecord };
};

export class ObjectForming {
  readonly #deps: FormingDeps;

  constructor(deps: FormingDeps) {
    this.#deps = deps;
  }

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
    for (const group of sampleGroups(rows, this.#deps.clock.now())) {
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
    for (const m of await this.#deps.reader.readable(options.entries)) {
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
    const taken = await this.#deps.reader.compactionInputs(
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
    const supersededAt = supersessions(await this.#deps.reader.readable(entries));
    const now = this.#deps.clock.now();
    let dropped = 0;
    for (const { id } of await this.#deps.db.held()) {
      const at = supersededAt.get(id);
      if (at === undefined || now - at < graceMs || (await this.#deps.db.pending(id))) continue;
      await this.#deps.db.dropBlob(id);
      dropped++;
    }
    return dropped;
  }

  async #canForm(domain: DomainName): Promise<Result<void, ObjectError>> {
    if (!isDomainName(domain) || domain === 'CONTROL') return err({ type: 'NoDomainKey', domain });
    // Forming needs no key of the domain (publication does), but a machine that never held
    // one is not a reader of it and must not produce into it.
    if ((await this.#deps.access.current(domain)) === undefined) return err({ type: 'NoDomainKey', domain });
    return ok(undefined);
  }

  async #formOptions(domain: DomainName, table: string) {
    const { identity } = this.#deps.identity();
    return {
      compression: await zstdCompression(),
      domain,
      table,
      signer: webSigner({ keys: identity.signing, publicKey: identity.signingPublic }),
      random: webRandom,
      cipher: webPmeCipher,
      hlc: { ms: this.#deps.clock.now(), counter: 0 },
    };
  }

  /** Stores a formed object and its secret (wrapped under the machine key) until publication. */
  async #keep(formed: FormedObject, progress?: ImportProgress): Promise<Result<PendingObject, ObjectError>> {
    if (formed.sealedManifest.length > MAX_SEALED_MANIFEST) {
      return err({ type: 'ManifestTooLarge', bytes: formed.sealedManifest.length });
    }
    progress?.(formed.manifest.rows, 'storing');
    const { identity } = this.#deps.identity();
    const id = formed.storageId;
    const secretName = objectSecretName(id);
    const wrapped = await wrapSecret(identity.wrapping, secretName, formed.secret);
    const bytes = formed.bytes!;
    const now = this.#deps.clock.now();
    const pending: PendingRecord = {
      id,
      domain: formed.manifest.domain,
      table: formed.manifest.table,
      sealedManifest: formed.sealedManifest,
      formedAt: now,
    };
    await this.#deps.keys.putSecrets([{ name: secretName, ...wrapped }]);
    await this.#deps.db.keepFormed(
      { id, bytes, size: bytes.length, storedAt: now, domain: formed.manifest.domain, uploaded: false },
      pending,
    );
    return ok({ ...pending, refused: undefined, manifest: manifestView(formed.manifest) });
  }
}
