/**
 * The RLE / bit-packed hybrid streams of a page (levels, dictionary indices, RLE booleans)
 * are walked before hyparquet decodes them (core/parquet/hybrid.ts): hyparquet writes as
 * many elements as a run claims into a plain array, and a few bytes claiming 2^31 values
 * grew one past V8's limit — a fatal error that ends the process, found by the fuzz test as
 * "invalid size error 198376450" (delta_byte_array.parquet with one bit flipped, below).
 *
 * The oracle for valid streams is another implementation: hyparquet-writer encodes them and
 * hyparquet's own reader decodes them; the count of non-null values is counted from the
 * array that was encoded.
 */
import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { readRleBitPackedHybrid } from 'hyparquet/src/encoding.js';
import type { PageHeader, SchemaTree } from 'hyparquet/src/types.js';
import { describe, expect, it } from 'vitest';
import { checkHybrid, checkPageStreams, packedScan } from '../../src/core/parquet/hybrid.js';
import { openParquet } from '../../src/core/parquet/read.js';
import { webPmeCipher } from '../../src/runtime/pme-cipher.js';
import { runs } from '../helpers/runs.js';
import { describeVectors, vectorPath } from '../helpers/vectors.js';
import { encoded, varint } from '../helpers/hybrid-streams.js';

const refusal = (r: ReturnType<typeof checkHybrid>): string =>
  r.ok ? 'accepted' : r.error.type === 'Malformed' ? r.error.detail : r.error.type;

