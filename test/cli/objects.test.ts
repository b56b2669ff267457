/**
 * The object CLI as people and scripts run it (a child process of `sov`):
 * `object write` streams a CSV into one encrypted object and its manifest and
 * prints the storage id (and, asked, the DEK); DuckDB reads that object with
 * that DEK; `parquet read` turns it — and any parquet-testing vector — back into
 * CSV; failures go to stderr with a non-zero exit.
 */
import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { blake3 } from '@noble/hashes/blake3.js';
import { DuckDBInstance } from '@duckdb/node-api';
import { afterAll, describe, expect, it } from 'vitest';
import { toHex } from '../../src/core/bytes.js';
import { describeVectors, vectorPath } from '../helpers/vectors.js';

const run = promisify(execFile);
const SOV = ['src/cli/sov.mjs'];

async function sov(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [...SOV, ...args], { maxBuffer: 64 << 20 });
    return { code: 0, stdout, stderr };
  } catch (e) {
    const failed = e as { code: number; stdout: string; stderr: string };
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}

const dir = mkdtempSync(join(tmpdir(), 'sov-cli-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const CSV = [
  'ts,device,temp,ok,count,note',
  ...Array.from({ length: 2500 }, (_, i) =>
    [
      new Date(Date.UTC(2024, 4, 1) + i * 60_000).toISOString(),
      i % 3 ? 'north shed' : 'south',
      i % 7 ? (i / 4).toString() : '',
      i % 2 ? 'true' : 'false',
      i % 5 ? String(i) : '',
      i % 4 ? `"note ${i}, ""quoted"" ☃"` : '',
    ].join(','),
  ),
].join('\n');

describe('sov object write / sov parquet read', () => {
  const csv = join(dir, 'readings.csv');
  writeFileSync(csv, CSV + '\n');

  it('writes one encrypted object named by its BLAKE3, which DuckDB reads with the printed DEK', async () => {
    const out = join(dir, 'objects');
    const written = await sov('object', 'write', '--csv', csv, '--out', out, '--row-group-size', '1000', '--print-dek');
    expect(written.code, written.stderr).toBe(0);
    const [id, dekLine] = written.stdout.trim().split('\n');
    expect(id).toMatch(/^[0-9a-f]{64}$/);
    expect(readdirSync(out).sort()).toEqual([`${id}.manifest`, `${id}.parquet`]);
    const bytes = readFileSync(join(out, `${id}.parquet`));
    expect(toHex(blake3(bytes))).toBe(id);
    const dek = dekLine!.replace(/^dek /, '');
    const db = await (await DuckDBInstance.create(':memory:')).connect();
    await db.run(`PRAGMA add_parquet_key('k', '${Buffer.from(dek, 'hex').toString('base64')}')`);
    const result = await db.runAndReadAll(
      `SELECT count(*), count(temp), sum("count"), count(note), min(note) FROM read_parquet('${join(out, `${id}.parquet`)}', encryption_config = {footer_key: 'k'})`,
    );
    const lines = CSV.split('\n').slice(1);
    const counts = lines.map((l) => l.split(',')[4]).filter((v) => v !== '');
    expect(result.getRows()[0]).toEqual([
      2500n,
      BigInt(lines.filter((l) => l.split(',')[2] !== '').length),
      BigInt(counts.reduce((a, b) => a + Number(b), 0)),
      BigInt(lines.filter((l) => !l.endsWith(',')).length),
      'note 1, "quoted" ☃',
    ]);
    db.closeSync();

    const back = await sov('parquet', 'read', join(out, `${id}.parquet`), '--footer-key', dek);
    expect(back.code, back.stderr).toBe(0);
    const header = back.stdout.split('\n')[0];
    expect(header).toBe('ts,device,temp,ok,count,note,_row_id');
    const firstRows = back.stdout
      .split('\n')
      .slice(1, 4)
      .map((l) => l.split(',').slice(0, 5).join(','));
    expect(firstRows).toEqual(
      CSV.split('\n')
        .slice(1, 4)
        .map((l) => l.split(',').slice(0, 5).join(',')),
    );
  }, 60_000);

  it('fails cleanly: a wrong key, a missing file, a malformed CSV, bad usage', async () => {
    const out = join(dir, 'objects2');
    const written = await sov('object', 'write', '--csv', csv, '--out', out);
    const id = written.stdout.trim();
    const wrong = await sov('parquet', 'read', join(out, `${id}.parquet`), '--footer-key', '00'.repeat(32));
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toContain('DecryptFailed');
    expect(wrong.stdout).toBe('');
    expect((await sov('parquet', 'read', join(dir, 'absent.parquet'), '--footer-key', '00'.repeat(32))).code).toBe(1);
    const bad = join(dir, 'bad.csv');
    writeFileSync(bad, 'a,b\n1,2\n3\n');
    const ragged = await sov('object', 'write', '--csv', bad, '--out', join(dir, 'never'));
    expect(ragged.code).toBe(1);
    expect(ragged.stderr).toContain('CsvRagged');
    const usage = await sov('parquet', 'read', 'x', '--footer-key', 'nothex');
    expect(usage.code).toBe(2);
    expect((await sov('object', 'write', '--csv', csv)).code).toBe(2);
  }, 60_000);

  it('writes the object and its manifest whole, leaving no partial file; a reader that stops early ends it quietly', async () => {
    const out = join(dir, 'objects3');
    const written = await sov('object', 'write', '--csv', csv, '--out', out, '--print-dek');
    const [id, dekLine] = written.stdout.trim().split('\n');
    expect(readdirSync(out).sort()).toEqual([`${id}.manifest`, `${id}.parquet`]);
    // `sov parquet read … | head -1`: the pipe closes after the first line.
    const child = spawn(
      process.execPath,
      [...SOV, 'parquet', 'read', join(out, `${id}.parquet`), '--footer-key', dekLine!.split(' ')[1]!],
      {
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const first = await new Promise<string>((resolve) =>
      child.stdout.once('data', (d: Buffer) => resolve(d.toString())),
    );
    child.stdout.destroy();
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    expect(first.split('\n')[0]).toBe('ts,device,temp,ok,count,note,_row_id');
    expect(code).toBe(0);
    expect(stderr).toBe('');
  }, 60_000);
});

describeVectors('sov parquet read on the parquet-testing vectors', 'parquet-testing/data', () => {
  it('reads a file with column keys and a supplied AAD prefix into CSV', async () => {
    const read = await sov(
      'parquet',
      'read',
      vectorPath('parquet-testing/data/encrypt_columns_and_footer_disable_aad_storage.parquet.encrypted'),
      '--footer-key',
      'ascii:0123456789012345',
      '--column-key',
      'double_field=ascii:1234567890123450',
      '--column-key',
      'float_field=ascii:1234567890123451',
      '--aad-prefix',
      'tester',
      '--csv',
      join(dir, 'vector.csv'),
    );
    expect(read.code, read.stderr).toBe(0);
    const lines = readFileSync(join(dir, 'vector.csv'), 'utf8').trim().split('\n');
    expect(lines).toHaveLength(51);
    expect(lines[0]).toBe(
      'boolean_field,int32_field,int64_field,int96_field,float_field,double_field,ba_field,flba_field',
    );
    expect(lines[1]!.startsWith('true,0,')).toBe(true);
  }, 30_000);
});
