/**
 * Thrift Compact Protocol, the encoding of every Parquet footer, page header
 * and crypto structure (parquet.thrift; Thrift `TCompactProtocol` spec).
 *
 * Writing: fields carry their wire type explicitly. hyparquet-writer infers a
 * type from the JavaScript value, so it cannot write an `i16` — and
 * `RowGroup.ordinal` is an i16 that strict readers (Arrow, DuckDB) skip when it
 * arrives as anything else, and then cannot rebuild the page AADs of an
 * encrypted file. Reading uses hyparquet's decoder, which dispatches on the
 * wire type and so reads every integer width.
 *
 *   field header   (delta << 4 | type) for a field-id delta of 1..15, else
 *                  type followed by the zigzag varint id
 *   bool field     the value is the type nibble (1 true, 2 false)
 *   i8             one byte; i16/i32/i64 zigzag varint
 *   binary         varint length ‖ bytes
 *   list           (size << 4 | elem) for size < 15, else (0xf0 | elem) ‖ varint size
 *   struct/union   fields in ascending id order ‖ STOP (0)
 */
import { utf8 } from '../bytes.js';

export const T = {
  BOOL: 1,
  I8: 3,
  I16: 4,
  I32: 5,
  I64: 6,
  DOUBLE: 7,
  BINARY: 8,
  LIST: 9,
  STRUCT: 12,
} as const;

type Scalar = typeof T.BOOL | typeof T.I8 | typeof T.I16 | typeof T.I32 | typeof T.I64 | typeof T.BINARY;

/** One field: id, wire type, value. An undefined value leaves the field out (optional fields). */
export type Field =
  | readonly [id: number, type: typeof T.BOOL, value: boolean | undefined]
  | readonly [id: number, type: typeof T.I8 | typeof T.I16 | typeof T.I32, value: number | undefined]
  | readonly [id: number, type: typeof T.I64, value: bigint | number | undefined]
  | readonly [id: number, type: typeof T.BINARY, value: Uint8Array | string | undefined]
  | readonly [id: number, type: typeof T.STRUCT, value: readonly Field[] | undefined]
  | readonly [id: number, type: typeof T.LIST, value: ThriftList | undefined];

export type ThriftList =
  | { readonly elem: typeof T.STRUCT; readonly items: readonly (readonly Field[])[] }
  | {
      readonly elem: Exclude<Scalar, typeof T.BOOL>;
      readonly items: readonly (number | bigint | Uint8Array | string)[];
    };

/** A growable byte buffer. */
export class ByteSink {
  #bytes = new Uint8Array(256);
  #length = 0;

  get length(): number {
    return this.#length;
  }

  #room(n: number): void {
    if (this.#length + n <= this.#bytes.length) return;
    let size = this.#bytes.length * 2;
    while (size < this.#length + n) size *= 2;
    const grown = new Uint8Array(size);
    grown.set(this.#bytes.subarray(0, this.#length));
    this.#bytes = grown;
  }

  byte(b: number): void {
    this.#room(1);
    this.#bytes[this.#length++] = b;
  }

  bytes(b: Uint8Array): void {
    this.#room(b.length);
    this.#bytes.set(b, this.#length);
    this.#length += b.length;
  }

  u32le(n: number): void {
    this.#room(4);
    new DataView(this.#bytes.buffer).setUint32(this.#length, n, true);
    this.#length += 4;
  }

  varint(n: bigint): void {
    while (n > 0x7fn) {
      this.byte(Number(n & 0x7fn) | 0x80);
      n >>= 7n;
    }
    this.byte(Number(n));
  }

  /** A copy of what was written. */
  finish(): Uint8Array {
    return this.#bytes.slice(0, this.#length);
  }
}

const zigzag = (n: bigint): bigint => (n >= 0n ? n << 1n : (-n << 1n) - 1n);

function writeInt(sink: ByteSink, value: number | bigint): void {
  sink.varint(zigzag(BigInt(value)));
}

function writeBinary(sink: ByteSink, value: Uint8Array | string): void {
  const bytes = typeof value === 'string' ? utf8(value) : value;
  sink.varint(BigInt(bytes.length));
  sink.bytes(bytes);
}

function writeScalar(sink: ByteSink, type: number, value: number | bigint | Uint8Array | string): void {
  if (type === T.I8) sink.byte(Number(value) & 0xff);
  else if (type === T.BINARY) writeBinary(sink, value as Uint8Array | string);
  else writeInt(sink, value as number | bigint);
}

function writeList(sink: ByteSink, list: ThriftList): void {
  const n = list.items.length;
  if (n < 15) sink.byte((n << 4) | list.elem);
  else {
    sink.byte(0xf0 | list.elem);
    sink.varint(BigInt(n));
  }
  for (const item of list.items) {
    if (list.elem === T.STRUCT) writeStruct(sink, item as readonly Field[]);
    else writeScalar(sink, list.elem, item as number | bigint | Uint8Array | string);
  }
}

export function writeStruct(sink: ByteSink, fields: readonly Field[]): void {
  let last = 0;
  for (const [id, type, value] of fields) {
    if (value === undefined) continue;
    if (id <= last) throw new Error(`thrift: field ${id} written after field ${last}`);
    const wireType = type === T.BOOL ? (value ? 1 : 2) : type;
    const delta = id - last;
    if (delta <= 15) sink.byte((delta << 4) | wireType);
    else {
      sink.byte(wireType);
      writeInt(sink, id);
    }
    last = id;
    if (type === T.BOOL) continue;
    if (type === T.STRUCT) writeStruct(sink, value);
    else if (type === T.LIST) writeList(sink, value);
    else writeScalar(sink, type, value);
  }
  sink.byte(0);
}

/** The compact encoding of one struct. */
export function encodeStruct(fields: readonly Field[]): Uint8Array {
  const sink = new ByteSink();
  writeStruct(sink, fields);
  return sink.finish();
}
