/**
 * The SQLite replica store's record encoding: `pack(value)` is byte for byte
 * `encodeCbor(value)` (core/cbor.ts: deterministic CBOR, map keys sorted by their
 * encoded bytes) of `value` with every `undefined` field left out — what the store has
 * always written, so files written before and after read alike.
 *
 * It exists for speed: the store packs a log record, a row and more for every event it
 * applies, and cborg builds a token tree and sorts every map through a generic
 * comparator on the way. This writes the bytes directly for what records are made of —
 * maps with text keys, arrays, text, byte strings, safe integers, booleans and null —
 * and hands anything else (floats, big integers, an `undefined` array element, types
 * cborg refuses) to `encodeCbor`, one value at a time: deterministic CBOR is
 * compositional, a value encodes to the same bytes alone as inside a map or array. The
 * differential property test in test/storage/sqlite-pack.test.ts holds it to cborg.
 *
 * `known` names one value whose encoding the caller already has (a verified event's
 * signed body bytes: canonical, they are exactly what encoding its decoded body gives),
 * written as is instead of being encoded again.
 */
import { encodeCbor } from '../core/cbor.js';

const MAJOR_UINT = 0;
const MAJOR_NEGINT = 1;
const MAJOR_BYTES = 2;
const MAJOR_TEXT = 3;
const MAJOR_ARRAY = 4;
const MAJOR_MAP = 5;
const FALSE = 0xf4;
const TRUE = 0xf5;
const NULL = 0xf6;

/** Encoded map keys (head and UTF-8), by key: records use few distinct keys, over and over. */
const keyCache = new Map<string, Uint8Array>();
const KEY_CACHE_LIMIT = 4096;
const CACHED_KEY_LENGTH = 64;

function encodedKey(key: string): Uint8Array {
  const cached = keyCache.get(key);
  if (cached !== undefined) return cached;
  const utf8 = Buffer.from(key, 'utf8');
  const out = new Uint8Array(headLength(utf8.length) + utf8.length);
  writeHead(out, 0, MAJOR_TEXT, utf8.length);
  out.set(utf8, out.length - utf8.length);
  if (keyCache.size < KEY_CACHE_LIMIT && key.length <= CACHED_KEY_LENGTH) keyCache.set(key, out);
  return out;
}

/** Deterministic map order (RFC 8949 §4.2.1): bytewise on the encoded keys. */
function compareBytes(a: Uint8Array, b: Uint8Array): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    if (a[i] !== b[i]) return a[i]! - b[i]!;
  }
  return a.length - b.length;
}

function headLength(n: number): number {
  return n < 24 ? 1 : n < 0x100 ? 2 : n < 0x10000 ? 3 : n < 0x100000000 ? 5 : 9;
}

/** Writes the head of `major` with argument `n` (a safe non-negative integer) at `at`; returns the next offset. */
function writeHead(out: Uint8Array, at: number, major: number, n: number): number {
  const m = major << 5;
  if (n < 24) {
    out[at] = m | n;
    return at + 1;
  }
  if (n < 0x100) {
    out[at] = m | 24;
    out[at + 1] = n;
    return at + 2;
  }
  if (n < 0x10000) {
    out[at] = m | 25;
    out[at + 1] = n >>> 8;
    out[at + 2] = n & 0xff;
    return at + 3;
  }
  if (n < 0x100000000) {
    out[at] = m | 26;
    out[at + 1] = n >>> 24;
    out[at + 2] = (n >>> 16) & 0xff;
    out[at + 3] = (n >>> 8) & 0xff;
    out[at + 4] = n & 0xff;
    return at + 5;
  }
  out[at] = m | 27;
  const high = Math.floor(n / 0x100000000);
  const low = n >>> 0;
  for (let i = 0; i < 4; i++) out[at + 1 + i] = (high >>> (24 - 8 * i)) & 0xff;
  for (let i = 0; i < 4; i++) out[at + 5 + i] = (low >>> (24 - 8 * i)) & 0xff;
  return at + 9;
}

class Writer {
  buf: Buffer = Buffer.allocUnsafe(4096);
  pos = 0;

