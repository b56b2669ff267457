/**
 * Forming and opening SOP/1 objects ("Writing an object", "Reading").
 *
 * Forming: rows → encrypted Parquet under the DEK of a fresh object secret,
 * with the row-identity column `_row_id` appended (rowOrigin ‖ u64 BE ordinal,
 * unique per row and carried unchanged by any later compaction) → storage_id =
 * BLAKE3 of the bytes, hashed as they stream → the manifest (provenance and
 * pruning statistics), signed and sealed. The secret is returned to the caller,
 * who keeps it under machine-local protection until it publishes access records
 * (publication-time wrapping).
 *
 * Opening: the storage_id is recomputed first — a replica never reads bytes
 * that are not the object they claim to be — then the manifest is opened and
 * verified, then the Parquet footer decrypts under the DEK.
 */
import { concatAll, toHex } from '../bytes.js';
import type { Hlc } from '../hlc.js';
import { blake3Stream } from '../hash.js';
import type { Random, Signer, Verifier } from '../ports.js';
import { err, ok, type Result } from '../result.js';
import type { DomainName } from '../schema.js';
import type { ParquetError, PmeCipher } from '../parquet/modules.js';
import { openParquet, type ParquetFile, type ReadOptions } from '../parquet/read.js';
import { ROW_ID_BYTES, ROW_ID_COLUMN, type CellValue, type ColumnSpec } from '../parquet/schema.js';
import { EncryptedParquetWriter, type PageCompression, type WriteError } from '../parquet/write.js';
import { newObjectSecret, objectKeys, storageIdOf, type StorageId } from './keys.js';
import { openManifest, sealManifest, type ManifestError, type ObjectManifest } from './manifest.js';

export const ROW_ORIGIN_BYTES = 8;
export const DEFAULT_ROW_GROUP_ROWS = 100_000;

export type FormOptions = {
  readonly domain: DomainName;
  readonly table: string;
  /** The caller's columns; `_row_id` is added. */
  readonly columns: readonly ColumnSpec[];
  readonly timeColumn?: string;
  readonly partitions?: Readonly<Record<string, string>>;
  readonly supersedes?: readonly StorageId[];
  readonly signer: Signer;
  readonly random: Random;
  readonly cipher: PmeCipher;
  readonly hlc: Hlc;
  /** Receives the object's bytes as they are written; without it they are collected. */
  readonly sink?: (bytes: Uint8Array) => void | Promise<void>;
  readonly pageBytes?: number;
  /** Page compression (the runtime's ZSTD where it runs; Snappy otherwise). */
  readonly compression?: PageCompression;
  /** A delete object (deletes.ts); absent for data. */
  readonly kind?: 'delete';
};

export type FormedObject = {
  readonly storageId: StorageId;
  readonly secret: Uint8Array;
  readonly manifest: ObjectManifest;
  readonly sealedManifest: Uint8Array;
  /** The object's bytes, when no sink took them. */
  readonly bytes?: Uint8Array;
};

export type FormError = WriteError | { readonly type: 'InvalidObject'; readonly detail: string };

type Cells = Readonly<Record<string, readonly CellValue[]>>;

/** Writes one object a row group at a time: `add` a batch of columns, then `finish`. */
export class ObjectWriter {
  readonly #options: FormOptions;
  readonly #writer: EncryptedParquetWriter;
  readonly #secret: Uint8Array;
  readonly #origin: Uint8Array;
  readonly #collected: Uint8Array[] | undefined;
  readonly #hash: Awaited<ReturnType<typeof blake3Stream>>;
  #rows = 0;

  private constructor(
    options: FormOptions,
    writer: EncryptedParquetWriter,
    secret: Uint8Array,
    collected: Uint8Array[] | undefined,
    hash: Awaited<ReturnType<typeof blake3Stream>>,
  ) {
    this.#options = options;
    this.#writer = writer;
    this.#secret = secret;
    this.#origin = options.random.bytes(ROW_ORIGIN_BYTES);
    this.#collected = collected;
    this.#hash = hash;
  }

  static async start(options: FormOptions): Promise<Result<ObjectWriter, FormError>> {
    if (options.columns.some((c) => c.name === ROW_ID_COLUMN)) {
      return err({ type: 'InvalidObject', detail: `${ROW_ID_COLUMN} is added by the object writer` });
    }
    if (
      options.timeColumn !== undefined &&
      options.columns.find((c) => c.name === options.timeColumn)?.type !== 'timestamp'
    ) {
      return err({ type: 'InvalidObject', detail: `time column ${options.timeColumn} is not a timestamp column` });
    }
    const secret = newObjectSecret(options.random);
    const hash = await blake3Stream();
    const collected: Uint8Array[] | undefined = options.sink ? undefined : [];
    const sink = async (bytes: Uint8Array) => {
      hash.update(bytes);
      if (collected) collected.push(bytes);
      else await options.sink!(bytes);
    };
    const writer = await EncryptedParquetWriter.start({
      columns: [...options.columns, { name: ROW_ID_COLUMN, type: 'rowid', nullable: false }],
      footerKey: objectKeys(secret).dek,
      cipher: options.cipher,
      random: options.random,
      sink,
      createdBy: 'sovereign-mesh sop/1',
      ...(options.pageBytes !== undefined ? { pageBytes: options.pageBytes } : {}),
      ...(options.compression ? { compression: options.compression } : {}),
    });
    if (!writer.ok) return writer;
    return ok(new ObjectWriter(options, writer.value, secret, collected, hash));
  }

