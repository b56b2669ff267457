/**
 * Parquet Modular Encryption: modules, their AADs and the cipher port
 * (apache/parquet-format Encryption.md §4–§5).
 *
 *   module (GCM, §5.1)   u32 LE length ‖ nonce(12) ‖ ciphertext ‖ tag(16); length = 12 + ct + 16
 *   module (CTR, §4.2.2) u32 LE length ‖ nonce(12) ‖ ciphertext        (page bodies of AES_GCM_CTR_V1)
 *   AAD (§4.4)           aad_prefix ‖ aad_file_unique ‖ module_type(1)
 *                        ‖ row_group_ordinal(i16 LE) ‖ column_ordinal(i16 LE) ‖ page_ordinal(i16 LE)
 *                        — the footer has no ordinals; only data pages (2) and data page
 *                        headers (4) carry a page ordinal.
 *
 * AES itself is a port (`PmeCipher`): WebCrypto in browsers and Node (~240 MB/s here;
 * pure-JS GCM is ~10× slower), so bulk objects never run through JavaScript AES.
 * Nonces are random (12 bytes from the injected Random); a cipher instance is
 * bound to one key and never reuses a nonce.
 */
import { err, ok, type Result } from '../result.js';

export const MODULE = {
  FOOTER: 0,
  COLUMN_META: 1,
  DATA_PAGE: 2,
  DICTIONARY_PAGE: 3,
  DATA_PAGE_HEADER: 4,
  DICTIONARY_PAGE_HEADER: 5,
  COLUMN_INDEX: 6,
  OFFSET_INDEX: 7,
  BLOOM_HEADER: 8,
  BLOOM_BITSET: 9,
} as const;

export type ModuleType = (typeof MODULE)[keyof typeof MODULE];

export const NONCE_BYTES = 12;
export const TAG_BYTES = 16;
/** Length prefix, nonce and tag: what a GCM module adds to its plaintext. */
export const GCM_MODULE_OVERHEAD = 4 + NONCE_BYTES + TAG_BYTES;
/** Arrow's bound: page ordinals are i16. */
export const MAX_PAGES_PER_CHUNK = 32767;

/** AES-GCM / AES-CTR bound to one key (16, 24 or 32 bytes). */
export interface AesKey {
  /** ciphertext ‖ tag. */
  gcmEncrypt(nonce: Uint8Array, aad: Uint8Array, plain: Uint8Array): Promise<Uint8Array>;
  /** The plaintext, or undefined when the tag does not verify. */
  gcmDecrypt(nonce: Uint8Array, aad: Uint8Array, sealed: Uint8Array): Promise<Uint8Array | undefined>;
  /** AES-CTR with a 16-byte initial counter block (nonce ‖ 00000001), 32 counter bits. */
  ctrDecrypt(counter: Uint8Array, ciphertext: Uint8Array): Promise<Uint8Array>;
}

export const isAesKeyLength = (key: Uint8Array): boolean => key.length === 16 || key.length === 24 || key.length === 32;

export interface PmeCipher {
  key(raw: Uint8Array): Promise<AesKey>;
}

/** Why an encrypted Parquet file could not be read. Every one is a typed, expected failure. */
export type ParquetError =
  | { readonly type: 'NotParquet'; readonly detail: string }
  | { readonly type: 'Truncated'; readonly detail: string }
  | { readonly type: 'Malformed'; readonly detail: string }
  | { readonly type: 'Unsupported'; readonly detail: string }
  /** Wrong key, tampered bytes, or the wrong AAD prefix: GCM cannot tell them apart. */
  | { readonly type: 'DecryptFailed'; readonly module: string }
  | { readonly type: 'KeyMissing'; readonly column: string }
  /** A key that is not 16, 24 or 32 bytes long. */
  | { readonly type: 'KeyInvalid'; readonly column: string }
  | { readonly type: 'AadPrefixRequired' }
  | { readonly type: 'FooterSignatureInvalid' }
  /** A ranged source (source.ts) could not read bytes: the relay went away, refused, or answered otherwise. */
  | { readonly type: 'Unavailable'; readonly detail: string };

export type Ordinals = { readonly rowGroup?: number; readonly column?: number; readonly page?: number };

