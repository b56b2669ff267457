/**
 * Edges of the Parquet glue that the other tests leave open: which bytes count as a zstd
 * frame (core/parquet/codecs.ts), the file tail at its shortest and with its structures
 * broken (footer.ts), the FileMetaData options handed to hyparquet, a module length frame
 * that ends exactly at the end of its bytes (modules.ts), the page-size bound, and the
 * joining of empty parts (decoding.ts). Files are assembled byte by byte with the Thrift
 * writer; hyparquet's own metadata reader is the oracle for what a footer decodes to.
 */
import { decompress as fzstd } from 'fzstd';
import { parquetMetadata } from 'hyparquet/src/metadata.js';
import type { PageHeader } from 'hyparquet/src/types.js';
import { describe, expect, it } from 'vitest';
import { DECOMPRESSORS, frameContentSize } from '../../src/core/parquet/codecs.js';
import { checkHeader, concatValues, PARSERS } from '../../src/core/parquet/decoding.js';
import { asMetadata, readTail, type ReadKeys } from '../../src/core/parquet/footer.js';
import { moduleAt } from '../../src/core/parquet/modules.js';
import { encodeStruct, T, type Field } from '../../src/core/parquet/thrift.js';
import { webPmeCipher } from '../../src/runtime/pme-cipher.js';

const PAR1 = [0x50, 0x41, 0x52, 0x31];
const PARE = [0x50, 0x41, 0x52, 0x45];
const le32 = (n: number) => [n & 0xff, (n >> 8) & 0xff, (n >> 16) & 0xff, (n >>> 24) & 0xff];
/** magic ‖ footer ‖ footer length ‖ magic: a file of nothing but its tail. */
const file = (magic: number[], footer: Uint8Array | number[]) =>
  Uint8Array.from([...magic, ...footer, ...le32(footer.length), ...magic]);
const tail = (bytes: Uint8Array, keys: ReadKeys = {}) => readTail(bytes, keys, webPmeCipher);
const NO_STOP = 'thrift struct ended without STOP';

describe('zstd frame headers', () => {
  const MAGIC = [0x28, 0xb5, 0x2f, 0xfd];

  it('takes bytes whose first, second or third magic byte differs for no frame at all', () => {
    // A single-segment header declaring 7 bytes, after the whole magic: a frame of 7 bytes.
    expect(frameContentSize(Uint8Array.of(...MAGIC, 0x20, 7))).toBe(7);
    for (const i of [0, 1, 2]) {
      const bytes = Uint8Array.of(...MAGIC, 0x20, 7);
      bytes[i] = 0x00;
      expect(frameContentSize(bytes), `magic byte ${i}`).toBeUndefined();
    }
  });

  it('leaves bytes that are no frame to fzstd, whose refusal is the one given', () => {
    // No size check first: bytes without the magic declare no size to compare with the page.
    const noFrame = Uint8Array.of(0x00, 0xb5, 0x2f, 0xfd, 0x20, 7);
    const refusal = (() => {
      try {
        fzstd(noFrame, new Uint8Array(9));
      } catch (e) {
        return e;
      }
      throw new Error('fzstd read bytes without the zstd magic');
    })();
    expect(refusal).toBeInstanceOf(Error);
    // Given an Error, toThrow compares the thrown message with its message.
    expect(() => DECOMPRESSORS.ZSTD!(noFrame, 9)).toThrow(refusal);
  });
});

describe('the file tail at its edges', () => {
  it('reads a 12-byte file (both magics and a zero footer length) as an empty footer, malformed, not truncated', async () => {
    expect(await tail(file(PAR1, []))).toEqual({
      ok: false,
      error: { type: 'Malformed', detail: `FileMetaData: ${NO_STOP}` },
    });
    expect(await tail(file(PARE, []))).toEqual({
      ok: false,
      error: { type: 'Malformed', detail: `FileCryptoMetaData: ${NO_STOP}` },
    });
  });

  it('refuses a footer that is no Thrift struct as malformed, naming the structure it should be', async () => {
    // A struct field header (id 1, type STRUCT) and nothing after it: the reader runs off the end.
    const broken = [0x1c];
    expect(await tail(file(PAR1, broken))).toEqual({
      ok: false,
      error: { type: 'Malformed', detail: `FileMetaData: ${NO_STOP}` },
    });
    expect(await tail(file(PARE, broken))).toEqual({
      ok: false,
      error: { type: 'Malformed', detail: `FileCryptoMetaData: ${NO_STOP}` },
    });
  });

  it('refuses an encrypted footer whose sealed module is missing or cut, naming the footer', async () => {
    const unique = Uint8Array.of(1, 2, 3, 4, 5, 6, 7, 8);
    // FileCryptoMetaData { 1: AES_GCM_V1 { 2: aad_file_unique } }
    const crypto = encodeStruct([[1, T.STRUCT, [[1, T.STRUCT, [[2, T.BINARY, unique]]]]]]);
    const keys = { footerKey: new Uint8Array(16).fill(3) };
    expect(await tail(file(PARE, crypto), keys)).toEqual({
      ok: false,
      error: { type: 'Truncated', detail: `footer: no module length at ${crypto.length}` },
    });
    expect(await tail(file(PARE, [...crypto, ...le32(40), ...new Uint8Array(10)]), keys)).toEqual({
      ok: false,
      error: { type: 'Truncated', detail: 'footer: module of 40 bytes runs past the end' },
    });
  });
});

