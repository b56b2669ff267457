/**
 * The Thrift Compact Protocol writer (core/parquet/thrift.ts), which writes every footer,
 * page header and crypto structure of our objects. The oracle is another implementation:
 * hyparquet's decoder reads back whatever random structs the writer wrote — field ids with
 * gaps short and long, every integer width with negative values and 64-bit extremes, text
 * and bytes, lists short and long (the size nibble ends at 14), nested structs, buffers past
 * the writer's first allocation. Known bytes pin the forms the Thrift specification fixes.
 */
import fc from 'fast-check';
import { deserializeTCompactProtocol } from 'hyparquet/src/thrift.js';
import { describe, expect, it } from 'vitest';
import { toHex } from '../../src/core/bytes.js';
import { ByteSink, encodeStruct, T, type Field } from '../../src/core/parquet/thrift.js';
import { runs } from '../helpers/runs.js';

const decode = (bytes: Uint8Array): Record<string, unknown> => {
  const reader = { view: new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength), offset: 0 };
  const value = deserializeTCompactProtocol(reader);
  expect(reader.offset, 'the struct ends where its bytes do').toBe(bytes.length);
  return value;
};

const i32 = fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 });
const i64 = fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n });
const bytes = fc.uint8Array({ maxLength: 600 });

type Model = { readonly fields: Field[]; readonly expected: Record<string, unknown> };

/** A random struct and what hyparquet must read from it (`field_<id>` keys, as it names them). */
const struct: fc.Memo<Model> = fc.memo((depth) => {
  const value = fc.oneof(
    fc.boolean().map((v) => [T.BOOL, v, v] as const),
    fc.integer({ min: -128, max: 127 }).map((v) => [T.I8, v, v] as const),
    fc.integer({ min: -(2 ** 15), max: 2 ** 15 - 1 }).map((v) => [T.I16, v, v] as const),
    i32.map((v) => [T.I32, v, v] as const),
    i64.map((v) => [T.I64, v, v] as const),
    bytes.map((v) => [T.BINARY, v, v] as const),
    fc.string({ maxLength: 20 }).map((v) => [T.BINARY, v, new TextEncoder().encode(v)] as const),
    fc.array(i32, { maxLength: 40 }).map((v) => [T.LIST, { elem: T.I32, items: v }, v] as const),
    fc.array(i64, { maxLength: 20 }).map((v) => [T.LIST, { elem: T.I64, items: v }, v] as const),
    fc.array(bytes, { maxLength: 16 }).map((v) => [T.LIST, { elem: T.BINARY, items: v }, v] as const),
    ...(depth > 1
      ? [
          struct(depth - 1).map((s) => [T.STRUCT, s.fields, s.expected] as const),
          fc
            .array(struct(depth - 1), { maxLength: 17 })
            .map(
              (ss) => [T.LIST, { elem: T.STRUCT, items: ss.map((s) => s.fields) }, ss.map((s) => s.expected)] as const,
            ),
        ]
      : []),
  );
  return fc
    .array(fc.tuple(fc.integer({ min: 1, max: 40 }), fc.option(value, { nil: undefined })), { maxLength: 8 })
    .map((entries) => {
      const fields: Field[] = [];
      const expected: Record<string, unknown> = {};
      let id = 0;
      for (const [gap, v] of entries) {
        id += gap;
        if (v === undefined) {
          // An undefined value is an optional field left out.
          fields.push([id, T.I32, undefined]);
          continue;
        }
        const [type, written, read] = v;
        fields.push([id, type, written] as unknown as Field);
        expected[`field_${id}`] = read;
      }
      return { fields, expected };
    });
});