/** File-level AAD parts: the prefix (stored or supplied) and the file's unique bytes. */
export type FileAad = {
  readonly prefix: Uint8Array;
  readonly fileUnique: Uint8Array;
  /** DuckDB's own encrypted files: every module sealed with no AAD at all (read.ts `duckdbNoAad`). */
  readonly none?: boolean;
};

function i16(out: Uint8Array, at: number, value: number): void {
  if (!Number.isInteger(value) || value < 0 || value > 0x7fff) throw new Error(`pme: ordinal ${value} out of range`);
  out[at] = value & 0xff;
  out[at + 1] = value >> 8;
}

/** The AAD of one module (§4.4). */
export function moduleAad(file: FileAad, type: ModuleType, ordinals: Ordinals = {}): Uint8Array {
  if (file.none) return new Uint8Array(0);
  const base = file.prefix.length + file.fileUnique.length;
  const withOrdinals = type !== MODULE.FOOTER;
  const withPage = type === MODULE.DATA_PAGE || type === MODULE.DATA_PAGE_HEADER;
  const out = new Uint8Array(base + 1 + (withOrdinals ? 4 : 0) + (withPage ? 2 : 0));
  out.set(file.prefix, 0);
  out.set(file.fileUnique, file.prefix.length);
  out[base] = type;
  if (withOrdinals) {
    i16(out, base + 1, ordinals.rowGroup ?? 0);
    i16(out, base + 3, ordinals.column ?? 0);
  }
  if (withPage) i16(out, base + 5, ordinals.page ?? 0);
  return out;
}

/** length ‖ nonce ‖ ciphertext ‖ tag. */
export async function sealModule(
  key: AesKey,
  nonce: Uint8Array,
  aad: Uint8Array,
  plain: Uint8Array,
): Promise<Uint8Array> {
  const sealed = await key.gcmEncrypt(nonce, aad, plain);
  const out = new Uint8Array(4 + NONCE_BYTES + sealed.length);
  new DataView(out.buffer).setUint32(0, NONCE_BYTES + sealed.length, true);
  out.set(nonce, 4);
  out.set(sealed, 4 + NONCE_BYTES);
  return out;
}

/** The extent of the module starting at `at`: [start of its body, end). */
export function moduleAt(
  bytes: Uint8Array,
  at: number,
  what: string,
  /** Where `bytes` starts in its file (a column chunk read alone), for the messages. */
  base = 0,
): Result<{ body: Uint8Array; end: number }, ParquetError> {
  if (at < 0 || at + 4 > bytes.length)
    return err({ type: 'Truncated', detail: `${what}: no module length at ${base + at}` });
  const length = new DataView(bytes.buffer, bytes.byteOffset + at, 4).getUint32(0, true);
  const end = at + 4 + length;
  if (end > bytes.length)
    return err({ type: 'Truncated', detail: `${what}: module of ${length} bytes runs past the end` });
  return ok({ body: bytes.subarray(at + 4, end), end });
}

/** Opens a GCM module body (nonce ‖ ciphertext ‖ tag). */
export async function openGcmBody(
  key: AesKey,
  aad: Uint8Array,
  body: Uint8Array,
  what: string,
): Promise<Result<Uint8Array, ParquetError>> {
  if (body.length < NONCE_BYTES + TAG_BYTES) return err({ type: 'Malformed', detail: `${what}: module too short` });
  const plain = await key.gcmDecrypt(body.subarray(0, NONCE_BYTES), aad, body.subarray(NONCE_BYTES));
  return plain ? ok(plain) : err({ type: 'DecryptFailed', module: what });
}

/** Opens a CTR module body (nonce ‖ ciphertext); CTR has no tag, so nothing here detects tampering (§4.2.2). */
export async function openCtrBody(
  key: AesKey,
  body: Uint8Array,
  what: string,
): Promise<Result<Uint8Array, ParquetError>> {
  if (body.length < NONCE_BYTES) return err({ type: 'Malformed', detail: `${what}: module too short` });
  const counter = new Uint8Array(16);
  counter.set(body.subarray(0, NONCE_BYTES));
  counter[15] = 1;
  return ok(await key.ctrDecrypt(counter, body.subarray(NONCE_BYTES)));
}
