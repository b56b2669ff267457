/**
 * Reading a Parquet file through ranged reads (core/parquet/source.ts), as a query reads an
 * object this machine does not hold: the tail first, then only the column chunks it decodes.
 * The same values as from the whole file — for our encrypted objects and for every plain file
 * of the parquet-testing corpus — and ranges that lie (shifted, short, from another file, or
 * failed) are refused with a typed error, never read as values.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { ParquetError } from '../../src/core/parquet/modules.js';
import { openParquet } from '../../src/core/parquet/read.js';
import type { CellValue, ColumnSpec } from '../../src/core/parquet/schema.js';
import { bytesSource, tailBytes, TAIL_GUESS, type ByteSource } from '../../src/core/parquet/source.js';
import { writeEncryptedParquet } from '../../src/core/parquet/write.js';
import { err, ok } from '../../src/core/result.js';
import { webPmeCipher } from '../../src/runtime/pme-cipher.js';
import { seededRandom } from '../helpers/deterministic.js';
import { describeVectors, hasVector, vectorPath } from '../helpers/vectors.js';

const random = seededRandom('parquet-ranged');
const KEY = random.bytes(16);
const COLUMNS: ColumnSpec[] = [
  { name: 'time', type: 'int64', nullable: false },
  { name: 'device', type: 'string', nullable: false },
  { name: 'temperature', type: 'double', nullable: true },
];
// Values that do not compress away: a chunk's bytes are then its share of the file.
const noise = random.bytes(40_000 * 2);
const ROWS: Record<string, CellValue>[] = Array.from({ length: 40_000 }, (_, i) => ({
  time: BigInt(i * 60_000 + noise[2 * i]!),
  device: `device-${noise[2 * i + 1]! % 50}`,
  temperature: i % 11 === 0 ? null : (noise[2 * i]! * 256 + noise[2 * i + 1]!) / 100,
}));

/** A source over `bytes` that records every range it was asked for. */
function counting(bytes: Uint8Array, tailGuess?: number): ByteSource & { readonly reads: [number, number][] } {
  const inner = bytesSource(bytes);
  const reads: [number, number][] = [];
  return {
    size: bytes.length,
    reads,
    ...(tailGuess === undefined ? {} : { tailGuess }),
    read: (start, end) => {
      reads.push([start, end]);
      return inner.read(start, end);
    },
  };
}

const fetched = (reads: readonly [number, number][]): number => reads.reduce((n, [s, e]) => n + (e - s), 0);

async function object(rowGroupRows = 10_000): Promise<Uint8Array> {
  const written = await writeEncryptedParquet(ROWS, {
    columns: COLUMNS,
    footerKey: KEY,
    cipher: webPmeCipher,
    random,
    rowGroupRows,
  });
  if (!written.ok) throw new Error(JSON.stringify(written.error));
  return written.value.bytes;
}