describe('hybrid streams as hyparquet decodes them', () => {
  it('a valid stream of any width is accepted, with its count of target values', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 12 }),
        fc.array(fc.record({ value: fc.nat(), run: fc.integer({ min: 1, max: 40 }) }), { minLength: 1, maxLength: 30 }),
        fc.nat(),
        (width, runsOf, pick) => {
          const values = runsOf.flatMap(({ value, run }) => Array<number>(run).fill(value % 2 ** width));
          const stream = encoded(values, width);
          const target = values[pick % values.length]!;
          const checked = checkHybrid(stream, 0, stream.length, width, values.length, 'levels', target);
          expect(checked).toEqual({ ok: true, value: values.filter((v) => v === target).length });
          // hyparquet reads the same stream into exactly the values encoded.
          const out = new Array<number>(values.length);
          readRleBitPackedHybrid({ view: new DataView(stream.buffer), offset: 0 }, width, out, stream.length);
          expect(out).toEqual(values);
        },
      ),
      { numRuns: runs(300) },
    );
  });

  it('scans packed values of every width 0–32 as a bit-by-bit reading would', () => {
    // The oracle reads value i's bit b from bit i·width + b of the bytes, least significant first.
    const byBit = (bytes: Uint8Array, width: number, count: number, target: number) => {
      const values = Array.from({ length: count }, (_, i) => {
        let value = 0;
        for (let b = 0; b < width; b++) value += ((bytes[(i * width + b) >> 3]! >> ((i * width + b) & 7)) & 1) * 2 ** b;
        return value;
      });
      return { matches: values.filter((v) => v === target).length, max: Math.max(0, ...values) };
    };
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 32 }),
        fc.integer({ min: 0, max: 70 }),
        fc.uint8Array({ minLength: 300, maxLength: 300 }),
        fc.integer({ min: -1, max: 3 }),
        fc.nat(4),
        (width, count, bytes, pick, start) => {
          // A target that occurs (one of the values), or -1, 0, 1, 2, 3.
          const shifted = bytes.subarray(start);
          const some = byBit(shifted, width, count, -1);
          const target = pick === 3 && count > 0 ? byBit(shifted, width, 1, -1).max : pick;
          expect(packedScan(bytes, start, width, count, target)).toEqual(byBit(shifted, width, count, target));
          expect(packedScan(bytes, start, width, count, -1).max).toBe(some.max);
        },
      ),
      { numRuns: runs(2000) },
    );
  });

  it('reads a 4-byte length before the stream when none is given', () => {
    const stream = encoded([1, 1, 0, 1], 1);
    const prefixed = Uint8Array.from([stream.length, 0, 0, 0, ...stream]);
    expect(checkHybrid(prefixed, 0, undefined, 1, 4, 'values', 1)).toEqual({ ok: true, value: 3 });
    expect(refusal(checkHybrid(Uint8Array.from([3, 0]), 0, undefined, 1, 4, 'values'))).toBe(
      'values: no length before the values',
    );
    expect(refusal(checkHybrid(Uint8Array.from([9, 0, 0, 0, 2]), 0, undefined, 1, 1, 'values'))).toBe(
      'values: 9 bytes claimed, 1 in the page',
    );
  });

  it('refuses a run claiming more values than remain (the fatal array growth)', () => {
    // RLE header 2^31 - 2: a run of 2^30 - 1 values of width 1, in five bytes.
    const huge = Uint8Array.from([...varint(2 ** 31 - 2), 1]);
    expect(refusal(checkHybrid(huge, 0, huge.length, 1, 10, 'levels'))).toBe(
      'levels: a run of 1073741823 values, 10 left',
    );
    // Two runs: the second claims one more than is left.
    const two = Uint8Array.from([...varint(6 << 1), 1, ...varint(5 << 1), 0]);
    expect(refusal(checkHybrid(two, 0, two.length, 1, 10, 'levels'))).toBe('levels: a run of 5 values, 4 left');
    expect(checkHybrid(two, 0, two.length, 1, 11, 'levels', 1)).toEqual({ ok: true, value: 6 });
  });

  it('refuses packed runs beyond the values left, of a negative count, or past the stream', () => {
    // Three groups of 8 (24 values) for 10 values: one group of padding is all a writer adds.
    const three = Uint8Array.from([...varint((3 << 1) | 1), 0, 0, 0]);
    expect(refusal(checkHybrid(three, 0, three.length, 1, 10, 'levels'))).toBe(
      'levels: a packed run of 24 values, 10 left',
    );
    expect(checkHybrid(three, 0, three.length, 1, 17, 'levels', 0)).toEqual({ ok: true, value: 17 });
    // A header whose 32-bit reading is negative (hyparquet's `header >> 1 << 3`) loops for ever at width 0.
    const negative = Uint8Array.from([0xff, 0xff, 0xff, 0xff, 0x0f]);
    expect(refusal(checkHybrid(negative, 0, negative.length, 0, 10, 'indices'))).toBe(
      'indices: a packed run of -8 values, 10 left',
    );
    const short = Uint8Array.from([...varint((2 << 1) | 1), 0xff]);
    expect(refusal(checkHybrid(short, 0, short.length, 1, 16, 'levels'))).toBe(
      "levels: a packed run past the stream's end",
    );
  });

  it('refuses a stream that ends early, an RLE value cut off, or a width no level has', () => {
    const stream = encoded(Array<number>(20).fill(1), 1);
    expect(refusal(checkHybrid(stream, 0, stream.length, 1, 21, 'levels'))).toBe('levels: ends after 20 of 21 values');
    const cut = Uint8Array.from([...varint(4 << 1), 0x01]);
    expect(refusal(checkHybrid(cut, 0, cut.length, 9, 4, 'indices'))).toBe("indices: a run past the stream's end");
    expect(refusal(checkHybrid(stream, 0, stream.length, 33, 20, 'indices'))).toBe('indices: values 33 bits wide');
    // A varint that never ends within the stream.
    const endless = Uint8Array.from([0x80, 0x80, 0x80]);
    expect(refusal(checkHybrid(endless, 0, endless.length, 1, 4, 'levels'))).toBe('levels: ends after 0 of 4 values');
  });
});

