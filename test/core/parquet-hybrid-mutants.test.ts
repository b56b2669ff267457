/**
 * The edges of the hybrid-stream checks (core/parquet/hybrid.ts) that parquet-hybrid.test.ts
 * leaves open, each pinned by one input where a slip of a comparison or a branch would read
 * differently: the default target, a length that ends the page, a packed run of one group of
 * padding too many, RLE runs of no values, the page streams hyparquet reads
 * or skips by schema and encoding, and which pages checkedPage decompresses before checking.
 *
 * Where hyparquet reads the same bytes, its own reader is the oracle for what is valid.
 */
import { readRleBitPackedHybrid } from 'hyparquet/src/encoding.js';
import type { ColumnDecoder, CompressionCodec, PageHeader, SchemaTree } from 'hyparquet/src/types.js';
import { describe, expect, it } from 'vitest';
import { PARSERS } from '../../src/core/parquet/decoding.js';
import { checkedPage, checkHybrid, checkPageStreams } from '../../src/core/parquet/hybrid.js';
import { encoded, varint } from '../helpers/hybrid-streams.js';

/** What hyparquet's own reader makes of a stream: `values` values of `width` bits. */
function hyparquetReads(stream: Uint8Array, width: number, values: number): number[] {
  const out = new Array<number>(values);
  readRleBitPackedHybrid({ view: new DataView(stream.buffer), offset: 0 }, width, out, stream.length);
  return out;
}

const refusal = (r: ReturnType<typeof checkHybrid>): string =>
  r.ok ? 'accepted' : r.error.type === 'Malformed' ? r.error.detail : r.error.type;

describe('hybrid streams at their edges', () => {
  it('counts no values when it is given no target', () => {
    // An RLE run of ones, then a packed group: without a target neither is counted.
    const stream = Uint8Array.from([...varint(8 << 1), 1, ...varint((1 << 1) | 1), 0b1011_0111]);
    expect(hyparquetReads(stream, 1, 16)).toEqual([1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 1, 0, 1]);
    expect(checkHybrid(stream, 0, stream.length, 1, 16, 'levels')).toEqual({ ok: true, value: 0 });
    expect(checkHybrid(stream, 0, stream.length, 1, 16, 'levels', 1)).toEqual({ ok: true, value: 14 });
  });

  it('reads a 4-byte length that ends the page as the length of an empty stream', () => {
    // The length's four bytes are the page's last: a stream of no bytes, enough for no values.
    const page = Uint8Array.from([9, 0, 0, 0, 0]);
    expect(checkHybrid(page, 1, undefined, 1, 0, 'levels')).toEqual({ ok: true, value: 0 });
    expect(refusal(checkHybrid(page, 1, undefined, 1, 2, 'levels'))).toBe('levels: ends after 0 of 2 values');
    // One byte fewer and there is no length at all.
    expect(refusal(checkHybrid(page, 2, undefined, 1, 0, 'levels'))).toBe('levels: no length before the values');
  });

  it('refuses a packed run whose last group would hold none of the values left', () => {
    // Two groups (16 values) for 8 values left: the second group is padding alone, which no writer adds.
    const two = Uint8Array.from([...varint((2 << 1) | 1), 0xff, 0xff]);
    expect(refusal(checkHybrid(two, 0, two.length, 1, 8, 'levels'))).toBe('levels: a packed run of 16 values, 8 left');
    // For 9 values the second group holds the ninth.
    expect(checkHybrid(two, 0, two.length, 1, 9, 'levels', 1)).toEqual({ ok: true, value: 9 });
  });

  it('ignores the value of an RLE run of no values, even one past the dictionary', () => {
    // A run of 0 values of index 7, then a run of 2 values of index 1: hyparquet writes no 7.
    const stream = Uint8Array.from([...varint(0), 7, ...varint(2 << 1), 1]);
    expect(hyparquetReads(stream, 3, 2)).toEqual([1, 1]);
    expect(checkHybrid(stream, 0, stream.length, 3, 2, 'indices', -1, 4)).toEqual({ ok: true, value: 0 });
    // The same index in a run of one value is refused.
    const one = Uint8Array.from([...varint(1 << 1), 7, ...varint(1 << 1), 1]);
    expect(refusal(checkHybrid(one, 0, one.length, 3, 2, 'indices', -1, 4))).toBe(
      'indices: index 7 past a dictionary of 4',
    );
  });
});

