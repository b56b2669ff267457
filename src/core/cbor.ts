/**
 * Deterministic CBOR (RFC 8949 §4.2.1) for everything that is signed or hashed.
 *
 * Encoding sorts map keys bytewise and uses the shortest form of every item.
 * Encoding is cborg's. Decoding is our own single pass, because it must be
 * strict and it is the hottest code of catch-up: it refuses indefinite lengths,
 * undefined, tags, non-text map keys, duplicate or unsorted keys, non-minimal
 * heads, integers beyond ±2^53, NaN and infinities, floats not in their
 * shortest exact form, invalid UTF-8 and trailing bytes — so one logical value
 * has exactly one byte string and one hash. It accepts exactly what "cborg
 * decodes it strictly and re-encoding gives the same bytes" accepts, and yields
 * the same values (a differential property test holds it to that). Byte strings
 * are copied out, never views of the input — unless the caller asks for views
 * (`{ views: true }`) of bytes it only reads and never keeps or stores: a view
 * keeps, and a structured clone (IndexedDB, postMessage) serializes, the whole
 * input buffer. Every decode is bounded by `maxBytes` before anything is allocated.
 */
import { encode, rfc8949EncodeOptions } from 'cborg';
import { bytesEqual } from './bytes.js';
import { err, ok, type Result } from './result.js';

export type CborError = { readonly type: 'MalformedCbor'; readonly reason: string };

export function encodeCbor(value: unknown): Uint8Array {
  return encode(value, rfc8949EncodeOptions);
}

export type DecodeOptions = {
  /** Byte strings as views of the input instead of copies (see above: only for bytes that are not kept). */
  readonly views?: boolean;
};

export function decodeCbor(bytes: Uint8Array, maxBytes: number, options?: DecodeOptions): Result<unknown, CborError> {
  if (bytes.length > maxBytes) {
    return err({ type: 'MalformedCbor', reason: `cbor: ${bytes.length} bytes exceeds ${maxBytes}` });
  }
  try {
    const reader = new CanonicalReader(bytes, options?.views === true);
    const value = reader.item(0);
    reader.end();
    return ok(value);
  } catch (e) {
    if (e instanceof NotCanonical) return err({ type: 'MalformedCbor', reason: `cbor: ${e.message}` });
    throw e;
  }
}

/**
 * The fields `keys` of one encoded map with text keys, each decoded as `decodeCbor` would;
 * every other value is stepped over by its heads, neither built nor checked beyond them.
 * For a store reading a few small fields of large records it wrote itself (the sealed
 * bytes of a log entry, not its body).
 */
export function decodeMapFields(
  bytes: Uint8Array,
  keys: ReadonlySet<string>,
  options?: DecodeOptions,
): Result<Record<string, unknown>, CborError> {
  try {
    const reader = new CanonicalReader(bytes, options?.views === true);
    const fields = reader.fields(keys);
    reader.end();
    return ok(fields);
  } catch (e) {
    if (e instanceof NotCanonical) return err({ type: 'MalformedCbor', reason: `cbor: ${e.message}` });
    throw e;
  }
}

/** Narrowing helper for decoded maps: a plain object, not an array or bytes. */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && !(value instanceof Uint8Array);
}

/** Deeper nesting than any message of ours needs; refused before recursion can exhaust the stack. */
const MAX_DEPTH = 32;
const strictUtf8 = new TextDecoder('utf-8', { fatal: true });
/** Text up to this many bytes is read through `shortCodes`, one code per ASCII byte. */
const SHORT_TEXT = 64;
/** One array of codes per length: setting an array's length for each string cost more than reading it. */
const shortCodes: number[][] = Array.from({ length: SHORT_TEXT + 1 }, (_, n) => new Array<number>(n).fill(0));

class NotCanonical extends Error {}

/** Reads one item in deterministic encoding (RFC 8949 §4.2.1) for the subset of CBOR we write. */
class CanonicalReader {
  #pos = 0;
  readonly #view: DataView;

