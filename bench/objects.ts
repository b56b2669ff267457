/**
 * Benchmark `objects` (issue 6): one encrypted object of 1,000,000 rows —
 * timestamp, device id, four float columns, a short string — written and read
 * back, each against anchors run in the same process on the same rows.
 *
 *   write    ObjectWriter, a row group of columns at a time, as the product forms objects:
 *            Parquet (V1 pages, ZSTD level 3 from src/runtime/zstd.ts) → PME (AES-GCM,
 *            WebCrypto) → BLAKE3 as the bytes stream → signed, sealed manifest.
 *            anchors: hyparquet-writer writing the same rows in plaintext (same row
 *            groups, Snappy); DuckDB COPY of the same rows, encrypted with a footer
 *            key and ZSTD (its table is built in SQL beforehand, not timed).
 *   size     the object's bytes against DuckDB's encrypted ZSTD file of the same rows
 *            (`object_bytes_vs_duckdb_zstd`).
 *   read     our reader on our object, with the runtime's WebAssembly ZSTD decoder as the app
 *            reads: row objects, and columnar (readColumns).
 *            anchors: hyparquet on the plaintext file (row objects; columnar via
 *            onChunk), and DuckDB scanning every column of our encrypted object.
 *   blake3   MB/s of core/hash.ts `blake3` (hash-wasm) against Debian's `b3sum
 *            --num-threads 1` on the same 256 MiB (b3sum's process start is included,
 *            and is small next to its ~85 ms of hashing).
 *
 * Each timing is the median of RUNS runs.
 */
