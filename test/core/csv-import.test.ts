/**
 * A CSV into one encrypted object and back (core/object/csv-import.ts), in the core, with
 * text cut into chunks the way a file stream cuts it: batches of records (blank lines skipped,
 * a parse fault ending the stream), the time column found or named, row groups of the size
 * asked for with progress after each, a source that fails as `CsvUnreadable`, table names
 * from file names, and every kind of Parquet value as CSV text.
 */
import { describe, expect, it } from 'vitest';
import { csvBatches, csvObject, parquetCsv, tableName, type CsvSource } from '../../src/core/object/csv-import.js';
import { openObject } from '../../src/core/object/form.js';
import { writeEncryptedParquet } from '../../src/core/parquet/write.js';
import { openParquet } from '../../src/core/parquet/read.js';
import type { ColumnSpec } from '../../src/core/parquet/schema.js';
import { webPmeCipher } from '../../src/runtime/pme-cipher.js';
import { nobleVerifier, seededRandom, unsafeTestingSigner } from '../helpers/deterministic.js';

const random = seededRandom('csv-import-tests');
const signer = unsafeTestingSigner('importer');
const deps = { verifier: nobleVerifier, cipher: webPmeCipher };

/** The text as a stream of `size`-character chunks. */
const chunked = (text: string, size = 7): CsvSource =>
  async function* () {
    for (let at = 0; at < text.length; at += size) yield text.slice(at, at + size);
  };

async function collect<T>(stream: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of stream) out.push(item);
  return out;
}

const base = {
  domain: 'GENERAL' as const,
  table: 'readings',
  signer,
  random,
  cipher: webPmeCipher,
  hlc: { ms: 1, counter: 0 },
};

const CSV = [
  'at,site,value,ok',
  '2026-01-01T00:00:00Z,north,1.5,true',
  '',
  '2026-01-01T00:01:00Z,south,2.5,false',
  '2026-01-01T00:02:00Z,north,,true',
  '2026-01-01T00:03:00Z,east,4,false',
  '2026-01-01T00:04:00Z,west,5.25,true',
].join('\n');

describe('csvBatches', () => {
  it('gives records in batches of the size asked, blank lines skipped, the rest at the end', async () => {
    const batches = await collect(csvBatches(chunked(CSV)(), 2));
    expect(batches.map((b) => (b.ok ? b.value.map((r) => r[1]) : b.error))).toEqual([
      ['site', 'north'],
      ['south', 'north'],
      ['east', 'west'],
    ]);
    expect(await collect(csvBatches(chunked('a\n\nb\n')(), 10))).toEqual([{ ok: true, value: [['a'], ['b']] }]);
  });

  it('ends with the parser’s error, mid-stream or at the end', async () => {
    const mid = await collect(csvBatches(chunked('a,b\n"x"y,1\n2,3\n')(), 10));
    expect(mid).toHaveLength(1);
    expect(mid[0]).toMatchObject({ ok: false, error: { type: 'CsvMalformed' } });
    const end = await collect(csvBatches(chunked('a,b\n1,"open')(), 10));
    expect(end.at(-1)).toMatchObject({
      ok: false,
      error: { type: 'CsvMalformed', detail: 'a quoted field is not closed' },
    });
  });
});

