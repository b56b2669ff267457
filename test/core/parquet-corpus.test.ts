/**
 * Every plain (unencrypted) Parquet file of the public parquet-testing corpus
 * (shared/vectors/parquet-testing-all/data, sub-folders included; what each holds is in
 * its README.md and notes) read through our reader, value by value:
 *
 * - against DuckDB (@duckdb/node-api) wherever DuckDB reads the file;
 * - where DuckDB refuses it, against the corpus's own notes: the BYTE_STREAM_SPLIT columns
 *   against their PLAIN twins, the Hadoop-framed and bare LZ4 files against the LZ4_RAW
 *   files of the same rows, `map_no_value.parquet` against map_no_value.md;
 * - refused only where listed below by name, with the typed error expected.
 *
 * A file in the corpus that is in no list is compared with DuckDB: nothing is skipped.
 * The encrypted files are read in parquet-vectors.test.ts.
 *
 * Values are compared in one plain form: integers and bigints as decimal text, times as
 * epoch milliseconds (DuckDB's Dates hold whole milliseconds: ours are truncated to them),
 * bytes as hex, a MAP as an object keyed by each key's text (how our reader returns maps;
 * DuckDB returns a list of key/value entries).
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { toHex } from '../../src/core/bytes.js';
import { openParquet } from '../../src/core/parquet/read.js';
import type { ParquetError } from '../../src/core/parquet/modules.js';
import { webPmeCipher } from '../../src/runtime/pme-cipher.js';
import { describeVectors, hasVector, vectorPath } from '../helpers/vectors.js';

const DIR = 'parquet-testing-all/data';

/** Files our reader refuses, and why: a valid value it cannot hold, or a file that is broken. */
const REFUSED: Readonly<Record<string, { readonly type: ParquetError['type']; readonly why: RegExp }>> = {
  // A string of 2^30 bytes in one page: past the 256 MiB a page may inflate to here.
  'large_string_map.brotli.parquet': { type: 'Unsupported', why: /page of 1073741828 bytes/ },
  // A time in the year 290000, written with a negative nanosecond field (int96_from_spark.md).
  'int96_from_spark.parquet': { type: 'Unsupported', why: /INT96 time with a negative nanosecond-of-day/ },
  // A dictionary page whose size runs past its column chunk (the corpus's deliberate fault).
  'nation.dict-malformed.parquet': { type: 'Truncated', why: /runs past the chunk/ },
};

/** Files DuckDB refuses, checked against the corpus's notes instead. */
const BY_NOTES = [
  'byte_stream_split_extended.gzip.parquet',
  'hadoop_lz4_compressed.parquet',
  'hadoop_lz4_compressed_larger.parquet',
  'non_hadoop_lz4_compressed.parquet',
  'map_no_value.parquet',
] as const;

function parquetFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return parquetFiles(path);
    return name.endsWith('.parquet') ? [path] : [];
  });
}

const files = hasVector(DIR)
  ? parquetFiles(vectorPath(DIR))
      .map((p) => relative(vectorPath(DIR), p))
      .sort()
  : [];

async function read(name: string): Promise<Record<string, unknown[]>> {
  const file = await openParquet(new Uint8Array(readFileSync(vectorPath(`${DIR}/${name}`))), {}, webPmeCipher);
  if (!file.ok) throw new Error(`${name}: ${JSON.stringify(file.error)}`);
  const columns = await file.value.readColumns();
  if (!columns.ok) throw new Error(`${name}: ${JSON.stringify(columns.error)}`);
  for (const values of Object.values(columns.value)) expect(values.length).toBe(file.value.rowCount);
  return Object.fromEntries(Object.entries(columns.value).map(([k, v]) => [k, Array.from(v as ArrayLike<unknown>)]));
}

const isMapEntries = (v: unknown): v is { key: unknown; value: unknown }[] =>
  Array.isArray(v) &&
  v.length > 0 &&
  v.every((e) => typeof e === 'object' && e !== null && Object.keys(e as object).join() === 'key,value');

/** One plain form of a value (see the header); `time`: the other side gives Dates. */
function plain(value: unknown): unknown {
  if (value === null || value === undefined) return null;
  if (typeof value === 'bigint') return value.toString();
  if (typeof value === 'number') return Number.isNaN(value) ? 'NaN' : Object.is(value, -0) ? '-0' : String(value);
  if (value instanceof Date) return String(value.getTime());
  if (value instanceof Uint8Array) return `0x${toHex(value)}`;
  if (isMapEntries(value)) return plain(Object.fromEntries(value.map((e) => [String(plain(e.key)), e.value])));
  if (Array.isArray(value)) return value.map(plain);
  if (typeof value === 'object') {
    const record = value as Record<string, unknown>;
    return Object.fromEntries(
      Object.keys(record)
        .sort()
        .map((k) => [k, plain(record[k])]),
    );
  }
  return value;
}

