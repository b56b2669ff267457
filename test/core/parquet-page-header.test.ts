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