describe('csvObject', () => {
  it('writes every row in row groups of the size asked, with progress, finding the time column', async () => {
    const seen: number[] = [];
    const formed = await csvObject(chunked(CSV), { ...base, rowGroupRows: 2, progress: (rows) => seen.push(rows) });
    if (!formed.ok) throw new Error(JSON.stringify(formed.error));
    expect(formed.value.columns.map((c) => [c.name, c.type])).toEqual([
      ['at', 'timestamp'],
      ['site', 'string'],
      ['value', 'double'],
      ['ok', 'boolean'],
    ]);
    // The first batch holds the header and one record: rows 1, 3, 5.
    expect(seen).toEqual([1, 3, 5]);
    expect(formed.value.manifest).toMatchObject({
      rows: 5,
      time: { column: 'at', min: Date.UTC(2026, 0, 1), max: Date.UTC(2026, 0, 1, 0, 4) },
    });
    const opened = await openObject(formed.value.bytes!, formed.value, deps);
    if (!opened.ok) throw new Error(opened.error.type);
    expect(opened.value.file.metadata.row_groups.map((g) => Number(g.num_rows))).toEqual([1, 2, 2]);
    const rows = await opened.value.file.readRows();
    expect(rows.ok && rows.value.map((r) => r['value'])).toEqual([1.5, 2.5, null, 4, 5.25]);
  });

  it('takes the time column it is told, and none when the CSV has no timestamp', async () => {
    const told = await csvObject(chunked('t1,t2\n2026-01-01,2026-02-01\n'), { ...base, timeColumn: 't2' });
    expect(told.ok && told.value.manifest.time?.column).toBe('t2');
    const found = await csvObject(chunked('n,t1,t2\n1,2026-01-01,2026-02-01\n'), base);
    expect(found.ok && found.value.manifest.time?.column).toBe('t1');
    const none = await csvObject(chunked('a,b\n1,x\n'), { ...base, rowGroupRows: 1 });
    expect(none.ok && none.value.manifest.time).toBeUndefined();
    expect(none.ok && none.value.manifest.rows).toBe(1);
  });

  it('refuses a CSV it cannot read, a time column that is not one, and a header alone', async () => {
    const failing: CsvSource = async function* () {
      yield 'a,b\n1,2\n';
      throw new Error('disk gone');
    };
    expect(await csvObject(failing, base)).toEqual({
      ok: false,
      error: { type: 'CsvUnreadable', detail: 'Error: disk gone' },
    });
    let passes = 0;
    const failsLater: CsvSource = async function* () {
      yield 'a,b\n1,2\n';
      if (++passes === 2) throw new Error('changed under us');
    };
    expect(await csvObject(failsLater, base)).toEqual({
      ok: false,
      error: { type: 'CsvUnreadable', detail: 'Error: changed under us' },
    });
    expect(await csvObject(chunked('a,b\n1,x\n'), { ...base, timeColumn: 'b' })).toMatchObject({
      ok: false,
      error: { type: 'InvalidObject', detail: 'time column b is not a timestamp column' },
    });
    expect(await csvObject(chunked('a,b\n'), base)).toMatchObject({ ok: false, error: { type: 'InvalidObject' } });
  });
});

describe('tableName', () => {
  it.each([
    ['Drill Cores.csv', 'drill_cores'],
    ['/data/2026 readings.CSV', 'readings'],
    ['C:\\exports\\Site-7.csv', 'site_7'],
    ['123.csv', 'imported'],
    ['', 'imported'],
    [`${'x'.repeat(80)}.csv`, 'x'.repeat(64)],
  ])('%s → %s', (file, name) => {
    expect(tableName(file)).toBe(name);
  });
});

describe('parquetCsv', () => {
  it('writes every kind of value as CSV text: times in ISO 8601, bytes in hex, nulls empty', async () => {
    const columns: ColumnSpec[] = [
      { name: 'ts', type: 'timestamp', nullable: true },
      { name: 'n', type: 'int64', nullable: true },
      { name: 'ok', type: 'boolean', nullable: true },
      { name: 'x', type: 'double', nullable: true },
      { name: 's', type: 'string', nullable: true },
      { name: 'id', type: 'rowid', nullable: false },
    ];
    const id = new Uint8Array(16).fill(0xab);
    const key = random.bytes(32);
    const written = await writeEncryptedParquet(
      [
        { ts: Date.UTC(2026, 0, 2, 3, 4, 5, 6), n: 2n ** 62n, ok: false, x: 0.1, s: 'a,"b"', id },
        { ts: null, n: null, ok: null, x: null, s: null, id },
      ],
      { columns, footerKey: key, cipher: webPmeCipher, random },
    );
    if (!written.ok) throw new Error(JSON.stringify(written.error));
    const file = await openParquet(written.value.bytes, { footerKey: key }, webPmeCipher);
    if (!file.ok) throw new Error(file.error.type);
    const csv = await parquetCsv(file.value);
    expect(csv).toEqual({
      ok: true,
      value: `ts,n,ok,x,s,id\n2026-01-02T03:04:05.006Z,4611686018427387904,false,0.1,"a,""b""",${'ab'.repeat(16)}\n,,,,,${'ab'.repeat(16)}\n`,
    });
    const some = await parquetCsv(file.value, { columns: ['s', 'ok'] });
    expect(some.ok && some.value.split('\n')[0]).toBe('s,ok');
  });
});