/** Our value in DuckDB's terms where DuckDB's type is coarser: times as whole milliseconds. */
function likeDuck(ours: unknown, duck: unknown): unknown {
  if (duck instanceof Date && typeof ours === 'number') return Math.floor(ours);
  if (ours instanceof Uint8Array || duck instanceof Uint8Array) return ours;
  // An empty MAP: no entries for DuckDB, an object with no keys here.
  const emptyObject =
    typeof ours === 'object' && ours !== null && !Array.isArray(ours) && Object.keys(ours).length === 0;
  if (emptyObject && Array.isArray(duck) && duck.length === 0) return [];
  if (Array.isArray(duck) && Array.isArray(ours)) return ours.map((v, i) => likeDuck(v, duck[i]));
  if (duck && ours && typeof duck === 'object' && typeof ours === 'object' && !Array.isArray(duck)) {
    const o = ours as Record<string, unknown>;
    return Object.fromEntries(Object.keys(o).map((k) => [k, likeDuck(o[k], (duck as Record<string, unknown>)[k])]));
  }
  if (isMapEntries(duck) && ours && typeof ours === 'object' && !Array.isArray(ours)) {
    const byKey = new Map(duck.map((e) => [String(plain(e.key)), e.value]));
    const o = ours as Record<string, unknown>;
    return Object.fromEntries(Object.keys(o).map((k) => [k, likeDuck(o[k], byKey.get(k))]));
  }
  return ours;
}

describeVectors('the parquet-testing corpus: every plain file, value by value', DIR, () => {
  let db: DuckDBConnection;
  beforeAll(async () => {
    db = await (await DuckDBInstance.create(':memory:')).connect();
  });
  afterAll(() => db.closeSync());

  it('finds the corpus, and every file named below is in it', () => {
    expect(files.length).toBeGreaterThanOrEqual(75);
    for (const name of [...Object.keys(REFUSED), ...BY_NOTES]) expect(files).toContain(name);
  });

  const byDuck = files.filter((f) => !(f in REFUSED) && !(BY_NOTES as readonly string[]).includes(f));
  it.each(byDuck)('%s: every value as DuckDB reads it', async (name) => {
    const ours = await read(name);
    const rows = (await db.runAndReadAll(`SELECT * FROM read_parquet('${vectorPath(`${DIR}/${name}`)}')`))
      .getRowObjectsJS()
      .map((r) => r as Record<string, unknown>);
    expect(Object.keys(ours).sort()).toEqual(Object.keys(rows[0] ?? ours).sort());
    for (const [column, values] of Object.entries(ours)) {
      expect(values.length, column).toBe(rows.length);
      const theirs = rows.map((r) => r[column]);
      expect(plain(values.map((v, i) => likeDuck(v, theirs[i]))), column).toEqual(plain(theirs));
    }
  });

  it.each(Object.entries(REFUSED))('%s is refused: %o', async (name, { type, why }) => {
    const file = await openParquet(new Uint8Array(readFileSync(vectorPath(`${DIR}/${name}`))), {}, webPmeCipher);
    const result = file.ok ? await file.value.readColumns() : file;
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.error.type).toBe(type);
    expect('detail' in result.error ? result.error.detail : '').toMatch(why);
  });

  it('byte_stream_split_extended.gzip.parquet: each BYTE_STREAM_SPLIT column equals its PLAIN twin', async () => {
    const columns = await read('byte_stream_split_extended.gzip.parquet');
    const kinds = Object.keys(columns).filter((k) => k.endsWith('_plain'));
    expect(kinds).toHaveLength(7);
    for (const plainName of kinds) {
      const split = columns[plainName.replace(/_plain$/, '_byte_stream_split')]!;
      expect(split.length, plainName).toBe(200);
      expect(plain(split), plainName).toEqual(plain(columns[plainName]));
    }
  });

  it.each([
    ['hadoop_lz4_compressed.parquet', 'lz4_raw_compressed.parquet'],
    ['non_hadoop_lz4_compressed.parquet', 'lz4_raw_compressed.parquet'],
    ['hadoop_lz4_compressed_larger.parquet', 'lz4_raw_compressed_larger.parquet'],
  ])('%s holds the rows of %s (DuckDB reads only the LZ4_RAW one)', async (lz4, raw) => {
    const [ours, twin] = [await read(lz4), await read(raw)];
    expect(Object.values(ours)[0]!.length).toBeGreaterThan(0);
    expect(plain(ours)).toEqual(plain(twin));
  });

  it('map_no_value.parquet: as map_no_value.md writes it', async () => {
    const columns = await read('map_no_value.parquet');
    expect(plain(columns['my_map'])).toEqual(
      plain([
        { 1: null, 2: null, 3: null },
        { 4: null, 5: null, 6: null },
        { 7: null, 8: null, 9: null },
      ]),
    );
    const lists = [
      [1, 2, 3],
      [4, 5, 6],
      [7, 8, 9],
    ];
    expect(columns['my_map_no_v']).toEqual(lists);
    expect(columns['my_list']).toEqual(lists);
  });

  it('binary.parquet: an unannotated BYTE_ARRAY stays bytes (0x00 … 0x0b), not text', async () => {
    const foo = (await read('binary.parquet'))['foo']!;
    expect(foo.every((v) => v instanceof Uint8Array)).toBe(true);
    expect(foo.map((v) => toHex(v as Uint8Array))).toEqual(
      Array.from({ length: 12 }, (_, i) => i.toString(16).padStart(2, '0')),
    );
  });

  it('repeated_primitive_no_list.parquet: a REPEATED field with no entries is [], never null', async () => {
    const columns = await read('repeated_primitive_no_list.parquet');
    expect(columns['Int32_list']).toEqual([[0, 1, 2, 3], [], [4], [5, 6, 7, 8]]);
    const group = columns['group_of_lists'] as { Int32_list_in_group: unknown }[];
    expect(group[1]!.Int32_list_in_group).toEqual([]);
  });

  it('column_chunk_key_value_metadata.parquet: a valid file of no rows reads as no rows', async () => {
    const columns = await read('column_chunk_key_value_metadata.parquet');
    expect(Object.keys(columns)).toEqual(['column1', 'column2']);
    expect(columns['column1']).toEqual([]);
  });
});