  constructor(
    private readonly bytes: Uint8Array,
    private readonly views: boolean,
  ) {
    this.#view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }

  end(): void {
    if (this.#pos !== this.bytes.length) this.#fail(`${this.bytes.length - this.#pos} trailing bytes`);
  }

  #fail(reason: string): never {
    throw new NotCanonical(`${reason} at byte ${this.#pos}`);
  }

  #take(n: number): number {
    const at = this.#pos;
    if (n > this.bytes.length - at) this.#fail('truncated item');
    this.#pos = at + n;
    return at;
  }

  /** The argument of a head with additional info `minor`, refusing non-minimal and indefinite forms. */
  #argument(minor: number): number {
    if (minor < 24) return minor;
    const view = this.#view;
    let value: number;
    let least: number;
    if (minor === 24) {
      value = view.getUint8(this.#take(1));
      least = 24;
    } else if (minor === 25) {
      value = view.getUint16(this.#take(2));
      least = 0x100;
    } else if (minor === 26) {
      value = view.getUint32(this.#take(4));
      least = 0x10000;
    } else if (minor === 27) {
      const at = this.#take(8);
      const high = view.getUint32(at);
      if (high > 0x1fffff) this.#fail('integer beyond 2^53');
      value = high * 2 ** 32 + view.getUint32(at + 4);
      least = 2 ** 32;
    } else {
      this.#fail(minor === 31 ? 'indefinite length' : `reserved additional info ${minor}`);
    }
    if (value < least) this.#fail('non-minimal head');
    return value;
  }

  item(depth: number): unknown {
    if (depth > MAX_DEPTH) this.#fail('nesting too deep');
    const initial = this.bytes[this.#take(1)]!;
    const major = initial >> 5;
    const minor = initial & 31;
    if (major === 7) return this.#simple(minor);
    const arg = this.#argument(minor);
    switch (major) {
      case 0:
        // #argument refuses any argument of 2^53 or more, so every unsigned integer is safe.
        return arg;
      case 1:
        if (-1 - arg < Number.MIN_SAFE_INTEGER) this.#fail('integer beyond 2^53');
        return -1 - arg;
      case 2: {
        const at = this.#take(arg);
        // Built with the constructor, not subarray() (which looks up a species constructor, and is
        // a Node Buffer's own view when the input is one); a copy is a fresh, exact Uint8Array.
        const view = new Uint8Array(this.bytes.buffer, this.bytes.byteOffset + at, arg);
        if (this.views) return view;
        const copy = new Uint8Array(arg);
        copy.set(view);
        return copy;
      }
      case 3:
        return this.#text(arg);
      case 4: {
        const out: unknown[] = new Array(Math.min(arg, this.bytes.length));
        out.length = 0;
        for (let i = 0; i < arg; i++) out.push(this.item(depth + 1));
        return out;
      }
      case 5:
        return this.#map(arg, depth);
      default:
        return this.#fail('tags are not accepted');
    }
  }

  /** A map's values under `keys` (see decodeMapFields); the others skipped. */
  fields(keys: ReadonlySet<string>): Record<string, unknown> {
    const initial = this.bytes[this.#take(1)]!;
    if (initial >> 5 !== 5) this.#fail('not a map');
    const pairs = this.#argument(initial & 31);
    const out: Record<string, unknown> = {};
    for (let i = 0; i < pairs; i++) {
      if (this.#pos < this.bytes.length && this.bytes[this.#pos]! >> 5 !== 3) this.#fail('map key is not text');
      const key = this.item(1) as string;
      if (keys.has(key) && key !== '__proto__') out[key] = this.item(1);
      else this.#skip(1);
    }
    return out;
  }

  /** Steps over one item: its heads are read (and bounded), nothing is built. */
  #skip(depth: number): void {
    if (depth > MAX_DEPTH) this.#fail('nesting too deep');
    const initial = this.bytes[this.#take(1)]!;
    const major = initial >> 5;
    const minor = initial & 31;
    if (major === 7) {
      if (minor > 27) this.#fail(`reserved additional info ${minor}`);
      if (minor >= 24) this.#take(1 << (minor - 24));
      return;
    }
    const arg = this.#argument(minor);
    if (major === 2 || major === 3) this.#take(arg);
    else if (major === 4) for (let i = 0; i < arg; i++) this.#skip(depth + 1);
    else if (major === 5) for (let i = 0; i < 2 * arg; i++) this.#skip(depth + 1);
    else if (major === 6) this.#fail('tags are not accepted');
  }

  #simple(minor: number): unknown {
    if (minor === 20) return false;
    if (minor === 21) return true;
    if (minor === 22) return null;
    if (minor < 25 || minor > 27) return this.#fail('simple value outside false/true/null');
    const start = this.#pos - 1;
    const at = this.#take(1 << (minor - 24));
    const value =
      minor === 25
        ? float16(this.#view.getUint16(at))
        : minor === 26
          ? this.#view.getFloat32(at)
          : this.#view.getFloat64(at);
    if (!Number.isFinite(value)) this.#fail('NaN or infinite float');
    // The shortest exact form is the encoder's rule (an integral value is an integer): ask the encoder.
    if (!bytesEqual(encode(value, rfc8949EncodeOptions), this.bytes.subarray(start, this.#pos))) {
      this.#fail('float not in its shortest form (input is not in canonical form)');
    }
    return value;
  }

  #text(length: number): string {
    const at = this.#take(length);
    const b = this.bytes;
    if (length <= SHORT_TEXT) {
      // Short ASCII (names, keys, most values) in one flat string: neither a rope
      // built a character at a time (garbage, flattened again when hashed) nor a decoder call.
      const codes = shortCodes[length]!;
      for (let i = 0; i < length; i++) {
        const c = b[at + i]!;
        if (c >= 0x80) return this.#utf8(at, length);
        codes[i] = c;
      }
      return String.fromCharCode.apply(null, codes);
    }
    return this.#utf8(at, length);
  }

  #utf8(at: number, length: number): string {
    try {
      return strictUtf8.decode(this.bytes.subarray(at, at + length));
    } catch {
      return this.#fail('invalid UTF-8');
    }
  }

  /** Keys are text and ascend strictly in bytewise order of their encodings (which refuses duplicates too). */
  #map(pairs: number, depth: number): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    let previous = -1;
    let previousEnd = -1;
    for (let i = 0; i < pairs; i++) {
      const start = this.#pos;
      if (start < this.bytes.length && this.bytes[start]! >> 5 !== 3) this.#fail('map key is not text');
      const key = this.item(depth + 1) as string;
      if (previous >= 0 && compareSpans(this.bytes, previous, previousEnd, start, this.#pos) >= 0) {
        this.#fail('map keys out of order or repeated');
      }
      previous = start;
      previousEnd = this.#pos;
      const value = this.item(depth + 1);
      if (key === '__proto__') {
        Object.defineProperty(out, key, { value, configurable: true, enumerable: true, writable: true });
      } else {
        out[key] = value;
      }
    }
    return out;
  }
}

function compareSpans(b: Uint8Array, aStart: number, aEnd: number, bStart: number, bEnd: number): number {
  const n = Math.min(aEnd - aStart, bEnd - bStart);
  for (let i = 0; i < n; i++) {
    const d = b[aStart + i]! - b[bStart + i]!;
    if (d !== 0) return d;
  }
  return aEnd - aStart - (bEnd - bStart);
}

/** IEEE 754 binary16 → number. */
function float16(half: number): number {
  const sign = half & 0x8000 ? -1 : 1;
  const exponent = (half >> 10) & 0x1f;
  const fraction = half & 0x3ff;
  if (exponent === 0) return sign * fraction * 2 ** -24;
  if (exponent === 0x1f) return fraction === 0 ? sign * Infinity : NaN;
  return sign * (1 + fraction / 1024) * 2 ** (exponent - 15);
}