  /**
   * Adds one row group: the same number of cells for every column. `carried`: the rows'
   * identities, packed, when they come from other objects (compaction keeps them); new rows
   * get this object's origin and the next ordinals.
   */
  async add(cells: Cells, carried?: Uint8Array): Promise<Result<void, FormError>> {
    const first = this.#options.columns[0];
    const count = first ? (cells[first.name]?.length ?? 0) : 0;
    if (carried && carried.length !== count * ROW_ID_BYTES) {
      return err({ type: 'InvalidObject', detail: 'carried row identities do not match the rows' });
    }
    const ids = carried ?? new Uint8Array(count * ROW_ID_BYTES);
    const view = new DataView(ids.buffer, ids.byteOffset, ids.byteLength);
    for (let i = 0; i < count && !carried; i++) {
      ids.set(this.#origin, i * ROW_ID_BYTES);
      view.setBigUint64(i * ROW_ID_BYTES + ROW_ORIGIN_BYTES, BigInt(this.#rows + i));
    }
    const written = await this.#writer.writeRowGroup({
      ...cells,
      [ROW_ID_COLUMN]: { packed: ids, width: ROW_ID_BYTES },
    });
    if (!written.ok) return written;
    this.#rows += count;
    return ok(undefined);
  }

  async finish(): Promise<Result<FormedObject, FormError>> {
    const file = await this.#writer.finish();
    if (file.rows === 0) return err({ type: 'InvalidObject', detail: 'an object holds at least one row' });
    const storageId = storageIdOf(this.#hash.digest());
    const o = this.#options;
    const byName = Object.fromEntries(file.columns.map((c) => [c.name, c]));
    const time = o.timeColumn !== undefined ? byName[o.timeColumn] : undefined;
    const manifest: ObjectManifest = {
      storageId,
      domain: o.domain,
      table: o.table,
      schema: o.columns,
      rows: file.rows,
      bytes: file.bytes,
      ...(time && typeof time.min === 'number' && typeof time.max === 'number'
        ? { time: { column: o.timeColumn!, min: time.min, max: time.max } }
        : {}),
      partitions: o.partitions ?? {},
      columns: Object.fromEntries(
        o.columns.map((c) => {
          const s = byName[c.name]!;
          return [
            c.name,
            { nulls: s.nulls, ...(s.minBytes ? { min: s.minBytes } : {}), ...(s.maxBytes ? { max: s.maxBytes } : {}) },
          ];
        }),
      ),
      producer: toHex(o.signer.publicKey),
      hlc: o.hlc,
      supersedes: o.supersedes ?? [],
      rowOrigin: toHex(this.#origin),
      ...(o.kind ? { kind: o.kind } : {}),
    };
    const sealedManifest = await sealManifest(manifest, o.signer, objectKeys(this.#secret).manifestKey, o.random);
    const bytes = this.#collected ? concatAll(this.#collected) : undefined;
    return ok({ storageId, secret: this.#secret, manifest, sealedManifest, ...(bytes ? { bytes } : {}) });
  }
}

/** Forms one object from rows (objects keyed by column name), `rowGroupRows` rows per row group. */
export async function formObject(
  rows: readonly Readonly<Record<string, CellValue>>[],
  options: FormOptions & { readonly rowGroupRows?: number },
): Promise<Result<FormedObject, FormError>> {
  const started = await ObjectWriter.start(options);
  if (!started.ok) return started;
  const groupRows = options.rowGroupRows ?? DEFAULT_ROW_GROUP_ROWS;
  for (let from = 0; from < rows.length; from += groupRows) {
    const slice = rows.slice(from, from + groupRows);
    const cells: Record<string, CellValue[]> = {};
    for (const c of options.columns) cells[c.name] = slice.map((r) => r[c.name] ?? null);
    const added = await started.value.add(cells);
    if (!added.ok) return added;
  }
  return started.value.finish();
}

export type OpenError =
  | { readonly type: 'StorageIdMismatch'; readonly expected: StorageId; readonly actual: StorageId }
  | ManifestError
  | ParquetError;

/** Checks that `bytes` are the object `storageId` (BLAKE3 of the bytes). */
export async function verifyStorageId(bytes: Uint8Array, storageId: StorageId): Promise<Result<void, OpenError>> {
  const hash = await blake3Stream();
  hash.update(bytes);
  const actual = storageIdOf(hash.digest());
  return actual === storageId ? ok(undefined) : err({ type: 'StorageIdMismatch', expected: storageId, actual });
}

/** Opens an object given its secret: storage id, then manifest, then the Parquet footer. */
export async function openObject(
  bytes: Uint8Array,
  at: { readonly storageId: StorageId; readonly secret: Uint8Array; readonly sealedManifest: Uint8Array },
  deps: { readonly verifier: Verifier; readonly cipher: PmeCipher; readonly read?: ReadOptions },
): Promise<Result<{ manifest: ObjectManifest; file: ParquetFile }, OpenError>> {
  const verified = await verifyStorageId(bytes, at.storageId);
  if (!verified.ok) return verified;
  const keys = objectKeys(at.secret);
  const manifest = await openManifest(at.sealedManifest, at.storageId, keys.manifestKey, deps.verifier);
  if (!manifest.ok) return manifest;
  const file = await openParquet(bytes, { footerKey: keys.dek }, deps.cipher, deps.read);
  if (!file.ok) return file;
  if (file.value.rowCount !== manifest.value.rows) {
    return err({ type: 'ManifestMismatch', detail: 'row count differs from the object' });
  }
  return ok({ manifest: manifest.value, file: file.value });
}
