/**
 * Forming objects at their edges (core/object/form.ts, csv-import.ts): bytes handed to a
 * sink as they are written are the same bytes an object collects; the footer names its
 * writer; row groups are exactly as many as the rows fill; a refused schema, a row group
 * of the wrong shape or a bad value is a typed error, not a throw; a CSV that changes
 * between the two passes of an import, or breaks off mid-way, is refused; nested values
 * come out of parquetCsv as JSON with 64-bit integers and bytes kept exact.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { csvBatches, csvObject, parquetCsv, type CsvSource } from '../../src/core/object/csv-import.js';
import { formObject, ObjectWriter, type FormOptions } from '../../src/core/object/form.js';
import { objectKeys } from '../../src/core/object/keys.js';
import { openParquet } from '../../src/core/parquet/read.js';
import type { ColumnSpec } from '../../src/core/parquet/schema.js';
import { webPmeCipher } from '../../src/runtime/pme-cipher.js';
import { seededRandom, unsafeTestingSigner } from '../helpers/deterministic.js';
import { describeVectors, vectorPath } from '../helpers/vectors.js';

const signer = unsafeTestingSigner('former');
const COLUMNS: ColumnSpec[] = [
  { name: 'ts', type: 'timestamp', nullable: false },
  { name: 'n', type: 'int32', nullable: true },
];
const options = (seed: string, over: Partial<FormOptions> = {}): FormOptions => ({
  domain: 'GENERAL',
  table: 'readings',
  columns: COLUMNS,
  timeColumn: 'ts',
  signer,
  random: seededRandom(seed),
  cipher: webPmeCipher,
  hlc: { ms: 1, counter: 0 },
  ...over,
});
const rows = (n: number) => Array.from({ length: n }, (_, i) => ({ ts: 1_700_000_000_000 + i, n: i }));

async function opened(bytes: Uint8Array, secret: Uint8Array) {
  const file = await openParquet(bytes, { footerKey: objectKeys(secret).dek }, webPmeCipher);
  if (!file.ok) throw new Error(JSON.stringify(file.error));
  return file.value;
}

describe('forming an object', () => {
  it('hands a sink the very bytes it would collect, and keeps none itself', async () => {
    const collected = await formObject(rows(30), { ...options('same'), rowGroupRows: 10 });
    const parts: Uint8Array[] = [];
    const sunk = await formObject(rows(30), {
      ...options('same', { sink: (b) => void parts.push(b.slice()) }),
      rowGroupRows: 10,
    });
    if (!collected.ok || !sunk.ok) throw new Error('form');
    expect(sunk.value.bytes).toBeUndefined();
    expect(Buffer.concat(parts)).toEqual(Buffer.from(collected.value.bytes!));
    expect(sunk.value.storageId).toBe(collected.value.storageId);
  });

  it('gives an object a time range only from the time column it names', async () => {
    // A column may be called "undefined"; without a time column nothing is taken for one.
    const { timeColumn: _none, ...untimed } = options('untimed');
    expect(_none).toBe('ts');
    const formed = await formObject([{ undefined: 5 }], {
      ...untimed,
      columns: [{ name: 'undefined', type: 'int32', nullable: true }],
    });
    if (!formed.ok) throw new Error(JSON.stringify(formed.error));
    expect(formed.value.manifest.time).toBeUndefined();
  });

  it('names its writer in the footer and fills exactly the row groups its rows need', async () => {
    const formed = await formObject(rows(20), { ...options('groups'), rowGroupRows: 10 });
    if (!formed.ok) throw new Error('form');
    const file = await opened(formed.value.bytes!, formed.value.secret);
    expect(file.metadata.created_by).toBe('sovereign-mesh sop/1');
    expect(file.metadata.row_groups.map((g) => Number(g.num_rows))).toEqual([10, 10]);
    expect(formed.value.manifest.time).toEqual({ column: 'ts', min: 1_700_000_000_000, max: 1_700_000_000_019 });
  });

  it('refuses no rows, a bad schema, and a bad value as typed errors', async () => {
    expect(await formObject([], options('none'))).toEqual({
      ok: false,
      error: { type: 'InvalidObject', detail: 'an object holds at least one row' },
    });
    const { timeColumn: _unused, ...untimed } = options('schema');
    expect(_unused).toBe('ts');
    expect(
      await formObject([{ a: 1 }], { ...untimed, columns: [{ name: '1a', type: 'int32', nullable: true }] }),
    ).toEqual({
      ok: false,
      error: { type: 'InvalidSchema', detail: 'column name "1a"' },
    });
    expect(await formObject([{ ts: 1, n: 1.5 }], options('value'))).toEqual({
      ok: false,
      error: { type: 'InvalidValue', column: 'n', row: 0, detail: 'expected a 32-bit integer' },
    });
  });

  it('refuses a row group missing its first column or of uneven columns, counting no rows', async () => {
    const started = await ObjectWriter.start(options('shape'));
    if (!started.ok) throw new Error('start');
    // The values of the others are not dropped because the first column is missing or empty.
    expect(await started.value.add({ n: [1] })).toEqual({
      ok: false,
      error: { type: 'InvalidValue', column: 'ts', row: 0, detail: 'column missing' },
    });
    expect(await started.value.add({ ts: [], n: [1] })).toEqual({
      ok: false,
      error: { type: 'InvalidValue', column: 'n', row: 0, detail: 'expected 0 values' },
    });
    expect(await started.value.add({ ts: [], n: [] })).toEqual({ ok: true, value: undefined });
    expect(await started.value.add({ ts: [1, 2], n: [1] })).toEqual({
      ok: false,
      error: { type: 'InvalidValue', column: 'n', row: 1, detail: 'expected 2 values' },
    });
    expect(await started.value.add({ ts: [5], n: [7] })).toEqual({ ok: true, value: undefined });
    const formed = await started.value.finish();
    if (!formed.ok) throw new Error('finish');
    expect(formed.value.manifest.rows).toBe(1);
    const file = await opened(formed.value.bytes!, formed.value.secret);
    const read = await file.readRows();
    expect(read.ok && read.value.map((r) => r['n'])).toEqual([7]);
  });
});

describe('importing a CSV at its edges', () => {
  const text = (lines: string[]) => lines.join('\n');
  const source =
    (...passes: string[]): CsvSource =>
    () => {
      const body = passes.length > 1 ? passes.shift()! : passes[0]!;
      return (async function* () {
        yield body;
      })();
    };
  const base = { domain: 'GENERAL' as const, table: 't', signer, cipher: webPmeCipher, hlc: { ms: 1, counter: 0 } };

  it('cuts one long chunk into batches of the size asked', async () => {
    const sizes: number[] = [];
    for await (const b of csvBatches(source(text(['a', '1', '2', '3', '4']))(), 2))
      if (b.ok) sizes.push(b.value.length);
    expect(sizes).toEqual([2, 2, 1]);
  });

  it('writes one row group per batch of data rows, none for the header alone', async () => {
    const csv = text(['n', '1', '2', '3']);
    const formed = await csvObject(source(csv), { ...base, random: seededRandom('csv1'), rowGroupRows: 1 });
    if (!formed.ok) throw new Error(JSON.stringify(formed.error));
    const file = await opened(formed.value.bytes!, formed.value.secret);
    expect(file.metadata.row_groups.map((g) => Number(g.num_rows))).toEqual([1, 1, 1]);
  });

  it('refuses a file that changed between its two passes, or breaks off, as typed errors', async () => {
    const changed = await csvObject(source(text(['n', '1', '2']), text(['n', '1', '2.5'])), {
      ...base,
      random: seededRandom('csv2'),
    });
    expect(changed).toEqual({
      ok: false,
      error: { type: 'InvalidValue', column: 'n', row: 1, detail: 'expected a 32-bit integer' },
    });
    const ragged = await csvObject(source(text(['n,m', '1,2', '3,4']), text(['n,m', '1,2', '3'])), {
      ...base,
      random: seededRandom('csv4'),
    });
    expect(ragged).toEqual({
      ok: false,
      error: {
        type: 'CsvUnreadable',
        detail: 'the file changed while it was imported: a row of 1 fields, 2 in the header',
      },
    });
    const broken = await csvObject(source(text(['n', '1', '2']), text(['n', '1', '"2'])), {
      ...base,
      random: seededRandom('csv3'),
    });
    expect(broken).toEqual({
      ok: false,
      error: { type: 'CsvMalformed', line: 3, detail: 'a quoted field is not closed' },
    });
  });
});

describeVectors('nested values as CSV text', 'parquet-testing-all/data', () => {
  it('writes lists as JSON, 64-bit integers as exact digits', async () => {
    const bytes = new Uint8Array(readFileSync(vectorPath('parquet-testing-all/data/list_columns.parquet')));
    const file = await openParquet(bytes, {}, webPmeCipher);
    if (!file.ok) throw new Error(JSON.stringify(file.error));
    const csv = await parquetCsv(file.value);
    if (!csv.ok) throw new Error(JSON.stringify(csv.error));
    expect(csv.value.split('\n').slice(0, 2)).toEqual([
      'int64_list,utf8_list',
      '"[""1"",""2"",""3""]","[""abc"",""efg"",""hij""]"',
    ]);
  });
});