describe('the streams of a page, where hyparquet reads them', () => {
  const leaf = (repetition: 'REQUIRED' | 'OPTIONAL'): SchemaTree[] => [
    { element: { name: 'root', num_children: 1 }, children: [], count: 2, path: [] },
    { element: { name: 'x', type: 'INT32', repetition_type: repetition }, children: [], count: 1, path: ['x'] },
  ];
  const v1 = (num_values: number, encoding: 'RLE' | 'RLE_DICTIONARY'): PageHeader => ({
    type: 'DATA_PAGE',
    uncompressed_page_size: 0,
    compressed_page_size: 0,
    data_page_header: {
      num_values,
      encoding,
      definition_level_encoding: 'RLE',
      repetition_level_encoding: 'RLE',
    },
  });
  const v2 = (num_values: number, num_nulls: number, definition: number): PageHeader => ({
    type: 'DATA_PAGE_V2',
    uncompressed_page_size: 0,
    compressed_page_size: 0,
    data_page_header_v2: {
      num_values,
      num_nulls,
      num_rows: num_values,
      encoding: 'RLE_DICTIONARY',
      definition_levels_byte_length: definition,
      repetition_levels_byte_length: 0,
    },
  });
  const withLength = (stream: Uint8Array) => [stream.length, 0, 0, 0, ...stream];

  it('bounds dictionary indices of a v1 page by the values its definition levels leave', () => {
    const levels = encoded([1, 0, 1, 1, 0, 1], 1); // four present
    const fits = Uint8Array.from([...withLength(levels), 2, ...encoded([3, 2, 1, 0], 2)]);
    expect(checkPageStreams(fits, v1(6, 'RLE_DICTIONARY'), leaf('OPTIONAL'), 'INT32', 'x', 4)).toBeUndefined();
    const over = Uint8Array.from([...withLength(levels), 2, ...varint(5 << 1), 3]);
    expect(checkPageStreams(over, v1(6, 'RLE_DICTIONARY'), leaf('OPTIONAL'), 'INT32', 'x', 4)).toEqual({
      type: 'Malformed',
      detail: 'x dictionary indices: a run of 5 values, 4 left',
    });
    // A width of 0 is all zeros on a v1 page: no stream is read, but index 0 needs a dictionary.
    const zero = Uint8Array.from([...withLength(levels), 0, ...varint(2 ** 30)]);
    expect(checkPageStreams(zero, v1(6, 'RLE_DICTIONARY'), leaf('OPTIONAL'), 'INT32', 'x', 1)).toBeUndefined();
    expect(checkPageStreams(zero, v1(6, 'RLE_DICTIONARY'), leaf('OPTIONAL'), 'INT32', 'x', 0)).toEqual({
      type: 'Malformed',
      detail: 'x dictionary indices: index 0 past a dictionary of 0',
    });
  });

  it('refuses a dictionary index past the dictionary, packed or in a run', () => {
    const levels = encoded([1, 0, 1, 1, 0, 1], 1); // four present
    const packed = Uint8Array.from([...withLength(levels), 2, ...encoded([3, 2, 1, 0], 2)]);
    expect(checkPageStreams(packed, v1(6, 'RLE_DICTIONARY'), leaf('OPTIONAL'), 'INT32', 'x', 3)).toEqual({
      type: 'Malformed',
      detail: 'x dictionary indices: index 3 past a dictionary of 3',
    });
    const run = Uint8Array.from([...withLength(levels), 2, ...varint(4 << 1), 2]);
    expect(checkPageStreams(run, v1(6, 'RLE_DICTIONARY'), leaf('OPTIONAL'), 'INT32', 'x', 3)).toBeUndefined();
    expect(checkPageStreams(run, v1(6, 'RLE_DICTIONARY'), leaf('OPTIONAL'), 'INT32', 'x', 2)).toEqual({
      type: 'Malformed',
      detail: 'x dictionary indices: index 2 past a dictionary of 2',
    });
    // 32 bits wide: an index with its top bit set is a large index, not a negative one.
    const wide = Uint8Array.from([...withLength(levels), 32, ...varint(4 << 1), 0, 0, 0, 0x80]);
    expect(checkPageStreams(wide, v1(6, 'RLE_DICTIONARY'), leaf('OPTIONAL'), 'INT32', 'x', 3)).toEqual({
      type: 'Malformed',
      detail: 'x dictionary indices: index 2147483648 past a dictionary of 3',
    });
  });

  it('reads a v1 BOOLEAN page of RLE values as a length-prefixed stream of width 1', () => {
    const values = Uint8Array.from(withLength(Uint8Array.from([...varint(1 << 30), 1])));
    expect(checkPageStreams(values, v1(3, 'RLE'), leaf('REQUIRED'), 'BOOLEAN', 'ok')).toEqual({
      type: 'Malformed',
      detail: 'ok values: a run of 536870912 values, 3 left',
    });
  });

  /** A column inside a list: repetition level 1, definition level 2 (optional list, optional element). */
  const listed: SchemaTree[] = [
    { element: { name: 'root', num_children: 1 }, children: [], count: 3, path: [] },
    { element: { name: 'xs', repetition_type: 'OPTIONAL', num_children: 1 }, children: [], count: 2, path: ['xs'] },
    { element: { name: 'x', type: 'INT32', repetition_type: 'REPEATED' }, children: [], count: 1, path: ['xs', 'x'] },
  ];

  it('checks repetition levels before definition levels, on v1 and v2 pages', () => {
    const over = Uint8Array.from([...varint(9 << 1), 0]); // a run of 9 for 4 values
    const good = encoded([0, 1, 1, 0], 1);
    const v1Page = Uint8Array.from([...withLength(over), ...withLength(good)]);
    expect(checkPageStreams(v1Page, v1(4, 'RLE_DICTIONARY'), listed, 'INT32', 'xs')).toEqual({
      type: 'Malformed',
      detail: 'xs repetition levels: a run of 9 values, 4 left',
    });
    const v2Page = Uint8Array.from([...over, ...good]);
    const header = v2(4, 0, good.length);
    header.data_page_header_v2!.repetition_levels_byte_length = over.length;
    expect(checkPageStreams(v2Page, header, listed, 'INT32', 'xs')).toEqual({
      type: 'Malformed',
      detail: 'xs repetition levels: a run of 9 values, 4 left',
    });
    // After valid repetition levels, a v2 page's definition levels are checked too.
    const fineRepetition = encoded([0, 1, 1, 0], 1);
    const badDefinition = Uint8Array.from([...varint(9 << 1), 2]);
    const v2Both = v2(4, 0, badDefinition.length);
    v2Both.data_page_header_v2!.repetition_levels_byte_length = fineRepetition.length;
    expect(
      checkPageStreams(Uint8Array.from([...fineRepetition, ...badDefinition]), v2Both, listed, 'INT32', 'xs'),
    ).toEqual({
      type: 'Malformed',
      detail: 'xs definition levels: a run of 9 values, 4 left',
    });
    // Valid levels of both kinds pass, and the values after them are checked next.
    const levels = [...withLength(encoded([0, 1, 1, 0], 1)), ...withLength(encoded([2, 2, 1, 2], 2))];
    const fine = Uint8Array.from([...levels, 1, ...encoded([1, 0, 1], 1)]);
    expect(checkPageStreams(fine, v1(4, 'RLE_DICTIONARY'), listed, 'INT32', 'xs', 2)).toBeUndefined();
    expect(checkPageStreams(Uint8Array.from(levels), v1(4, 'RLE_DICTIONARY'), listed, 'INT32', 'xs')).toEqual({
      type: 'Malformed',
      detail: 'xs: no bit width before the dictionary indices',
    });
  });

  it('takes a v2 page’s nulls from its header and its levels from their declared lengths', () => {
    const levels = encoded([1, 1, 0], 1);
    const page = Uint8Array.from([...levels, 0, ...varint(2 ** 20)]);
    // Width 0 is not special on a v2 page: hyparquet reads the run, 2^19 values for 2 present.
    expect(checkPageStreams(page, v2(3, 1, levels.length), leaf('OPTIONAL'), 'INT32', 'x')).toEqual({
      type: 'Malformed',
      detail: 'x dictionary indices: a run of 524288 values, 2 left',
    });
    const nine = encoded(Array<number>(9).fill(1), 1); // one run of 9
    const claimsMore = Uint8Array.from([...nine, 0]);
    expect(checkPageStreams(claimsMore, v2(10, 1, nine.length), leaf('OPTIONAL'), 'INT32', 'x')).toEqual({
      type: 'Malformed',
      detail: 'x definition levels: ends after 9 of 10 values',
    });
  });
});

describeVectors('the fuzz test’s fatal mutant', 'parquet-testing-all/data', () => {
  it('delta_byte_array.parquet with bit 4 of byte 26 flipped is refused, not a crash', async () => {
    const bytes = new Uint8Array(readFileSync(vectorPath('parquet-testing-all/data/delta_byte_array.parquet')));
    bytes[26]! ^= 1 << 4;
    const file = await openParquet(bytes, {}, webPmeCipher);
    if (!file.ok) throw new Error(JSON.stringify(file.error));
    expect(await file.value.readColumns()).toEqual({
      ok: false,
      error: { type: 'Malformed', detail: "c_customer_id page definition levels: a run past the stream's end" },
    });
  });
});