import { execFileSync } from 'node:child_process';
import { mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { parquetRead, parquetReadObjects } from 'hyparquet';
import { parquetWriteBuffer } from 'hyparquet-writer';
import { blake3, hashReady } from '../src/core/hash.js';
import { ObjectWriter, openObject } from '../src/core/object/form.js';
import { objectKeys } from '../src/core/object/keys.js';
import type { CellValue, ColumnSpec } from '../src/core/parquet/schema.js';
import { webPmeCipher } from '../src/runtime/pme-cipher.js';
import { generateSigningIdentity, webRandom, webSigner, webVerifier } from '../src/runtime/webcrypto.js';
import { zstdCompression, zstdDecompressors } from '../src/runtime/zstd.js';
import type { BenchResult } from './run.ts';

const ROWS = 1_000_000;
const GROUP = 100_000;
const RUNS = 3;
const HASH_BYTES = 256 << 20;
const START = 1_700_000_000_000;

const COLUMNS: ColumnSpec[] = [
  { name: 'ts', type: 'timestamp', nullable: false },
  { name: 'device', type: 'string', nullable: false },
  { name: 'f1', type: 'double', nullable: false },
  { name: 'f2', type: 'double', nullable: false },
  { name: 'f3', type: 'double', nullable: false },
  { name: 'f4', type: 'double', nullable: false },
  { name: 'label', type: 'string', nullable: false },
];

/** The same formulas build DuckDB's table in SQL (`duckdbTable`). */
function columns(): Record<string, CellValue[]> {
  const ts: number[] = [];
  const device: string[] = [];
  const f: number[][] = [[], [], [], []];
  const label: string[] = [];
  for (let i = 0; i < ROWS; i++) {
    ts.push(START + i * 1000);
    device.push(`dev-${i % 500}`);
    f[0]!.push(i * 0.5);
    f[1]!.push(Math.sin(i));
    f[2]!.push(i % 1000);
    f[3]!.push(i / 7);
    label.push(`ok ${i % 20}`);
  }
  return { ts, device, f1: f[0]!, f2: f[1]!, f3: f[2]!, f4: f[3]!, label };
}

const DUCKDB_TABLE = `CREATE TABLE t AS SELECT
  make_timestamp(${START * 1000} + i * 1000000) AS ts, 'dev-' || (i % 500) AS device,
  i * 0.5 AS f1, sin(i) AS f2, (i % 1000)::DOUBLE AS f3, i / 7.0 AS f4, 'ok ' || (i % 20) AS label
  FROM range(${ROWS}) r(i)`;

async function median(fn: () => Promise<unknown>): Promise<number> {
  const times: number[] = [];
  for (let r = 0; r < RUNS; r++) {
    const start = performance.now();
    await fn();
    times.push(performance.now() - start);
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(RUNS / 2)]! / 1000;
}

function b3sumMbPerSecond(path: string): number {
  try {
    execFileSync('b3sum', ['--version'], { stdio: 'ignore' });
  } catch {
    throw new Error('bench objects: b3sum is missing (Debian: apt-get install b3sum)');
  }
  const times: number[] = [];
  for (let r = 0; r < RUNS; r++) {
    const start = performance.now();
    execFileSync('b3sum', ['--num-threads', '1', '--no-names', path]);
    times.push(performance.now() - start);
  }
  times.sort((a, b) => a - b);
  return HASH_BYTES / 2 ** 20 / (times[Math.floor(RUNS / 2)]! / 1000);
}

export async function run(): Promise<BenchResult> {
  await hashReady();
  const dir = await mkdtemp(join(tmpdir(), 'sov-bench-objects-'));
  try {
    const data = columns();
    const signer = webSigner(await generateSigningIdentity());
    const compression = await zstdCompression();
    if (compression.codec !== 'ZSTD') throw new Error('bench objects: ZSTD did not start');
    // Columns in, as hyparquet-writer takes them: a row group of each column at a time.
    const form = async () => {
      const writer = await ObjectWriter.start({
        domain: 'GENERAL',
        table: 'measurements',
        columns: COLUMNS,
        timeColumn: 'ts',
        signer,
        random: webRandom,
        cipher: webPmeCipher,
        compression,
        hlc: { ms: START, counter: 0 },
      });
      if (!writer.ok) throw new Error('bench objects: writer');
      for (let from = 0; from < ROWS; from += GROUP) {
        const group = Object.fromEntries(COLUMNS.map((c) => [c.name, data[c.name]!.slice(from, from + GROUP)]));
        const added = await writer.value.add(group);
        if (!added.ok) throw new Error('bench objects: add');
      }
      return writer.value.finish();
    };
    let formed: Awaited<ReturnType<typeof form>> | undefined;
    const writeSeconds = await median(async () => (formed = await form()));
    if (!formed?.ok || !formed.value.bytes) throw new Error('bench objects: forming failed');
    const object = formed.value;
    const bytes = object.bytes!;

    let plain: ArrayBuffer | undefined;
    const plaintextWriteSeconds = await median(async () => {
      plain = parquetWriteBuffer({
        columnData: [
          { name: 'ts', data: data['ts']!, type: 'TIMESTAMP' },
          { name: 'device', data: data['device']!, type: 'STRING' },
          ...(['f1', 'f2', 'f3', 'f4'] as const).map((name) => ({ name, data: data[name]!, type: 'DOUBLE' as const })),
          { name: 'label', data: data['label']!, type: 'STRING' },
        ],
        rowGroupSize: GROUP,
      });
    });

    const objectPath = join(dir, 'object.parquet');
    await writeFile(objectPath, bytes);
    const db = await (await DuckDBInstance.create(':memory:')).connect();
    await db.run(`PRAGMA add_parquet_key('dek', '${Buffer.from(objectKeys(object.secret).dek).toString('base64')}')`);
    await db.run(DUCKDB_TABLE);
    await db.run(`SET force_mbedtls_unsafe = 'true'`).catch(() => undefined);
    let copies = 0;
    const duckdbWriteSeconds = await median(() =>
      db.run(
        `COPY t TO '${join(dir, `duck-${copies++}.parquet`)}' (ENCRYPTION_CONFIG {footer_key: 'dek'}, ROW_GROUP_SIZE ${GROUP}, COMPRESSION zstd)`,
      ),
    );
    const duckdbZstdBytes = (await stat(join(dir, 'duck-0.parquet'))).size;

    const verifier = webVerifier();
    const read = { decompressors: await zstdDecompressors() };
    const open = async () => {
      const opened = await openObject(bytes, object, { verifier, cipher: webPmeCipher, read });
      if (!opened.ok) throw new Error(`bench objects: ${opened.error.type}`);
      return opened.value.file;
    };
    const readRowsSeconds = await median(async () => {
      const r = await (await open()).readRows();
      if (!r.ok || r.value.length !== ROWS) throw new Error('bench objects: read rows');
    });
    const readColumnarSeconds = await median(async () => {
      const r = await (await open()).readColumns();
      if (!r.ok || r.value['ts']!.length !== ROWS) throw new Error('bench objects: read columns');
    });
    const hyparquetRowsSeconds = await median(async () => {
      const r = await parquetReadObjects({ file: plain! });
      if (r.length !== ROWS) throw new Error('bench objects: hyparquet rows');
    });
    const hyparquetColumnarSeconds = await median(async () => {
      let n = 0;
      await parquetRead({ file: plain!, onChunk: (c) => void (n += c.columnName === 'ts' ? c.columnData.length : 0) });
      if (n !== ROWS) throw new Error('bench objects: hyparquet columns');
    });
    const duckdbReadSeconds = await median(() =>
      db.runAndReadAll(
        `SELECT max(ts), max(device), sum(f1), sum(f2), sum(f3), sum(f4), max(label)
           FROM read_parquet('${objectPath}', encryption_config = {footer_key: 'dek'})`,
      ),
    );
    db.closeSync();

    const hashInput = webRandom.bytes(1 << 16);
    const big = new Uint8Array(HASH_BYTES);
    for (let at = 0; at < HASH_BYTES; at += hashInput.length) big.set(hashInput, at);
    const hashPath = join(dir, 'hash.bin');
    await writeFile(hashPath, big);
    const blake3Seconds = await median(async () => blake3(big));
    const blake3MbPerS = HASH_BYTES / 2 ** 20 / blake3Seconds;
    const b3sumMbPerS = b3sumMbPerSecond(hashPath);

    return {
      figures: {
        rows: ROWS,
        object_bytes: bytes.length,
        plaintext_bytes: plain!.byteLength,
        write_seconds: writeSeconds,
        write_rows_per_s: ROWS / writeSeconds,
        read_rows_seconds: readRowsSeconds,
        read_columnar_seconds: readColumnarSeconds,
        blake3_mb_per_s: blake3MbPerS,
      },
      anchors: {
        plaintext_write_seconds: plaintextWriteSeconds,
        duckdb_write_seconds: duckdbWriteSeconds,
        duckdb_zstd_bytes: duckdbZstdBytes,
        hyparquet_read_rows_seconds: hyparquetRowsSeconds,
        hyparquet_read_columnar_seconds: hyparquetColumnarSeconds,
        duckdb_read_seconds: duckdbReadSeconds,
        b3sum_mb_per_s: b3sumMbPerS,
      },
      ratios: {
        write_time_vs_plaintext: writeSeconds / plaintextWriteSeconds,
        write_time_vs_duckdb: writeSeconds / duckdbWriteSeconds,
        object_bytes_vs_duckdb_zstd: bytes.length / duckdbZstdBytes,
        read_time_vs_duckdb: readColumnarSeconds / duckdbReadSeconds,
        read_rows_time_vs_plaintext: readRowsSeconds / hyparquetRowsSeconds,
        read_columnar_time_vs_plaintext: readColumnarSeconds / hyparquetColumnarSeconds,
        blake3_throughput_vs_b3sum: blake3MbPerS / b3sumMbPerS,
      },
    };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
