/**
 * The tail of a Parquet file (Encryption.md §5): the magic at both ends, the footer length,
 * and the footer itself — encrypted (`PARE`, FileCryptoMetaData then the sealed FileMetaData),
 * signed (`PAR1`, FileMetaData ‖ nonce ‖ tag) or plain — and the column metadata a column
 * key seals apart from the footer. What comes out is FileMetaData in the clear and how it
 * was protected; read.ts walks the column chunks from there.
 */
import { CompressionCodecs, Encodings, ParquetTypes } from 'hyparquet/src/constants.js';
import { parquetMetadata } from 'hyparquet/src/metadata.js';
import { deserializeTCompactProtocol } from 'hyparquet/src/thrift.js';
import type { ColumnMetaData, Compressors, FileMetaData } from 'hyparquet/src/types.js';
import { bytesEqual, fromUtf8 } from '../bytes.js';
import { guarded, malformed, PARSERS, u32 } from './decoding.js';
import { err, ok, type Result } from '../result.js';
import {
  isAesKeyLength,
  MODULE,
  moduleAad,
  moduleAt,
  NONCE_BYTES,
  openGcmBody,
  TAG_BYTES,
  type AesKey,
  type FileAad,
  type ParquetError,
  type PmeCipher,
} from './modules.js';

const PAR1 = 0x31524150;
const PARE = 0x45524150;
const SIGNATURE_BYTES = NONCE_BYTES + TAG_BYTES;

/** How to read besides the keys: decompressors that replace the core's pure-JavaScript ones (codecs.ts). */
export type ReadOptions = {
  /**
   * The runtime's faster ones, held to the same contract: give exactly the page's declared
   * length or throw (src/runtime/zstd.ts: the reference zstd in WebAssembly).
   */
  readonly decompressors?: Partial<Compressors>;
};

export type ReadKeys = {
  readonly footerKey?: Uint8Array;
  /** Column key by dotted path in schema (`int64_field.list.element`). */
  readonly columnKeys?: ReadonlyMap<string, Uint8Array>;
  /** Overrides a stored prefix; required when the file was written with supply_aad_prefix. */
  readonly aadPrefix?: Uint8Array;
  /**
   * Reads encrypted files DuckDB wrote: they carry no `aad_file_unique` and seal every module
   * with no AAD, so a module could be moved to another place, or another file of the same
   * key, and still decrypt. Off by default, and such a file is refused; never set for objects
   * of a mesh, whose writer follows the specification.
   */
  readonly duckdbNoAad?: boolean;
};

export type Algorithm = 'AES_GCM_V1' | 'AES_GCM_CTR_V1';

export type FooterMode = 'encrypted' | 'signed' | 'plaintext';

export type Cipher = { readonly key: AesKey; readonly algorithm: Algorithm; readonly aad: FileAad };

export type Tail = {
  readonly footer: Uint8Array;
  readonly mode: FooterMode;
  readonly algorithm?: Algorithm;
  readonly aad?: FileAad;
};

export type RawStruct = Record<string, unknown>;

export function rawStruct(bytes: Uint8Array, what: string): Result<{ value: RawStruct; end: number }, ParquetError> {
  return guarded(what, () => {
    const reader = { view: new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength), offset: 0 };
    const value = deserializeTCompactProtocol(reader);
    return { value, end: reader.offset };
  });
}

/** EncryptionAlgorithm union (parquet.thrift): AES_GCM_V1 = 1, AES_GCM_CTR_V1 = 2. */
function algorithmOf(
  raw: unknown,
  supplied: Uint8Array | undefined,
  duckdbNoAad = false,
): Result<{ algorithm: Algorithm; aad: FileAad }, ParquetError> {
  const union = raw as RawStruct | undefined;
  const gcm = union?.['field_1'] as RawStruct | undefined;
  const ctr = union?.['field_2'] as RawStruct | undefined;
  const chosen = gcm ?? ctr;
  if (!chosen) return err({ type: 'Unsupported', detail: 'unknown encryption algorithm' });
  const fileUnique = chosen['field_2'];
  if (!(fileUnique instanceof Uint8Array)) {
    if (duckdbNoAad && gcm) {
      return ok({
        algorithm: 'AES_GCM_V1',
        aad: { prefix: new Uint8Array(0), fileUnique: new Uint8Array(0), none: true },
      });
    }
    return err(
      malformed('encryption algorithm without aad_file_unique (as DuckDB writes; readable only with duckdbNoAad)'),
    );
  }
  const stored = chosen['field_1'] instanceof Uint8Array ? chosen['field_1'] : undefined;
  const mustSupply = chosen['field_3'] === true;
  const prefix = supplied ?? stored;
  if (mustSupply && !supplied) return err({ type: 'AadPrefixRequired' });
  return ok({
    algorithm: gcm ? 'AES_GCM_V1' : 'AES_GCM_CTR_V1',
    aad: { prefix: prefix ?? new Uint8Array(0), fileUnique },
  });
}