  reserve(n: number): void {
    if (this.pos + n <= this.buf.length) return;
    const grown = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.pos + n));
    this.buf.copy(grown, 0, 0, this.pos);
    this.buf = grown;
  }

  head(major: number, n: number): void {
    this.reserve(9);
    this.pos = writeHead(this.buf, this.pos, major, n);
  }

  raw(bytes: Uint8Array): void {
    this.reserve(bytes.length);
    this.buf.set(bytes, this.pos);
    this.pos += bytes.length;
  }

  text(s: string): void {
    const n = s.length;
    // ASCII is one byte a character: written in place when every character is.
    if (n < 0x100) {
      this.reserve(2 + n);
      const buf = this.buf;
      const start = this.pos + (n < 24 ? 1 : 2);
      let i = 0;
      for (; i < n; i++) {
        const c = s.charCodeAt(i);
        if (c >= 0x80) break;
        buf[start + i] = c;
      }
      if (i === n) {
        this.pos = writeHead(buf, this.pos, MAJOR_TEXT, n) + n;
        return;
      }
    }
    // Lone surrogates become U+FFFD here as in cborg.
    const length = Buffer.byteLength(s, 'utf8');
    this.head(MAJOR_TEXT, length);
    this.reserve(length);
    this.pos += this.buf.write(s, this.pos, length, 'utf8');
  }
}

const writer = new Writer();

function write(w: Writer, value: unknown, known: unknown, knownBytes: Uint8Array | undefined): void {
  switch (typeof value) {
    case 'string':
      w.text(value);
      return;
    case 'number':
      if (Number.isSafeInteger(value)) {
        if (value >= 0) w.head(MAJOR_UINT, value);
        else w.head(MAJOR_NEGINT, -1 - value);
        return;
      }
      break;
    case 'boolean':
      w.reserve(1);
      w.buf[w.pos++] = value ? TRUE : FALSE;
      return;
    case 'object':
      if (value === null) {
        w.reserve(1);
        w.buf[w.pos++] = NULL;
        return;
      }
      if (value === known && knownBytes !== undefined) {
        w.raw(knownBytes);
        return;
      }
      if (value instanceof Uint8Array) {
        w.head(MAJOR_BYTES, value.length);
        w.raw(value);
        return;
      }
      if (Array.isArray(value)) {
        const items = value as unknown[];
        w.head(MAJOR_ARRAY, items.length);
        for (let i = 0; i < items.length; i++) write(w, items[i], known, knownBytes);
        return;
      }
      writeMap(w, value as Record<string, unknown>, known, knownBytes);
      return;
  }
  // Floats, big integers, undefined (an array element), and what cborg refuses: cborg's own answer.
  w.raw(encodeCbor(value));
}

/** Any other object is a map of its own enumerable fields, as `{ ...value }` minus the undefined ones. */
function writeMap(w: Writer, map: Record<string, unknown>, known: unknown, knownBytes: Uint8Array | undefined): void {
  const keys: Uint8Array[] = [];
  const values: unknown[] = [];
  for (const key of Object.keys(map)) {
    const value = map[key];
    if (value === undefined) continue;
    // Insertion sort: records have a handful of keys.
    const encoded = encodedKey(key);
    let i = keys.length;
    while (i > 0 && compareBytes(keys[i - 1]!, encoded) > 0) i--;
    keys.splice(i, 0, encoded);
    values.splice(i, 0, value);
  }
  w.head(MAJOR_MAP, keys.length);
  for (let i = 0; i < keys.length; i++) {
    w.raw(keys[i]!);
    write(w, values[i], known, knownBytes);
  }
}

/** `encodeCbor` of `value` without its undefined fields; `known`, met inside it, is written as `knownBytes`. */
export function pack(value: unknown, known?: { readonly value: unknown; readonly bytes: Uint8Array }): Uint8Array {
  const w = writer;
  w.pos = 0;
  try {
    write(w, value, known?.value, known?.bytes);
    return new Uint8Array(w.buf.subarray(0, w.pos));
  } finally {
    // A record larger than usual leaves no large buffer behind.
    if (w.buf.length > 1 << 20) w.buf = Buffer.allocUnsafe(4096);
  }
}