describe('thrift writer, read back by hyparquet', () => {
  it('writes random structs that decode to the values written (property)', () => {
    fc.assert(
      fc.property(struct(3), ({ fields, expected }) => {
        expect(decode(encodeStruct(fields))).toEqual(expected);
      }),
      { numRuns: runs(400) },
    );
  });

  it('writes the forms the specification fixes, byte for byte', () => {
    // Short field header: delta 1, type i32; zigzag(-1) = 1; STOP.
    expect(toHex(encodeStruct([[1, T.I32, -1]]))).toBe('150100');
    // A gap of 16 takes the long form: type byte, then the zigzag id (16 → 0x20).
    expect(toHex(encodeStruct([[16, T.I32, 0]]))).toBe('05200000');
    // A gap of 15 still fits the nibble.
    expect(toHex(encodeStruct([[15, T.I32, 0]]))).toBe('f50000');
    // Booleans are the type nibble: 1 true, 2 false.
    expect(
      toHex(
        encodeStruct([
          [1, T.BOOL, true],
          [2, T.BOOL, false],
        ]),
      ),
    ).toBe('111200');
    // i8 is one byte, two's complement.
    expect(toHex(encodeStruct([[1, T.I8, -2]]))).toBe('13fe00');
    // i64 extremes: zigzag(2^63 - 1) and zigzag(-2^63) are the two largest 64-bit values.
    expect(toHex(encodeStruct([[1, T.I64, 2n ** 63n - 1n]]))).toBe('16feffffffffffffffff0100');
    expect(toHex(encodeStruct([[1, T.I64, -(2n ** 63n)]]))).toBe('16ffffffffffffffffff0100');
    // Varints: 127 is one byte, 128 two (zigzag doubles: i32 64 → 0x80 0x01).
    expect(toHex(encodeStruct([[1, T.I32, 63]]))).toBe('157e00');
    expect(toHex(encodeStruct([[1, T.I32, 64]]))).toBe('15800100');
    expect(toHex(encodeStruct([[1, T.I32, -64]]))).toBe('157f00'); // zigzag 127: still one byte
    // Lists: 14 items in the size nibble, 15 in the long form.
    expect(toHex(encodeStruct([[1, T.LIST, { elem: T.I8, items: Array<number>(14).fill(1) }]]))).toBe(
      `19e3${'01'.repeat(14)}00`,
    );
    expect(toHex(encodeStruct([[1, T.LIST, { elem: T.I8, items: Array<number>(15).fill(1) }]]))).toBe(
      `19f30f${'01'.repeat(15)}00`,
    );
    // Binary: varint length, then the bytes; text as UTF-8.
    expect(toHex(encodeStruct([[1, T.BINARY, 'é']]))).toBe('1802c3a900');
  });

  it('refuses fields out of order, and leaves out undefined ones', () => {
    expect(() =>
      encodeStruct([
        [2, T.I32, 1],
        [2, T.I32, 2],
      ]),
    ).toThrow('thrift: field 2 written after field 2');
    expect(() =>
      encodeStruct([
        [3, T.I32, 1],
        [1, T.I32, 2],
      ]),
    ).toThrow('thrift: field 1 written after field 3');
    expect(
      toHex(
        encodeStruct([
          [1, T.I32, undefined],
          [2, T.I32, 1],
        ]),
      ),
    ).toBe('250200');
  });

  it('grows its buffer as it is written, keeping what was written, and counts its length', () => {
    const sink = new ByteSink();
    expect(sink.length).toBe(0);
    const written: number[] = [];
    for (let i = 0; i < 300; i++) {
      sink.byte(i & 0xff);
      written.push(i & 0xff);
    }
    sink.u32le(0x01020304);
    written.push(4, 3, 2, 1);
    const big = Uint8Array.from({ length: 3000 }, (_, i) => (i * 7) & 0xff);
    sink.bytes(big);
    written.push(...big);
    sink.u32le(0xfffffffe);
    written.push(0xfe, 0xff, 0xff, 0xff);
    expect(sink.length).toBe(written.length);
    expect(sink.finish()).toEqual(Uint8Array.from(written));
  });
});