describe('ranged reads of an encrypted object', () => {
  it('reads the tail and only the chunks asked for, with the values the whole file gives', async () => {
    const bytes = await object();
    const whole = await openParquet(bytes, { footerKey: KEY }, webPmeCipher);
    if (!whole.ok) throw new Error(JSON.stringify(whole.error));
    const source = counting(bytes);
    const ranged = await openParquet(source, { footerKey: KEY }, webPmeCipher);
    if (!ranged.ok) throw new Error(JSON.stringify(ranged.error));
    expect(ranged.value.metadata.row_groups.length).toBe(4);
    // One read for the tail (the last TAIL_GUESS bytes) and one for the opening magic.
    expect(source.reads).toEqual([
      [bytes.length - TAIL_GUESS, bytes.length],
      [0, 4],
    ]);

    const small = counting(bytes, 512);
    const opened = await openParquet(small, { footerKey: KEY }, webPmeCipher);
    if (!opened.ok) throw new Error(JSON.stringify(opened.error));
    const afterTail = small.reads.length;
    const part = await opened.value.readColumns({ columns: ['temperature'], rowGroups: [2] });
    const expected = await whole.value.readColumns({ columns: ['temperature'], rowGroups: [2] });
    expect(part).toEqual(expected);
    // One read per chunk decoded: the temperature chunk of row group 2, nothing else.
    expect(small.reads.length).toBe(afterTail + 1);
    expect(fetched(small.reads.slice(afterTail))).toBeLessThan(bytes.length / 4);
    expect(fetched(small.reads)).toBeLessThan(bytes.length);
    expect(await opened.value.readColumns()).toEqual(await whole.value.readColumns());

    // A file no longer than the first read is read once: every chunk comes from that read.
    const once = counting(bytes, bytes.length);
    const all = await openParquet(once, { footerKey: KEY }, webPmeCipher);
    if (!all.ok) throw new Error(JSON.stringify(all.error));
    expect(await all.value.readColumns()).toEqual(await whole.value.readColumns());
    expect(once.reads).toEqual([[0, bytes.length]]);
  });

  it('reads a footer longer than the first read takes with one more read', async () => {
    const bytes = await object(500);
    const source = counting(bytes, 64);
    const file = await openParquet(source, { footerKey: KEY }, webPmeCipher);
    if (!file.ok) throw new Error(JSON.stringify(file.error));
    // The end (64 bytes), the opening magic, then the footer region itself.
    expect(source.reads.map(([s, e]) => e - s).slice(0, 2)).toEqual([64, 4]);
    expect(source.reads.length).toBe(3);
    expect(file.value.rowCount).toBe(ROWS.length);
  });

  it('refuses ranges that lie: shifted, from another object, short, or failed', async () => {
    const bytes = await object();
    const other = await object();
    const refusedWith = async (source: ByteSource): Promise<ParquetError['type']> => {
      const file = await openParquet(source, { footerKey: KEY }, webPmeCipher);
      if (!file.ok) return file.error.type;
      const read = await file.value.readColumns();
      if (read.ok) throw new Error('a lying source was read as values');
      return read.error.type;
    };
    const honest = bytesSource(bytes);
    const chunkOnly = (lie: ByteSource['read']): ByteSource => ({
      size: bytes.length,
      // The tail and the opening magic are honest (the footer then names the chunks); the chunks are not.
      read: (start, end) => (end === bytes.length || end === 4 ? honest.read(start, end) : lie(start, end)),
    });
    const shifted = chunkOnly((start, end) => honest.read(start + 1, end + 1));
    expect(['DecryptFailed', 'Truncated', 'Malformed']).toContain(await refusedWith(shifted));
    // Another object's bytes at the same offsets: sealed under another file's AAD and key.
    const foreign = bytesSource(other);
    expect(['DecryptFailed', 'Truncated', 'Malformed']).toContain(
      await refusedWith(chunkOnly((start, end) => foreign.read(start, Math.min(end, other.length)))),
    );
    const short = chunkOnly(async (start, end) => {
      const got = await honest.read(start, end);
      return got.ok ? ok(got.value.subarray(0, got.value.length - 1)) : got;
    });
    expect(['Truncated', 'Malformed', 'DecryptFailed']).toContain(await refusedWith(short));
    const failing = chunkOnly(() => Promise.resolve(err({ type: 'Truncated', detail: 'the relay went away' })));
    expect(await refusedWith(failing)).toBe('Truncated');
    // A source that says the file is longer than it is: the footer is not where it says.
    expect(await refusedWith({ size: bytes.length + 100, read: honest.read })).toBe('Truncated');
  });

  it('refuses a source shorter than magic, length and magic, and a footer length past the file', async () => {
    expect(await tailBytes(bytesSource(new Uint8Array(11)))).toEqual(
      err({ type: 'Truncated', detail: 'shorter than magic, footer length and magic' }),
    );
    const bytes = await object();
    const lying = bytes.slice();
    new DataView(lying.buffer).setUint32(lying.length - 8, lying.length, true);
    const file = await openParquet(counting(lying, 64), { footerKey: KEY }, webPmeCipher);
    expect(file.ok ? 'opened' : file.error).toEqual({
      type: 'Truncated',
      detail: `footer of ${lying.length} bytes exceeds the file`,
    });
  });
});

const DIR = 'parquet-testing-all/data';
/** Files the reader refuses whole (parquet-corpus.test.ts says why): ranged reads refuse them too. */
const REFUSED = new Set([
  'large_string_map.brotli.parquet',
  'int96_from_spark.parquet',
  'nation.dict-malformed.parquet',
]);

function parquetFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return parquetFiles(path);
    return name.endsWith('.parquet') ? [path] : [];
  });
}

describeVectors('ranged reads of the parquet-testing corpus', DIR, () => {
  const files = hasVector(DIR)
    ? parquetFiles(vectorPath(DIR))
        .map((p) => relative(vectorPath(DIR), p))
        .sort()
    : [];

  it.each(files)('%s: the same answer as the whole file', async (name) => {
    const bytes = new Uint8Array(readFileSync(vectorPath(`${DIR}/${name}`)));
    const whole = await openParquet(bytes, {}, webPmeCipher);
    // A small first read, so that long footers take the second-read path too.
    const ranged = await openParquet(counting(bytes, 256), {}, webPmeCipher);
    if (!whole.ok) {
      expect(ranged.ok ? 'opened' : ranged.error.type).toBe(whole.error.type);
      return;
    }
    if (!ranged.ok) throw new Error(`${name}: ${JSON.stringify(ranged.error)}`);
    const expected = REFUSED.has(name) ? undefined : await whole.value.readColumns();
    const got = await ranged.value.readColumns();
    if (expected) expect(got).toEqual(expected);
    else expect(got.ok).toBe(false);
  });
});