describe('FileMetaData as hyparquet decodes it', () => {
  const root: Field[] = [
    [4, T.BINARY, 'schema'],
    [5, T.I32, 1],
  ];
  /** A FileMetaData of version 2 whose schema is the root and one `column`, then `rest` (rows, row groups, …). */
  const fileMetaData = (column: Field[], ...rest: Field[]): Uint8Array =>
    encodeStruct([[1, T.I32, 2], [2, T.LIST, { elem: T.STRUCT, items: [root, column] }], ...rest]);

  it('leaves a BYTE_ARRAY column plain bytes though GeoParquet metadata names it a geometry', () => {
    const geo = JSON.stringify({ version: '1.1.0', primary_column: 'g', columns: { g: { encoding: 'WKB' } } });
    const footer = fileMetaData(
      [
        [1, T.I32, 6], // BYTE_ARRAY
        [3, T.I32, 1], // OPTIONAL
        [4, T.BINARY, 'g'],
      ],
      [3, T.I64, 0],
      [4, T.LIST, { elem: T.STRUCT, items: [] }],
      [
        5,
        T.LIST,
        {
          elem: T.STRUCT,
          items: [
            [
              [1, T.BINARY, 'geo'],
              [2, T.BINARY, geo],
            ],
          ],
        },
      ],
    );
    const read = asMetadata(footer);
    const framed = Uint8Array.from([...footer, ...le32(footer.length), ...PAR1]);
    expect(read).toEqual({ ok: true, value: parquetMetadata(framed, { parsers: PARSERS, geoparquet: false }) });
    if (!read.ok) throw new Error('metadata');
    expect(read.value.schema[1]).toStrictEqual({
      type: 'BYTE_ARRAY',
      type_length: undefined,
      repetition_type: 'OPTIONAL',
      name: 'g',
      num_children: undefined,
      converted_type: undefined,
      scale: undefined,
      precision: undefined,
      field_id: undefined,
      logical_type: undefined,
    });
    expect(read.value.key_value_metadata).toEqual([{ key: 'geo', value: geo }]);
  });

  it('gives a TIMESTAMP_MILLIS column’s statistics as milliseconds, as the values are read, not as Dates', () => {
    const ms = (n: number) => Uint8Array.from([...le32(n), 0, 0, 0, 0]);
    const footer = fileMetaData(
      [
        [1, T.I32, 2], // INT64
        [3, T.I32, 0], // REQUIRED
        [4, T.BINARY, 't'],
        [6, T.I32, 9], // TIMESTAMP_MILLIS
      ],
      [3, T.I64, 1],
      [
        4,
        T.LIST,
        {
          elem: T.STRUCT,
          items: [
            [
              [
                1,
                T.LIST,
                {
                  elem: T.STRUCT,
                  items: [
                    [
                      [2, T.I64, 4],
                      [
                        3,
                        T.STRUCT,
                        [
                          [1, T.I32, 2],
                          [2, T.LIST, { elem: T.I32, items: [0] }],
                          [3, T.LIST, { elem: T.BINARY, items: ['t'] }],
                          [4, T.I32, 0],
                          [5, T.I64, 1],
                          [6, T.I64, 8],
                          [7, T.I64, 8],
                          [9, T.I64, 4],
                          [
                            12,
                            T.STRUCT,
                            [
                              [5, T.BINARY, ms(1_700_000_000)],
                              [6, T.BINARY, ms(1_000)],
                            ],
                          ],
                        ],
                      ],
                    ],
                  ],
                },
              ],
              [2, T.I64, 8],
              [3, T.I64, 1],
            ],
          ],
        },
      ],
    );
    const read = asMetadata(footer);
    if (!read.ok) throw new Error(JSON.stringify(read.error));
    expect(read.value.row_groups[0]!.columns[0]!.meta_data!.statistics).toStrictEqual({
      max: undefined,
      min: undefined,
      null_count: undefined,
      distinct_count: undefined,
      max_value: 1_700_000_000,
      min_value: 1_000,
      is_max_value_exact: undefined,
      is_min_value_exact: undefined,
    });
  });
});

describe('module length frames', () => {
  it('reads a length that ends exactly at the end of the bytes', () => {
    expect(moduleAt(Uint8Array.of(9, 0, 0, 0, 0), 1, 'm')).toEqual({
      ok: true,
      value: { body: new Uint8Array(0), end: 5 },
    });
    expect(moduleAt(Uint8Array.of(9, 2, 0, 0, 0), 1, 'm')).toEqual({
      ok: false,
      error: { type: 'Truncated', detail: 'm: module of 2 bytes runs past the end' },
    });
  });
});

describe('page bounds and joined parts', () => {
  const dictionary = (uncompressed_page_size: number): PageHeader => ({
    type: 'DICTIONARY_PAGE',
    uncompressed_page_size,
    compressed_page_size: 100,
    dictionary_page_header: { num_values: 1, encoding: 'PLAIN' },
  });

  it('inflates a page of exactly 256 MiB and refuses one byte more', () => {
    const max = 256 * 1024 * 1024;
    expect(checkHeader(dictionary(max), 100, 'c')).toBeUndefined();
    expect(checkHeader(dictionary(max + 1), 100, 'c')).toEqual({
      type: 'Unsupported',
      detail: `c: page of ${max + 1} bytes`,
    });
  });

  it('joins empty plain parts into an empty array', () => {
    expect(concatValues([[], []])).toStrictEqual([]);
    expect(concatValues([[], new Int32Array(0)])).toStrictEqual([]);
    expect(concatValues([[], [1], new Int32Array([2, 3])])).toStrictEqual([1, 2, 3]);
  });
});