const root = (repetition?: 'REPEATED'): SchemaTree => ({
  element: { name: 'root', num_children: 1, ...(repetition ? { repetition_type: repetition } : {}) },
  children: [],
  count: 2,
  path: [],
});
const leaf = (repetition: 'REQUIRED' | 'OPTIONAL'): SchemaTree[] => [
  root(),
  { element: { name: 'x', type: 'INT32', repetition_type: repetition }, children: [], count: 1, path: ['x'] },
];
const v1 = (num_values: number, encoding: 'PLAIN' | 'RLE' | 'PLAIN_DICTIONARY' | 'RLE_DICTIONARY'): PageHeader => ({
  type: 'DATA_PAGE',
  uncompressed_page_size: 0,
  compressed_page_size: 0,
  data_page_header: { num_values, encoding, definition_level_encoding: 'RLE', repetition_level_encoding: 'RLE' },
});
const withLength = (stream: Uint8Array | readonly number[]) => [stream.length, 0, 0, 0, ...stream];
const int32s = (...values: number[]): number[] => values.flatMap((v) => [v & 0xff, (v >> 8) & 0xff, 0, 0]);

describe('the streams of a page, by schema and encoding', () => {
  it('reads no repetition levels when the schema path is the root alone, as hyparquet does not', () => {
    // hyparquet reads repetition levels only for a path longer than the root, whatever the root says.
    const page = Uint8Array.from(int32s(5));
    expect(checkPageStreams(page, v1(1, 'PLAIN'), [root('REPEATED')], 'INT32', 'x')).toBeUndefined();
  });

  it('refuses the definition levels of a v1 page, naming them, before its values', () => {
    const page = Uint8Array.from([...withLength([...varint(9 << 1), 1]), ...int32s(1, 2, 3, 4)]);
    expect(checkPageStreams(page, v1(4, 'PLAIN'), leaf('OPTIONAL'), 'INT32', 'x')).toEqual({
      type: 'Malformed',
      detail: 'x definition levels: a run of 9 values, 4 left',
    });
  });

  it('leaves a page without a data page header alone', () => {
    const dictionary: PageHeader = {
      type: 'DICTIONARY_PAGE',
      uncompressed_page_size: 4,
      compressed_page_size: 4,
      dictionary_page_header: { num_values: 1, encoding: 'PLAIN' },
    };
    expect(checkPageStreams(Uint8Array.from(int32s(5)), dictionary, leaf('REQUIRED'), 'INT32', 'x')).toBeUndefined();
  });

  it('bounds PLAIN_DICTIONARY indices by the dictionary as RLE_DICTIONARY ones', () => {
    const page = Uint8Array.from([2, ...varint(3 << 1), 3]);
    for (const encoding of ['PLAIN_DICTIONARY', 'RLE_DICTIONARY'] as const) {
      expect(checkPageStreams(page, v1(3, encoding), leaf('REQUIRED'), 'INT32', 'x', 4)).toBeUndefined();
      expect(checkPageStreams(page, v1(3, encoding), leaf('REQUIRED'), 'INT32', 'x', 3)).toEqual({
        type: 'Malformed',
        detail: 'x dictionary indices: index 3 past a dictionary of 3',
      });
    }
  });

  it('takes the RLE values of a v1 page of integers as values, bounded by no dictionary', () => {
    // A bit width, then a run of 3 values of 3: integers, not indices into a dictionary (hybrid.ts
    // names the stream "dictionary indices" whatever the encoding).
    const page = Uint8Array.from([2, ...varint(3 << 1), 3]);
    expect(checkPageStreams(page, v1(3, 'RLE'), leaf('REQUIRED'), 'INT32', 'x')).toBeUndefined();
    // The stream is still walked: a run of 4 for 3 values is refused.
    const over = Uint8Array.from([2, ...varint(4 << 1), 3]);
    expect(checkPageStreams(over, v1(3, 'RLE'), leaf('REQUIRED'), 'INT32', 'x')).toEqual({
      type: 'Malformed',
      detail: 'x dictionary indices: a run of 4 values, 3 left',
    });
  });

  it('reads dictionary indices from after their bit width to the page’s last byte', () => {
    const page = Uint8Array.from([2, ...encoded([3, 2, 1, 0], 2)]);
    expect(checkPageStreams(page, v1(4, 'RLE_DICTIONARY'), leaf('REQUIRED'), 'INT32', 'x', 4)).toBeUndefined();
    // A run whose value would be the byte after the page.
    const cut = Uint8Array.from([2, ...varint(4 << 1)]);
    expect(checkPageStreams(cut, v1(4, 'RLE_DICTIONARY'), leaf('REQUIRED'), 'INT32', 'x', 4)).toEqual({
      type: 'Malformed',
      detail: "x dictionary indices: a run past the stream's end",
    });
  });
});