/** Finds the footer: the FileMetaData bytes in the clear and how they were protected. */
export async function readTail(
  bytes: Uint8Array,
  keys: ReadKeys,
  cipher: PmeCipher,
): Promise<Result<Tail, ParquetError>> {
  if (bytes.length < 12) return err({ type: 'Truncated', detail: 'shorter than magic, footer length and magic' });
  const head = u32(bytes, 0);
  const tail = u32(bytes, bytes.length - 4);
  if ((head !== PAR1 && head !== PARE) || tail !== head) {
    return err(
      head === PAR1 || head === PARE
        ? { type: 'Truncated', detail: 'closing magic missing' }
        : { type: 'NotParquet', detail: 'no Parquet magic' },
    );
  }
  const length = u32(bytes, bytes.length - 8);
  if (length > bytes.length - 12)
    return err({ type: 'Truncated', detail: `footer of ${length} bytes exceeds the file` });
  const region = bytes.subarray(bytes.length - 8 - length, bytes.length - 8);

  if (head === PARE) {
    const crypto = rawStruct(region, 'FileCryptoMetaData');
    if (!crypto.ok) return crypto;
    const algo = algorithmOf(crypto.value.value['field_1'], keys.aadPrefix, keys.duckdbNoAad);
    if (!algo.ok) return algo;
    if (!keys.footerKey) return err({ type: 'KeyMissing', column: '(footer)' });
    if (!isAesKeyLength(keys.footerKey)) return err({ type: 'KeyInvalid', column: '(footer)' });
    const module = moduleAt(region, crypto.value.end, 'footer');
    if (!module.ok) return module;
    const key = await cipher.key(keys.footerKey);
    const footer = await openGcmBody(key, moduleAad(algo.value.aad, MODULE.FOOTER), module.value.body, 'footer');
    if (!footer.ok) return footer;
    return ok({ footer: footer.value, mode: 'encrypted', ...algo.value });
  }

  const meta = rawStruct(region, 'FileMetaData');
  if (!meta.ok) return meta;
  if (meta.value.value['field_8'] === undefined) return ok({ footer: region, mode: 'plaintext' });
  // Signed plaintext footer (§5.5): FileMetaData ‖ nonce(12) ‖ tag(16).
  const algo = algorithmOf(meta.value.value['field_8'], keys.aadPrefix, keys.duckdbNoAad);
  if (!algo.ok) return algo;
  const footer = region.subarray(0, meta.value.end);
  const signature = region.subarray(meta.value.end);
  if (signature.length !== SIGNATURE_BYTES) return err(malformed('plaintext footer signature is not 28 bytes'));
  if (keys.footerKey) {
    if (!isAesKeyLength(keys.footerKey)) return err({ type: 'KeyInvalid', column: '(footer)' });
    const key = await cipher.key(keys.footerKey);
    const nonce = signature.subarray(0, NONCE_BYTES);
    const sealed = await key.gcmEncrypt(nonce, moduleAad(algo.value.aad, MODULE.FOOTER), footer);
    if (!bytesEqual(sealed.subarray(sealed.length - TAG_BYTES), signature.subarray(NONCE_BYTES))) {
      return err({ type: 'FooterSignatureInvalid' });
    }
  }
  return ok({ footer, mode: 'signed', ...algo.value });
}

export function asMetadata(footer: Uint8Array): Result<FileMetaData, ParquetError> {
  const framed = new Uint8Array(footer.length + 8);
  framed.set(footer);
  new DataView(framed.buffer).setUint32(footer.length, footer.length, true);
  new DataView(framed.buffer).setUint32(footer.length + 4, PAR1, true);
  return guarded('FileMetaData', () => parquetMetadata(framed, { parsers: PARSERS, geoparquet: false }));
}

/** ColumnMetaData decoded from an `encrypted_column_metadata` module (hyparquet parses it only inside a footer). */
export function columnMetaOf(raw: RawStruct): Result<ColumnMetaData, ParquetError> {
  const num = (v: unknown): bigint | undefined =>
    typeof v === 'bigint' ? v : Number.isSafeInteger(v) ? BigInt(v as number) : undefined;
  const type = ParquetTypes[raw['field_1'] as number];
  const codec = CompressionCodecs[raw['field_4'] as number];
  const path = raw['field_3'];
  const values = num(raw['field_5']);
  const dataOffset = num(raw['field_9']);
  const total = num(raw['field_7']);
  if (
    !type ||
    !codec ||
    !Array.isArray(path) ||
    values === undefined ||
    dataOffset === undefined ||
    total === undefined
  ) {
    return err(malformed('ColumnMetaData lacks a required field'));
  }
  const dictionaryOffset = num(raw['field_11']);
  return ok({
    type,
    encodings: ((raw['field_2'] as number[] | undefined) ?? []).map((e) => Encodings[e]!),
    path_in_schema: path.map((p) => fromUtf8(p as Uint8Array)),
    codec,
    num_values: values,
    total_uncompressed_size: num(raw['field_6']) ?? 0n,
    total_compressed_size: total,
    data_page_offset: dataOffset,
    ...(dictionaryOffset !== undefined ? { dictionary_page_offset: dictionaryOffset } : {}),
  });
}
