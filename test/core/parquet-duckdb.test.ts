/**
 * Independent check (issue 6): DuckDB (@duckdb/node-api, dev dependency only)
 * reads our encrypted objects given the DEK — base64, as `PRAGMA
 * add_parquet_key` takes a 32-byte key — with the values we wrote for every
 * supported type, nulls and non-ASCII text included, and the same aggregates.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance, DuckDBTimestampTZValue, type DuckDBConnection } from '@duckdb/node-api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CellValue, ColumnSpec } from '../../src/core/parquet/schema.js';
import { openParquet } from '../../src/core/parquet/read.js';
import { SNAPPY, writeEncryptedParquet } from '../../src/core/parquet/write.js';
import { webPmeCipher } from '../../src/runtime/pme-cipher.js';
import { zstdCompression } from '../../src/runtime/zstd.js';
import { seededRandom } from '../helpers/deterministic.js';

const random = seededRandom('parquet-duckdb');

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

const ROWS = 100_000;

function row(i: number): Record<string, CellValue> {
  const id = new Uint8Array(16);
  new DataView(id.buffer).setBigUint64(8, BigInt(i));
  return {
    ts: 1_700_000_000_000 + i * 1500,
    device: `sensor-${i % 40}`,
    temp: i % 7 === 0 ? null : (i - 50_000) * 0.125,
    ratio: i % 5 === 0 ? null : Math.fround(i / 3),
    count: i % 11 === 0 ? null : i - 1000,
    total: i % 3 === 0 ? null : BigInt(i) * 10_000_000_000n - 7n,
    ok: i % 4 === 0 ? null : i % 2 === 0,
    note: i % 2 === 0 ? null : `Zürich ☃ 北 ${i} 𝄞`,
    _row_id: id,
  };
}

/** DuckDB's value as our reader returns it: timestamps as epoch ms, blobs as bytes. */
function ours(value: unknown): unknown {
  if (value instanceof DuckDBTimestampTZValue) return Number(value.micros / 1000n);
  if (value && typeof value === 'object' && 'bytes' in value)
    return new Uint8Array((value as { bytes: Uint8Array }).bytes);
  return value;
}

describe.each([
  ['Snappy', SNAPPY],
  ['ZSTD', await zstdCompression()],
])('DuckDB reads our encrypted objects (%s pages)', (_, compression) => {
  let dir: string;
  let db: DuckDBConnection;
  const rows = Array.from({ length: ROWS }, (_, i) => row(i));
  const from = () => `read_parquet('${join(dir, 'object.parquet')}', encryption_config = {footer_key: 'dek'})`;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'sov-duckdb-'));
    const dek = random.bytes(32);
    const written = await writeEncryptedParquet(rows, {
      columns: COLUMNS,
      footerKey: dek,
      cipher: webPmeCipher,
      random,
      rowGroupRows: 30_000,
      compression,
    });
    if (!written.ok) throw new Error(JSON.stringify(written.error));
    expect(written.value.file.rowGroups).toBe(4);
    writeFileSync(join(dir, 'object.parquet'), written.value.bytes);
    db = await (await DuckDBInstance.create(':memory:')).connect();
    await db.run(`PRAGMA add_parquet_key('dek', '${Buffer.from(dek).toString('base64')}')`);
  }, 60_000);

  afterAll(() => {
    db.closeSync();
    rmSync(dir, { recursive: true, force: true });
  });

  it('with identical values for every type, row by row', async () => {
    const result = await db.runAndReadAll(
      `SELECT ${COLUMNS.map((c) => `"${c.name}"`).join(', ')} FROM ${from()} ORDER BY ts`,
    );
    const theirs = result.getRowObjects();
    expect(theirs).toHaveLength(ROWS);
    for (let i = 0; i < ROWS; i += 97) {
      const got = Object.fromEntries(Object.entries(theirs[i]!).map(([k, v]) => [k, ours(v)]));
      expect(got, `row ${i}`).toEqual(rows[i]);
    }
  }, 60_000);

  it('with the same aggregates', async () => {
    const result = await db.runAndReadAll(
      `SELECT count(*) AS n, count(temp) AS temps, sum(count) AS counts, min(total) AS lo, max(total) AS hi,
              sum(CASE WHEN ok THEN 1 ELSE 0 END) AS oks, count(note) AS notes, max(device) AS top, min(ts) AS first
         FROM ${from()}`,
    );
    const [got] = result.getRowObjects();
    const present = <T>(key: string) => rows.map((r) => r[key]).filter((v): v is T & CellValue => v !== null);
    expect(got!['n']).toBe(BigInt(ROWS));
    expect(got!['temps']).toBe(BigInt(present<number>('temp').length));
    expect(got!['counts']).toBe(BigInt(present<number>('count').reduce((a, b) => a + b, 0)));
    const totals = present<bigint>('total');
    expect(got!['lo']).toBe(totals.reduce((a, b) => (b < a ? b : a)));
    expect(got!['hi']).toBe(totals.reduce((a, b) => (b > a ? b : a)));
    expect(got!['oks']).toBe(BigInt(rows.filter((r) => r['ok'] === true).length));
    expect(got!['notes']).toBe(BigInt(present<string>('note').length));
    expect(got!['top']).toBe('sensor-9');
    expect(ours(got!['first'])).toBe(1_700_000_000_000);
  }, 60_000);
});

describe('encrypted files DuckDB writes (no aad_file_unique, no module AAD)', () => {
  it('are refused by default, and read with the clearly named duckdbNoAad option', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sov-duckdb-written-'));
    try {
      const db = await (await DuckDBInstance.create(':memory:')).connect();
      const key = new Uint8Array(32).fill(7);
      // DuckDB writes encrypted files only with its full crypto module (httpfs), absent offline.
      await db.run("SET force_mbedtls_unsafe = 'true'");
      await db.run(`PRAGMA add_parquet_key('k', '${Buffer.from(key).toString('base64')}')`);
      const path = join(dir, 'duck.parquet');
      await db.run(
        `COPY (SELECT i, 'row ' || i AS s, i * 0.5 AS d FROM range(2000) t(i)) TO '${path}' (ENCRYPTION_CONFIG {footer_key: 'k'})`,
      );
      const bytes = new Uint8Array(readFileSync(path));
      const refused = await openParquet(bytes, { footerKey: key }, webPmeCipher);
      expect(refused.ok).toBe(false);
      if (!refused.ok) expect(refused.error).toMatchObject({ type: 'Malformed', detail: /duckdbNoAad/ });
      const file = await openParquet(bytes, { footerKey: key, duckdbNoAad: true }, webPmeCipher);
      if (!file.ok) throw new Error(JSON.stringify(file.error));
      const rows = await file.value.readRows();
      if (!rows.ok) throw new Error(JSON.stringify(rows.error));
      expect(rows.value).toHaveLength(2000);
      expect(rows.value[1234]).toEqual({ i: 1234n, s: 'row 1234', d: 617 });
      // A wrong key is still a refusal, not garbage.
      const wrong = await openParquet(
        bytes,
        { footerKey: new Uint8Array(32).fill(8), duckdbNoAad: true },
        webPmeCipher,
      );
      expect(wrong).toMatchObject({ ok: false, error: { type: 'DecryptFailed' } });
      db.closeSync();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
