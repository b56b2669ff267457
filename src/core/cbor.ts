/**
 * Deterministic CBOR (RFC 8949 §4.2.1) for everything that is signed or hashed.
 *
 * Encoding sorts map keys bytewise and uses the shortest form of every item.
 * Decoding is strict: it refuses indefinite lengths, undefined, duplicate keys,
 * non-minimal integers and — by re-encoding — any input that is not already in
 * canonical form, so one logical value has exactly one byte string and one hash.
 * Every decode is bounded by `maxBytes` before a single item is allocated.
 */
import { decode, encode, rfc8949EncodeOptions } from 'cborg';
import { bytesEqual } from './bytes.js';
import { err, ok, type Result } from './result.js';

export type CborError = { readonly type: 'MalformedCbor'; readonly reason: string };

export function encodeCbor(value: unknown): Uint8Array {
  return encode(value, rfc8949EncodeOptions);
}

const DECODE_OPTIONS = {
  strict: true,
  allowUndefined: false,
  allowIndefinite: false,
  allowInfinity: false,
  allowNaN: false,
  allowBigInt: false,
  rejectDuplicateMapKeys: true,
  useMaps: false,
} as const;

export function decodeCbor(bytes: Uint8Array, maxBytes: number): Result<unknown, CborError> {
  if (bytes.length > maxBytes) {
    return err({ type: 'MalformedCbor', reason: `cbor: ${bytes.length} bytes exceeds ${maxBytes}` });
  }
  let value: unknown;
  try {
    value = decode(bytes, DECODE_OPTIONS);
  } catch (e) {
    return err({ type: 'MalformedCbor', reason: `cbor: ${(e as Error).message}` });
  }
  if (!bytesEqual(encodeCbor(value), bytes)) {
    return err({ type: 'MalformedCbor', reason: 'cbor: input is not in canonical form' });
  }
  return ok(value);
}

/** Narrowing helper for decoded maps: a plain object, not an array or bytes. */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && !(value instanceof Uint8Array);
}
