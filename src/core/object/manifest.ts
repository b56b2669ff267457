/**
 * ObjectManifest (SOP/1): an object's provenance and the pruning statistics a
 * planner needs, signed by its producer, sealed once under the object's
 * manifest key and never re-encrypted. It lives in the encrypted catalog,
 * never in the object.
 *
 *   body    deterministic CBOR map (cbor.ts) of the fields below
 *   signed  Ed25519 over "sov/1/manifest" ‖ body, by the producer's signing key
 *   sealed  nonce(12) ‖ AES-256-GCM(manifestKey, nonce, "sov/1/manifest" ‖ storage_id)
 *             .encrypt(cbor([body, signature]))
 *
 * Column bounds travel as their Parquet plain encoding (exact for every type,
 * infinities included, which CBOR numbers here refuse) and are decoded by the
 * schema. A manifest opened with the wrong object's key, altered, or signed by
 * anyone but the producer it names is a typed error.
 */
import { gcm } from '@noble/ciphers/aes.js';
import { bytesEqual, concat, fromHex, isBytes, toHex, utf8 } from '../bytes.js';
import { decodeCbor, encodeCbor, isRecord } from '../cbor.js';
import { isHlc, type Hlc } from '../hlc.js';
import type { Random, Signer, Verifier } from '../ports.js';
import { err, ok, type Result } from '../result.js';
import { isDomainName, type DomainName } from '../schema.js';
import { checkSchema, COLUMN_TYPES, type CellValue, type ColumnSpec, type ColumnType } from '../parquet/schema.js';
import { isStorageId, storageIdBytes, type StorageId } from './keys.js';

const LABEL = utf8('sov/1/manifest');
const NONCE_BYTES = 12;
export const MAX_MANIFEST_BYTES = 256 * 1024;

export type ColumnBounds = { readonly nulls: number; readonly min?: Uint8Array; readonly max?: Uint8Array };

export type ObjectManifest = {
  readonly storageId: StorageId;
  readonly domain: DomainName;
  readonly table: string;
  readonly schema: readonly ColumnSpec[];
  readonly rows: number;
  readonly bytes: number;
  /** The timestamp column that orders the rows in time, and its range (ms since the epoch). */
  readonly time?: { readonly column: string; readonly min: number; readonly max: number };
  readonly partitions: Readonly<Record<string, string>>;
  readonly columns: Readonly<Record<string, ColumnBounds>>;
  /** Hex Ed25519 public key of the machine that formed the object. */
  readonly producer: string;
  readonly hlc: Hlc;
  readonly supersedes: readonly StorageId[];
  /** The 8 bytes every row identity of this object begins with (hex). */
  readonly rowOrigin: string;
  /**
   * `delete`: a delete object (deletes.ts) — its rows are the identities of `table`'s rows it
   * hides, for good; absent for a data object.
   */
  readonly kind?: 'delete';
};

export type ManifestError =
  | { readonly type: 'ManifestUnreadable' }
  | { readonly type: 'ManifestMalformed'; readonly detail: string }
  | { readonly type: 'ManifestSignatureInvalid' }
  | { readonly type: 'ManifestMismatch'; readonly detail: string };

const TABLE = /^[a-z][a-z0-9_]{0,63}$/;

function sealAad(storageId: StorageId): Uint8Array {
  return concat(LABEL, storageIdBytes(storageId));
}

function encodeBody(m: ObjectManifest): Uint8Array {
  return encodeCbor({
    v: 1,
    id: m.storageId,
    domain: m.domain,
    table: m.table,
    schema: m.schema.map((c) => [c.name, c.type, c.nullable]),
    rows: m.rows,
    bytes: m.bytes,
    ...(m.time ? { time: [m.time.column, m.time.min, m.time.max] } : {}),
    parts: m.partitions,
    cols: Object.fromEntries(
      Object.entries(m.columns).map(([name, b]) => [name, [b.nulls, b.min ?? null, b.max ?? null]]),
    ),
    producer: m.producer,
    hlc: [m.hlc.ms, m.hlc.counter],
    sup: m.supersedes,
    origin: m.rowOrigin,
    ...(m.kind ? { kind: m.kind } : {}),
  });
}

const bad = (detail: string): Result<never, ManifestError> => err({ type: 'ManifestMalformed', detail });

const isCount = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;

