/**
 * Byte helpers shared by every protocol module: hex, UTF-8, concatenation and
 * constant-shape comparison. Pure; no platform APIs beyond TextEncoder.
 */

const HEX = '0123456789abcdef';
const encoder = new TextEncoder();
const decoder = new TextDecoder('utf-8', { fatal: true });

/** ASCII codes of the two hex digits of every byte value. */
const HEX_CODES = new Uint8Array(512);
for (let b = 0; b < 256; b++) {
  HEX_CODES[2 * b] = HEX.charCodeAt(b >> 4);
  HEX_CODES[2 * b + 1] = HEX.charCodeAt(b & 15);
}

/** Nibble value of each ASCII code, -1 for anything that is not a hex digit. */
const NIBBLES = new Int8Array(128).fill(-1);
for (let i = 0; i < 16; i++) {
  NIBBLES[HEX.charCodeAt(i)] = i;
  NIBBLES[HEX.toUpperCase().charCodeAt(i)] = i;
}

/**
 * Lowercase hex. Decoded from a buffer of digit codes rather than concatenated:
 * concatenation builds a rope of ~2 nodes per byte, and ids are kept by the million.
 */
export function toHex(bytes: Uint8Array): string {
  return hexThen(bytes, '');
}

/** Digit codes of hex strings being built; reused, since a decoder call copies them into the string. */
let hexScratch = new Uint8Array(256);

/** `toHex(bytes) + suffix`, built as one flat string (no rope to keep alive next to it). */
export function hexThen(bytes: Uint8Array, suffix: string): string {
  const length = bytes.length * 2 + suffix.length;
  if (length > hexScratch.length) hexScratch = new Uint8Array(length);
  const codes = hexScratch;
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i]!;
    codes[2 * i] = HEX_CODES[2 * b]!;
    codes[2 * i + 1] = HEX_CODES[2 * b + 1]!;
  }
  for (let i = 0; i < suffix.length; i++) {
    const code = suffix.charCodeAt(i);
    // One code per character holds for ASCII only; anything else is appended as a string.
    if (code > 127) return decoder.decode(codes.subarray(0, 2 * bytes.length)) + suffix;
    codes[2 * bytes.length + i] = code;
  }
  return decoder.decode(codes.subarray(0, length));
}

/** The last few distinct values `internedHex` returned (a ring: the oldest is replaced). */
const interned: { readonly bytes: Uint8Array; readonly hex: string }[] = [];
const INTERNED = 16;
let internedNext = 0;
/** The entry found last. */
let lastInterned: { readonly bytes: Uint8Array; readonly hex: string } = { bytes: new Uint8Array(0), hex: '' };

/** Equality of public byte strings, stopping at the first difference. */
function samePublicBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/**
 * `toHex` of a value seen over and over (a signer key: a batch has a few
 * signers and thousands of events): the same string object each time while it
 * is among the last INTERNED distinct values, so it is built and hashed once,
 * not once per event.
 */
export function internedHex(bytes: Uint8Array): string {
  // Keys are public, so comparisons may stop at the first difference; the last one found is tried first.
  if (samePublicBytes(lastInterned.bytes, bytes)) return lastInterned.hex;
  for (const seen of interned) {
    if (samePublicBytes(seen.bytes, bytes)) {
      lastInterned = seen;
      return seen.hex;
    }
  }
  const hex = toHex(bytes);
  interned[internedNext] = lastInterned = { bytes: bytes.slice(), hex };
  internedNext = (internedNext + 1) % INTERNED;
  return hex;
}

const nibble = (code: number): number => (code < 128 ? NIBBLES[code]! : -1);

/** Parses lowercase or uppercase hex; returns undefined for anything else. */
export function fromHex(hex: string): Uint8Array | undefined {
  if (hex.length % 2 !== 0) return undefined;
  const out = new Uint8Array(hex.length / 2);
  for (let i = 0; i < out.length; i++) {
    const hi = nibble(hex.charCodeAt(2 * i));
    const lo = nibble(hex.charCodeAt(2 * i + 1));
    if (hi < 0 || lo < 0) return undefined;
    out[i] = (hi << 4) | lo;
  }
  return out;
}

export function utf8(text: string): Uint8Array {
  return encoder.encode(text);
}

/** Strict UTF-8 decode; throws TypeError on invalid sequences. */
export function fromUtf8(bytes: Uint8Array): string {
  return decoder.decode(bytes);
}

export function concat(...parts: readonly Uint8Array[]): Uint8Array {
  let length = 0;
  for (const p of parts) length += p.length;
  const out = new Uint8Array(length);
  let offset = 0;
  for (const p of parts) {
    out.set(p, offset);
    offset += p.length;
  }
  return out;
}

/** Many parts as one array (no argument spread, so any number of parts). */
export function concatAll(parts: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/**
 * Whether `hex` (lowercase or uppercase) spells exactly `bytes`, without
 * building either from the other. For public values (chain links).
 */
export function hexEqualsBytes(hex: string, bytes: Uint8Array): boolean {
  if (hex.length !== 2 * bytes.length) return false;
  for (let i = 0; i < bytes.length; i++) {
    const hi = nibble(hex.charCodeAt(2 * i));
    const lo = nibble(hex.charCodeAt(2 * i + 1));
    // A non-digit's nibble is -1, which makes the pair negative: never equal to a byte.
    if (((hi << 4) | lo) !== bytes[i]) return false;
  }
  return true;
}

/** Length-checked equality that does not exit early on the first differing byte. */
export function bytesEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a[i]! ^ b[i]!;
  return diff === 0;
}

/** Lexicographic order of byte strings (shorter prefix first). */
export function compareBytes(a: Uint8Array, b: Uint8Array): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const d = a[i]! - b[i]!;
    if (d !== 0) return d;
  }
  return a.length - b.length;
}

export function isBytes(value: unknown, length?: number): value is Uint8Array {
  return value instanceof Uint8Array && (length === undefined || value.length === length);
}

const B64URL = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';

export function toBase64Url(bytes: Uint8Array): string {
  let out = '';
  let i = 0;
  for (; i + 2 < bytes.length; i += 3) {
    const n = (bytes[i]! << 16) | (bytes[i + 1]! << 8) | bytes[i + 2]!;
    out += B64URL[n >> 18]! + B64URL[(n >> 12) & 63]! + B64URL[(n >> 6) & 63]! + B64URL[n & 63]!;
  }
  const rest = bytes.length - i;
  if (rest === 1) {
    const n = bytes[i]! << 16;
    out += B64URL[n >> 18]! + B64URL[(n >> 12) & 63]!;
  } else if (rest === 2) {
    const n = (bytes[i]! << 16) | (bytes[i + 1]! << 8);
    out += B64URL[n >> 18]! + B64URL[(n >> 12) & 63]! + B64URL[(n >> 6) & 63]!;
  }
  return out;
}

/** Decodes unpadded base64url; returns undefined for any other alphabet or a bad length. */
export function fromBase64Url(text: string): Uint8Array | undefined {
  if (!/^[A-Za-z0-9_-]*$/.test(text) || text.length % 4 === 1) return undefined;
  const out = new Uint8Array(Math.floor((text.length * 3) / 4));
  let bits = 0;
  let value = 0;
  let o = 0;
  for (const ch of text) {
    value = (value << 6) | B64URL.indexOf(ch);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out[o++] = (value >> bits) & 255;
    }
  }
  return out;
}