describe('which pages checkedPage decompresses before checking them', () => {
  const decoder = (codec: CompressionCodec, schemaPath = leaf('REQUIRED')): ColumnDecoder => ({
    pathInSchema: ['x'],
    type: 'INT32',
    element: schemaPath[schemaPath.length - 1]!.element,
    schemaPath,
    codec,
    parsers: PARSERS,
  });
  const v2 = (body: number, is_compressed: boolean, type: PageHeader['type'] = 'DATA_PAGE_V2'): PageHeader => ({
    type,
    uncompressed_page_size: body,
    compressed_page_size: body,
    data_page_header_v2: {
      num_values: 1,
      num_nulls: 0,
      num_rows: 1,
      encoding: 'PLAIN',
      definition_levels_byte_length: 0,
      repetition_levels_byte_length: 0,
      is_compressed,
    },
  });
  /** A snappy block of one literal: its length, the literal's tag, its bytes. */
  const snappy = (bytes: readonly number[]): Uint8Array =>
    Uint8Array.from([bytes.length, (bytes.length - 1) << 2, ...bytes]);

  it('checks an uncompressed v1 page’s streams on its bytes as stored, its sizes left to hyparquet', () => {
    const body = Uint8Array.from([...withLength(encoded([1, 1, 1, 1], 1)), ...int32s(1, 2, 3, 4)]);
    // A declared size that is not the body's: not compared here (hyparquet compares it when it reads).
    const header = { ...v1(4, 'PLAIN'), uncompressed_page_size: body.length + 1 };
    const uncompressed = decoder('UNCOMPRESSED', leaf('OPTIONAL'));
    expect(checkedPage(header, body, uncompressed, 'x page')).toEqual({
      ok: true,
      value: { header: { ...header, compressed_page_size: body.length }, body, decoder: uncompressed },
    });
    const bad = Uint8Array.from([...withLength([...varint(9 << 1), 1]), ...int32s(1, 2, 3, 4)]);
    expect(checkedPage({ ...header, uncompressed_page_size: bad.length + 1 }, bad, uncompressed, 'x page')).toEqual({
      ok: false,
      error: { type: 'Malformed', detail: 'x page definition levels: a run of 9 values, 4 left' },
    });
  });

  it('refuses a compressed v1 page that does not decompress', () => {
    // A literal of 4 bytes with 1 of them there.
    const body = Uint8Array.from([4, 3 << 2, 1]);
    const header = { ...v1(1, 'PLAIN'), uncompressed_page_size: 4 };
    expect(checkedPage(header, body, decoder('SNAPPY'), 'x page')).toEqual({
      ok: false,
      error: { type: 'Malformed', detail: 'x page: snappy error literal exceeds input length' },
    });
  });

  it('hands on a v2 page marked not compressed as stored, whatever the chunk’s codec', () => {
    const body = Uint8Array.from(int32s(7));
    const header = v2(body.length, false);
    const snappyDecoder = decoder('SNAPPY');
    expect(checkedPage(header, body, snappyDecoder, 'x page')).toEqual({
      ok: true,
      value: { header, body, decoder: snappyDecoder },
    });
  });

  it('hands on a v2 page of an uncompressed chunk as stored, its header still marked compressed', () => {
    // hyparquet's own "decompression" of such a page is a copy: none is made here, nor is the mark changed.
    const body = Uint8Array.from(int32s(7));
    const header = v2(body.length, true);
    const uncompressed = decoder('UNCOMPRESSED');
    expect(checkedPage(header, body, uncompressed, 'x page')).toEqual({
      ok: true,
      value: { header, body, decoder: uncompressed },
    });
  });

  it('decompresses the values of a compressed v2 page and marks it not compressed', () => {
    const body = snappy(int32s(7));
    const header = { ...v2(4, true), compressed_page_size: body.length };
    const snappyDecoder = decoder('SNAPPY');
    expect(checkedPage(header, body, snappyDecoder, 'x page')).toEqual({
      ok: true,
      value: {
        header: {
          ...header,
          compressed_page_size: 4,
          data_page_header_v2: { ...header.data_page_header_v2, is_compressed: false },
        },
        body: Uint8Array.from(int32s(7)),
        decoder: snappyDecoder,
      },
    });
  });

  it('decompresses no page of another type, whatever data page header it carries', () => {
    // The reader hands checkedPage data pages only; this is checkedPage's own rule, by the page's type.
    const body = snappy(int32s(7));
    const header = { ...v2(4, true, 'INDEX_PAGE'), compressed_page_size: body.length };
    const snappyDecoder = decoder('SNAPPY');
    expect(checkedPage(header, body, snappyDecoder, 'x page')).toEqual({
      ok: true,
      value: { header, body, decoder: snappyDecoder },
    });
  });

  it('refuses a compressed v2 page whose values do not decompress', () => {
    // A literal of 4 bytes with 1 of them there.
    const body = Uint8Array.from([4, 3 << 2, 1]);
    const header = { ...v2(4, true), compressed_page_size: body.length };
    expect(checkedPage(header, body, decoder('SNAPPY'), 'x page')).toEqual({
      ok: false,
      error: { type: 'Malformed', detail: 'x page: snappy error literal exceeds input length' },
    });
  });
});