function decodeBody(bytes: Uint8Array): Result<ObjectManifest, ManifestError> {
  const decoded = decodeCbor(bytes, MAX_MANIFEST_BYTES);
  if (!decoded.ok) return bad(decoded.error.reason);
  const m = decoded.value;
  if (!isRecord(m) || m['v'] !== 1) return bad('not a version 1 manifest');
  const { id, domain, table, schema, rows, bytes: size, time, parts, cols, producer, hlc, sup, origin, kind } = m;
  if (!isStorageId(id)) return bad('storage id');
  if (!isDomainName(domain)) return bad('domain');
  if (typeof table !== 'string' || !TABLE.test(table)) return bad('table');
  if (!Array.isArray(schema)) return bad('schema');
  const columns: ColumnSpec[] = [];
  for (const c of schema) {
    if (!Array.isArray(c) || c.length !== 3 || typeof c[0] !== 'string' || typeof c[2] !== 'boolean')
      return bad('schema column');
    if (!COLUMN_TYPES.includes(c[1] as ColumnType)) return bad('schema column type');
    columns.push({ name: c[0], type: c[1] as ColumnType, nullable: c[2] });
  }
  if (!checkSchema(columns).ok) return bad('schema');
  if (!isCount(rows) || !isCount(size)) return bad('counts');
  let timeRange: ObjectManifest['time'];
  if (time !== undefined) {
    if (
      !Array.isArray(time) ||
      typeof time[0] !== 'string' ||
      typeof time[1] !== 'number' ||
      typeof time[2] !== 'number'
    )
      return bad('time');
    timeRange = { column: time[0], min: time[1], max: time[2] };
  }
  if (!isRecord(parts) || !Object.values(parts).every((v) => typeof v === 'string')) return bad('partitions');
  if (!isRecord(cols)) return bad('columns');
  const bounds: Record<string, ColumnBounds> = {};
  for (const [name, b] of Object.entries(cols)) {
    if (!Array.isArray(b) || b.length !== 3 || !isCount(b[0])) return bad(`bounds of ${name}`);
    const [nulls, min, max] = b as [number, unknown, unknown];
    if ((min !== null && !isBytes(min)) || (max !== null && !isBytes(max))) return bad(`bounds of ${name}`);
    bounds[name] = { nulls, ...(min ? { min } : {}), ...(max ? { max } : {}) };
  }
  if (typeof producer !== 'string' || fromHex(producer)?.length !== 32) return bad('producer');
  if (!Array.isArray(hlc)) return bad('hlc');
  const [ms, counter] = hlc as unknown[];
  if (!isHlc({ ms, counter })) return bad('hlc');
  if (!Array.isArray(sup) || !sup.every(isStorageId)) return bad('supersedes');
  if (typeof origin !== 'string' || fromHex(origin)?.length !== 8) return bad('row origin');
  if (kind !== undefined && kind !== 'delete') return bad('kind');
  return ok({
    storageId: id,
    domain,
    table,
    schema: columns,
    rows,
    bytes: size,
    ...(timeRange ? { time: timeRange } : {}),
    partitions: parts as Record<string, string>,
    columns: bounds,
    producer,
    hlc: { ms: ms as number, counter: counter as number },
    supersedes: sup,
    rowOrigin: origin,
    ...(kind ? { kind } : {}),
  });
}

/** Signs the manifest as its producer and seals it under the object's manifest key. */
export async function sealManifest(
  manifest: ObjectManifest,
  signer: Signer,
  manifestKey: Uint8Array,
  random: Random,
): Promise<Uint8Array> {
  if (manifest.producer !== toHex(signer.publicKey))
    throw new Error('manifest: the producer must sign its own manifest');
  const body = encodeBody(manifest);
  const signature = await signer.sign(concat(LABEL, body));
  const nonce = random.bytes(NONCE_BYTES);
  return concat(nonce, gcm(manifestKey, nonce, sealAad(manifest.storageId)).encrypt(encodeCbor([body, signature])));
}

/**
 * Opens a sealed manifest of the object `storageId`: decrypts it, checks the
 * producer's signature and that the manifest names this object.
 */
export async function openManifest(
  sealed: Uint8Array,
  storageId: StorageId,
  manifestKey: Uint8Array,
  verifier: Verifier,
): Promise<Result<ObjectManifest, ManifestError>> {
  if (sealed.length < NONCE_BYTES + 16 || sealed.length > MAX_MANIFEST_BYTES)
    return err({ type: 'ManifestUnreadable' });
  let plain: Uint8Array;
  try {
    plain = gcm(manifestKey, sealed.subarray(0, NONCE_BYTES), sealAad(storageId)).decrypt(sealed.subarray(NONCE_BYTES));
  } catch {
    return err({ type: 'ManifestUnreadable' });
  }
  const outer = decodeCbor(plain, MAX_MANIFEST_BYTES);
  if (!outer.ok || !Array.isArray(outer.value) || outer.value.length !== 2) return bad('envelope');
  const [body, signature] = outer.value as unknown[];
  if (!isBytes(body) || !isBytes(signature, 64)) return bad('envelope');
  const manifest = decodeBody(body);
  if (!manifest.ok) return manifest;
  if (!bytesEqual(encodeBody(manifest.value), body)) return bad('not in canonical form');
  if (!(await verifier.verify(fromHex(manifest.value.producer)!, concat(LABEL, body), signature))) {
    return err({ type: 'ManifestSignatureInvalid' });
  }
  if (manifest.value.storageId !== storageId) return err({ type: 'ManifestMismatch', detail: 'names another object' });
  return manifest;
}

/** A column bound decoded by its type (the inverse of columns.ts `plainBound`). */
export function boundValue(type: ColumnType, bytes: Uint8Array): CellValue {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  switch (type) {
    case 'boolean':
      return bytes[0] === 1;
    case 'int32':
      return view.getInt32(0, true);
    case 'int64':
      return view.getBigInt64(0, true);
    case 'timestamp':
      return Number(view.getBigInt64(0, true));
    case 'float':
      return view.getFloat32(0, true);
    case 'double':
      return view.getFloat64(0, true);
    case 'string':
      return new TextDecoder().decode(bytes);
    case 'rowid':
      return bytes.slice();
  }
}
