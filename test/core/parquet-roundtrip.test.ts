/**
 * Our encrypted Parquet writer read back by our reader: every supported type
 * with nulls and non-ASCII text, 100,000-row files with several row groups
 * and pages, streaming, the file's whole-column statistics, the PME layout
 * (PARE magic, RowGroup ordinals, one key for everything), and bad input —
 * a flipped byte anywhere, a wrong key, every truncation, bad values and
 * schemas — each a typed error and never a partial result.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { compareBytes, utf8 } from '../../src/core/bytes.js';
import { compareStrings } from '../../src/core/parquet/columns.js';
import { openParquet } from '../../src/core/parquet/read.js';
import type { CellValue, ColumnSpec } from '../../src/core/parquet/schema.js';
import {
  EncryptedParquetWriter,
  SNAPPY,
  UNCOMPRESSED,
  writeEncryptedParquet,
  type PageCompression,
} from '../../src/core/parquet/write.js';
import { webPmeCipher } from '../../src/runtime/pme-cipher.js';
import { zstdCompression } from '../../src/runtime/zstd.js';
import { seededRandom } from '../helpers/deterministic.js';
import { runs } from '../helpers/runs.js';

const random = seededRandom('parquet-roundtrip');
const DEK = random.bytes(32);
const cipher = webPmeCipher;

const COLUMNS: ColumnSpec[] = [
  { name: 'ts', type: 'timestamp', nullable: false },
  { name: 'device', type: 'string', nullable: false },
  { name: 'temp', type: 'double', nullable: true },
  { name: 'ratio', type: 'float', nullable: true },
  { name: 'count', type: 'int32', nullable: true },
  { name: 'total', type: 'int64', nullable: true },
  { name: 'ok', type: 'boolean', nullable: true },
  { name: 'note', type: 'string', nullable: true },
  { name: '_row_id', type: 'rowid', nullable: false },
];

function rowId(i: number): Uint8Array {
  const id = new Uint8Array(16);
  id.set([1, 2, 3, 4, 5, 6, 7, 8]);
  new DataView(id.buffer).setBigUint64(8, BigInt(i));
  return id;
}

function row(i: number): Record<string, CellValue> {
  return {
    ts: 1_700_000_000_000 + i * 1000,
    device: `sensor-${i % 40}`,
    temp: i % 7 === 0 ? null : (i - 500) * 0.25,
    ratio: i % 5 === 0 ? null : Math.fround(i / 8),
    count: i % 11 === 0 ? null : i - 1000,
    total: i % 3 === 0 ? null : BigInt(i) * 10_000_000_000n - 5n,
    ok: i % 4 === 0 ? null : i % 2 === 0,
    note: i % 2 === 0 ? null : `Zürich ☃ 北 ${i} 𝄞`,
    _row_id: rowId(i),
  };
}

async function write(
  rows: Record<string, CellValue>[],
  options: { rowGroupRows?: number; pageBytes?: number; compression?: PageCompression } = {},
) {
  const written = await writeEncryptedParquet(rows, { columns: COLUMNS, footerKey: DEK, cipher, random, ...options });
  if (!written.ok) throw new Error(JSON.stringify(written.error));
  return written.value;
}

async function readAll(bytes: Uint8Array, key = DEK) {
  const file = await openParquet(bytes, { footerKey: key }, cipher);
  if (!file.ok) return file;
  return file.value.readRows();
}

const ZSTD = await zstdCompression();

describe('encrypted Parquet round trip', () => {
  it('returns every value of every type, nulls and non-ASCII text included', async () => {
    const rows = Array.from({ length: 2000 }, (_, i) => row(i));
    const { bytes } = await write(rows, { rowGroupRows: 700 });
    const back = await readAll(bytes);
    if (!back.ok) throw new Error(JSON.stringify(back.error));
    expect(back.value).toEqual(rows);
  });

  it.each([
    ['no compression', UNCOMPRESSED],
    ['Snappy', SNAPPY],
    ['ZSTD', ZSTD],
  ])('compresses pages with %s, named in every column chunk, and reads them back', async (_, compression) => {
    const rows = Array.from({ length: 5000 }, (_, i) => row(i));
    const { bytes } = await write(rows, { rowGroupRows: 2000, pageBytes: 16 * 1024, compression });
    const opened = await openParquet(bytes, { footerKey: DEK }, cipher);
    if (!opened.ok) throw new Error(JSON.stringify(opened.error));
    const codecs = new Set(opened.value.metadata.row_groups.flatMap((g) => g.columns.map((c) => c.meta_data?.codec)));
    expect([...codecs]).toEqual([compression.codec]);
    const back = await opened.value.readRows();
    if (!back.ok) throw new Error(JSON.stringify(back.error));
    expect(back.value).toEqual(rows);
  });

  it('writes 100,000 rows in several row groups of several pages and reads them back', async () => {
    const rows = Array.from({ length: 100_000 }, (_, i) => row(i));
    const { bytes, file } = await write(rows, { rowGroupRows: 30_000, pageBytes: 64 * 1024 });
    expect(file.rowGroups).toBe(4);
    const opened = await openParquet(bytes, { footerKey: DEK }, cipher);
    if (!opened.ok) throw new Error(JSON.stringify(opened.error));
    const meta = opened.value.metadata;
    expect(meta.row_groups.map((g) => g.ordinal)).toEqual([0, 1, 2, 3]);
    expect(meta.row_groups.every((g) => g.columns.every((c) => c.crypto_metadata !== undefined))).toBe(true);
    const columns = await opened.value.readColumns({ columns: ['ts', 'note', 'total'] });
    if (!columns.ok) throw new Error(JSON.stringify(columns.error));
    expect(columns.value['ts']).toHaveLength(100_000);
    for (const i of [0, 1, 29_999, 30_000, 64_123, 99_999]) {
      expect(columns.value['ts']![i]).toBe(rows[i]!['ts']);
      expect(columns.value['note']![i]).toBe(rows[i]!['note']);
      expect(columns.value['total']![i]).toBe(rows[i]!['total']);
    }
    const second = await opened.value.readColumns({ columns: ['count'], rowGroups: [1] });
    if (!second.ok) throw new Error(JSON.stringify(second.error));
    expect(Array.from(second.value['count']!)).toEqual(rows.slice(30_000, 60_000).map((r) => r['count']));
  });

  it('summarises each column over the whole file: nulls, min and max in the column’s order', async () => {
    const rows = Array.from({ length: 1000 }, (_, i) => row(i));
    const { file } = await write(rows, { rowGroupRows: 300 });
    const by = Object.fromEntries(file.columns.map((c) => [c.name, c]));
    expect(by['ts']).toMatchObject({ nulls: 0, min: 1_700_000_000_000, max: 1_700_000_999_000 });
    expect(by['count']).toMatchObject({ nulls: 91, min: -999, max: -1 });
    expect(by['total']).toMatchObject({ nulls: 334, min: 10_000_000_000n - 5n, max: 998n * 10_000_000_000n - 5n });
    expect(by['device']).toMatchObject({ min: 'sensor-0', max: 'sensor-9' });
    expect(by['ok']).toMatchObject({ nulls: 250, min: false, max: true });
    expect(file.rows).toBe(1000);
  });

  it('orders strings as their UTF-8 bytes, astral characters included (property)', () => {
    const text = fc.string({ unit: fc.constantFrom('a', 'z', 'é', '\uffee', '𝄞', '😀', '\ud7ff'), maxLength: 5 });
    fc.assert(
      fc.property(text, text, (a, b) => {
        expect(Math.sign(compareStrings(a, b))).toBe(Math.sign(compareBytes(utf8(a), utf8(b))));
      }),
      { numRuns: runs(2000) },
    );
  });

  it('streams: one sink call per row group, the PARE magic at both ends', async () => {
    const chunks: Uint8Array[] = [];
    const started = await EncryptedParquetWriter.start({
      columns: COLUMNS,
      footerKey: DEK,
      cipher,
      random,
      sink: (b) => void chunks.push(b),
    });
    if (!started.ok) throw new Error('start');
    for (let g = 0; g < 3; g++) {
      const cells: Record<string, CellValue[]> = {};
      const rows = Array.from({ length: 500 }, (_, i) => row(g * 500 + i));
      for (const c of COLUMNS) cells[c.name] = rows.map((r) => r[c.name]!);
      expect((await started.value.writeRowGroup(cells)).ok).toBe(true);
    }
    const file = await started.value.finish();
    expect(chunks).toHaveLength(5);
    const bytes = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0));
    let at = 0;
    for (const c of chunks) {
      bytes.set(c, at);
      at += c.length;
    }
    expect(file.bytes).toBe(bytes.length);
    expect(new TextDecoder().decode(bytes.subarray(0, 4))).toBe('PARE');
    expect(new TextDecoder().decode(bytes.subarray(bytes.length - 4))).toBe('PARE');
    const back = await readAll(bytes);
    expect(back.ok && back.value.length).toBe(1500);
  });

  it('round-trips arbitrary rows (property)', async () => {
    const cell = {
      int32: fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }),
      int64: fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }),
      double: fc.double({ noNaN: true }),
      string: fc.string({ unit: 'grapheme', maxLength: 20 }),
      boolean: fc.boolean(),
      timestamp: fc.integer({ min: -8_640_000_000_000, max: 8_640_000_000_000 }),
    };
    const specs: ColumnSpec[] = Object.keys(cell).map((type) => ({
      name: `c_${type}`,
      type: type as ColumnSpec['type'],
      nullable: true,
    }));
    const rowArb = fc.record(
      Object.fromEntries(
        Object.entries(cell).map(([type, arb]) => [
          `c_${type}`,
          fc.option(arb as fc.Arbitrary<CellValue>, { nil: null }),
        ]),
      ),
    );
    await fc.assert(
      fc.asyncProperty(
        fc.array(rowArb, { minLength: 1, maxLength: 60 }),
        fc.integer({ min: 1, max: 25 }),
        async (rows, groupRows) => {
          const written = await writeEncryptedParquet(rows, {
            columns: specs,
            footerKey: DEK,
            cipher,
            random,
            rowGroupRows: groupRows,
            pageBytes: 64,
          });
          if (!written.ok) return false;
          const back = await readAll(written.value.bytes);
          if (!back.ok) return false;
          expect(back.value.map((r) => ({ ...r, c_double: Object.is(r['c_double'], -0) ? 0 : r['c_double'] }))).toEqual(
            rows.map((r) => ({ ...r, c_double: Object.is(r['c_double'], -0) ? 0 : r['c_double'] })),
          );
          return true;
        },
      ),
      { numRuns: runs(60) },
    );
  });
});

describe('encrypted Parquet refuses bad input with a typed error', () => {
  const small = async () =>
    (
      await write(
        Array.from({ length: 40 }, (_, i) => row(i)),
        { rowGroupRows: 15 },
      )
    ).bytes;

  it('a flipped bit in any byte of the file: a typed error, or — only in the unauthenticated crypto header — the same values', async () => {
    const rows = Array.from({ length: 40 }, (_, i) => row(i));
    const { bytes } = await write(rows, { rowGroupRows: 15 });
    const tail = bytes.length - 8 - new DataView(bytes.buffer).getUint32(bytes.length - 8, true);
    const types = new Set<string>();
    const harmless: number[] = [];
    for (let at = 0; at < bytes.length; at++) {
      const changed = bytes.slice();
      changed[at] = changed[at]! ^ 0x10;
      const back = await readAll(changed);
      if (back.ok) {
        // FileCryptoMetaData is plain thrift (Encryption.md §5.4); a STOP byte read as STOP changes nothing.
        expect(back.value, `byte ${at}`).toEqual(rows);
        harmless.push(at);
      } else types.add(back.error.type);
    }
    expect(
      harmless.filter((at) => at < tail || at >= tail + 20),
      `tail at ${tail}`,
    ).toEqual([]);
    expect(harmless.length).toBeLessThanOrEqual(3);
    expect(
      [...types].every((t) => ['NotParquet', 'Truncated', 'Malformed', 'Unsupported', 'DecryptFailed'].includes(t)),
    ).toBe(true);
    expect(types.has('DecryptFailed')).toBe(true);
  }, 60_000);

  it('the wrong DEK, or a key of the wrong size', async () => {
    const bytes = await small();
    expect(await readAll(bytes, random.bytes(32))).toEqual({
      ok: false,
      error: { type: 'DecryptFailed', module: 'footer' },
    });
    expect(await readAll(bytes, random.bytes(20))).toEqual({
      ok: false,
      error: { type: 'KeyInvalid', column: '(footer)' },
    });
  });

  it('every truncation', async () => {
    const bytes = await small();
    for (let length = 0; length < bytes.length; length++) {
      const back = await readAll(bytes.subarray(0, length));
      expect(back.ok, `length ${length}`).toBe(false);
    }
  });

  it('not Parquet at all', async () => {
    expect(await readAll(new TextEncoder().encode('plain text, long enough to have a tail'))).toEqual({
      ok: false,
      error: { type: 'NotParquet', detail: 'no Parquet magic' },
    });
  });

  it('values that do not fit their column, and schemas that cannot be written', async () => {
    const bad = async (columns: ColumnSpec[], rows: Record<string, CellValue>[]) =>
      writeEncryptedParquet(rows, { columns, footerKey: DEK, cipher, random });
    const int = [{ name: 'n', type: 'int32', nullable: false }] as ColumnSpec[];
    expect(await bad(int, [{ n: 1 }, { n: 2 ** 31 }])).toEqual({
      ok: false,
      error: { type: 'InvalidValue', column: 'n', row: 1, detail: 'expected a 32-bit integer' },
    });
    expect(await bad(int, [{ n: null }])).toMatchObject({
      ok: false,
      error: { type: 'InvalidValue', detail: 'null in a required column' },
    });
    expect(await bad([{ name: 't', type: 'timestamp', nullable: false }], [{ t: 1.5 }])).toMatchObject({
      ok: false,
      error: { type: 'InvalidValue' },
    });
    expect(await bad([{ name: 'r', type: 'rowid', nullable: false }], [{ r: new Uint8Array(3) }])).toMatchObject({
      ok: false,
      error: { type: 'InvalidValue' },
    });
    expect(await bad([], [])).toMatchObject({ ok: false, error: { type: 'InvalidSchema' } });
    expect(await bad([...int, ...int], [{ n: 1 }])).toMatchObject({ ok: false, error: { type: 'InvalidSchema' } });
    expect(await bad([{ name: 'bad name', type: 'int32', nullable: false }], [])).toMatchObject({
      ok: false,
      error: { type: 'InvalidSchema' },
    });
  });
});