describe('packed runs that hold no bytes of values, walked as hyparquet walks them', () => {
  // hyparquet's readBitPacked reads one byte before any value, also for a run of no groups or
  // of width 0. The check once counted no byte for them, so the two walks parted: the byte it
  // skipped became, for hyparquet, the start of a run header claiming far more values than
  // the page holds — the fatal array growth this check exists to prevent.
  const refusal = (r: ReturnType<typeof checkHybrid>): string =>
    r.ok ? 'accepted' : r.error.type === 'Malformed' ? r.error.detail : r.error.type;

  it('a packed run of no groups moves one byte on: what follows is read where hyparquet reads it', () => {
    // Header 1 (no groups), then the byte hyparquet takes, then an RLE run of 1 value 1.
    const stream = Uint8Array.from([1, 0xd0, 2, 1]);
    expect(hyparquetReads(stream, 1, 1)).toEqual([1]);
    expect(checkHybrid(stream, 0, stream.length, 1, 1, 'levels', 1)).toEqual({ ok: true, value: 1 });
    // The bytes found to bypass the check: hyparquet reads 0xd0 0x0f as a run of 1,000 values.
    const bypass = Uint8Array.from([1, 2, 0xd0, 0x0f, 1]);
    expect(refusal(checkHybrid(bypass, 0, bypass.length, 1, 1, 'levels'))).toBe('levels: a run of 1000 values, 1 left');
    // Of 2^30 values, which hyparquet would write into an array of one.
    const fatal = Uint8Array.from([1, 2, ...varint(2 ** 31), 1]);
    expect(refusal(checkHybrid(fatal, 0, fatal.length, 1, 1, 'levels'))).toBe(
      `levels: a run of ${2 ** 30} values, 1 left`,
    );
  });

  it('a packed run of width 0 moves one byte on when more runs follow, none when it ends the values', () => {
    // Width 0 (a dictionary of one entry): 8 values packed in no bytes, then the byte hyparquet takes.
    const followed = Uint8Array.from([3, 0xd0, 2, 0]);
    expect(hyparquetReads(followed, 0, 9)).toEqual(Array<number>(9).fill(0));
    expect(checkHybrid(followed, 0, followed.length, 0, 9, 'indices', 0)).toEqual({ ok: true, value: 9 });
    const bypass = Uint8Array.from([3, 2, 0xd0, 0x0f, 0]);
    expect(refusal(checkHybrid(bypass, 0, bypass.length, 0, 9, 'indices'))).toBe(
      'indices: a run of 1000 values, 1 left',
    );
    // The last run of a stream may end where the stream ends: hyparquet's extra byte is never used.
    const last = Uint8Array.from([3]);
    expect(checkHybrid(last, 0, last.length, 0, 8, 'indices', 0)).toEqual({ ok: true, value: 8 });
    // A run that needs its byte where the stream has none is refused.
    const short = Uint8Array.from([3]);
    expect(refusal(checkHybrid(short, 0, short.length, 0, 9, 'indices'))).toBe(
      "indices: a packed run past the stream's end",
    );
  });
});
