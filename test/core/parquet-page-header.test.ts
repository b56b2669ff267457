/**
 * A page header's counts are checked before any decoder trusts them (core/parquet/decoding.ts
 * `checkHeader`): a page may claim at most MAX_PAGE_VALUES values — hyparquet allocates
 * arrays of that length, and an array past V8's limit ends the whole process rather than
 * throwing. (The fuzz test's fatal "invalid size" crash was a run claiming more values than
 * its page: parquet-hybrid.test.ts.)
 */
import { describe, expect, it } from 'vitest';
import type { PageHeader } from 'hyparquet/src/types.js';
import { checkHeader, MAX_PAGE_VALUES } from '../../src/core/parquet/decoding.js';

const v1 = (num_values: number): PageHeader => ({
  type: 'DATA_PAGE',
  uncompressed_page_size: 100,
  compressed_page_size: 100,
  data_page_header: {
    num_values,
    encoding: 'RLE',
    definition_level_encoding: 'RLE',
    repetition_level_encoding: 'RLE',
  },
});

const v2 = (num_values: number, num_rows = num_values): PageHeader => ({
  type: 'DATA_PAGE_V2',
  uncompressed_page_size: 100,
  compressed_page_size: 100,
  data_page_header_v2: {
    num_values,
    num_nulls: 0,
    num_rows,
    encoding: 'PLAIN',
    definition_levels_byte_length: 0,
    repetition_levels_byte_length: 0,
  },
});

const dictionary = (num_values: number): PageHeader => ({
  type: 'DICTIONARY_PAGE',
  uncompressed_page_size: 100,
  compressed_page_size: 100,
  dictionary_page_header: { num_values, encoding: 'PLAIN' },
});

describe('page headers claiming too many values', () => {
  it.each([
    ['a v1 data page', v1],
    ['a v2 data page', (n: number) => v2(n)],
    ['a v2 data page, by its rows', (n: number) => v2(1, n)],
    ['a dictionary page', dictionary],
  ])('%s of MAX_PAGE_VALUES values is read; one more is refused as unsupported', (_, page) => {
    expect(checkHeader(page(MAX_PAGE_VALUES), 100, 'c')).toBeUndefined();
    expect(checkHeader(page(MAX_PAGE_VALUES + 1), 100, 'c')).toEqual({
      type: 'Unsupported',
      detail: `c: page of ${MAX_PAGE_VALUES + 1} values`,
    });
  });
});

describe('page headers checked field by field', () => {
  const refusal = (header: PageHeader, body = 100) => checkHeader(header, body, 'c');
  const bad = (what: string) => ({ type: 'Malformed', detail: `c: page header ${what}` });
  /** A header of that type without the type's own header struct. */
  const bare = (type: PageHeader['type']): PageHeader => ({
    type,
    uncompressed_page_size: 100,
    compressed_page_size: 100,
  });

  it('refuses sizes and counts that are not whole numbers, word for word', () => {
    expect(refusal({ ...v1(5), uncompressed_page_size: -1 })).toEqual(bad('has no valid uncompressed size'));
    expect(refusal({ ...v1(5), uncompressed_page_size: 2 ** 28 + 1 })).toEqual({
      type: 'Unsupported',
      detail: `c: page of ${2 ** 28 + 1} bytes`,
    });
    expect(refusal(bare('DATA_PAGE'))).toEqual(bad('has no valid data page header'));
    expect(refusal(v1(1.5))).toEqual(bad('has no valid data page header'));
    expect(refusal(bare('DATA_PAGE_V2'))).toEqual(bad('has no data page v2 header'));
    const h2 = v2(5).data_page_header_v2!;
    expect(refusal({ ...v2(5), data_page_header_v2: { ...h2, num_nulls: -1 } })).toEqual(
      bad('lacks a count or a length'),
    );
    expect(refusal({ ...v2(5), data_page_header_v2: { ...h2, repetition_levels_byte_length: 0.5 } })).toEqual(
      bad('lacks a count or a length'),
    );
    expect(refusal({ ...v2(5), data_page_header_v2: { ...h2, num_nulls: 6 } })).toEqual(
      bad('counts more nulls than values'),
    );
    expect(refusal(bare('DICTIONARY_PAGE'))).toEqual(bad('has no valid dictionary page header'));
  });

  it('refuses levels longer than the page or its body, and encodings hyparquet does not name', () => {
    const h2 = v2(5).data_page_header_v2!;
    const levels = (r: number, d: number, body: number, size = 100) =>
      refusal(
        {
          ...v2(5),
          uncompressed_page_size: size,
          data_page_header_v2: { ...h2, repetition_levels_byte_length: r, definition_levels_byte_length: d },
        },
        body,
      );
    expect(levels(30, 30, 60)).toBeUndefined();
    expect(levels(30, 31, 60)).toEqual(bad('has levels longer than the page'));
    expect(levels(30, 30, 100, 59)).toEqual(bad('has levels longer than the page'));
    const unknown = undefined as unknown as 'PLAIN';
    expect(refusal({ ...v1(5), data_page_header: { ...v1(5).data_page_header!, encoding: unknown } })).toEqual({
      type: 'Unsupported',
      detail: 'c: unknown encoding',
    });
    expect(refusal({ ...v2(5), data_page_header_v2: { ...h2, encoding: unknown } })).toEqual({
      type: 'Unsupported',
      detail: 'c: unknown encoding',
    });
  });
});
