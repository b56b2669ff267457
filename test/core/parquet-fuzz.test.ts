/**
 * Mutated Parquet files — files of the public corpus (every codec and encoding family) and
 * objects of ours (encrypted, with their key) with bits flipped, bytes overwritten by huge
 * lengths, bytes inserted or removed, and tails cut off — read by our reader in a child
 * process (test/helpers/parquet-read-worker.ts). Every outcome is a value or a typed
 * ParquetError, within a deadline per file: an exception that escapes, an input the reader
 * does not finish, or one that ends the process (a fatal V8 error such as an array grown
 * past its limit) fails the test and names the mutant. (The deadline bounds a hang, not
 * speed: each read takes milliseconds.)
 */
import { readFileSync } from 'node:fs';
import { type ChildProcess, fork } from 'node:child_process';
import fc from 'fast-check';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { toHex } from '../../src/core/bytes.js';
import type { ColumnSpec } from '../../src/core/parquet/schema.js';
import { writeEncryptedParquet } from '../../src/core/parquet/write.js';
import { webPmeCipher } from '../../src/runtime/pme-cipher.js';
import { seededRandom } from '../helpers/deterministic.js';
import type { ReadOutcome, ReadRequest } from '../helpers/parquet-read-worker.js';
import { runs } from '../helpers/runs.js';
import { describeVectors, vectorPath } from '../helpers/vectors.js';

const DIR = 'parquet-testing-all/data';
/** One or two files of each family: codecs, page versions, dictionaries, delta and split encodings, nesting. */
const SEEDS = [
  'alltypes_plain.parquet',
  'alltypes_dictionary.parquet',
  'datapage_v2.snappy.parquet',
  'delta_binary_packed.parquet',
  'delta_byte_array.parquet',
  'delta_length_byte_array.parquet',
  'byte_stream_split.zstd.parquet',
  'lz4_raw_compressed.parquet',
  'hadoop_lz4_compressed.parquet',
  'concatenated_gzip_members.parquet',
  'rle_boolean_encoding.parquet',
  'nested_lists.snappy.parquet',
  'nested_maps.snappy.parquet',
  'nullable.impala.parquet',
  'int32_with_null_pages.parquet',
  'fixed_length_decimal.parquet',
];
const TYPED = new Set([
  'NotParquet',
  'Truncated',
  'Malformed',
  'Unsupported',
  'DecryptFailed',
  'KeyMissing',
  'KeyInvalid',
  'AadPrefixRequired',
  'FooterSignatureInvalid',
]);
/** Longest a read may take before it counts as a hang (reads here take milliseconds). */
const DEADLINE_MS = 10_000;

/** A reader process, once it has loaded (a loaded machine may take seconds to compile it). */
async function startWorker(): Promise<ChildProcess> {
  const script = new URL('../helpers/parquet-read-worker.ts', import.meta.url);
  const started = fork(script, [], {
    execArgv: ['--import', 'tsx'],
    serialization: 'advanced',
    stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
  });
  // What a fatal error prints (V8's reason and stack), kept to name the crash.
  let stderr = '';
  started.stderr!.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-2_000);
  });
  lastWords.set(started, () => stderr);
  await new Promise((resolve, reject) => {
    started.once('message', resolve);
    started.once('exit', (code) => reject(new Error(`the reader process exited on start (${code})`)));
  });
  started.removeAllListeners('exit');
  return started;
}

let worker: ChildProcess;
const lastWords = new WeakMap<ChildProcess, () => string>();

type Outcome = ReadOutcome | 'hung' | { readonly t: 'crashed'; readonly how: string };

/**
 * Reads one file in the reader process. A read past the deadline ends the process, and a
 * read that ends it (a fatal error) is reported as such; either way a new one takes over.
 */
function readInWorker(request: ReadRequest): Promise<Outcome> {
  return new Promise((resolve) => {
    const current = worker;
    const replace = (result: Outcome) => {
      current.removeAllListeners('message');
      current.removeAllListeners('close');
      clearTimeout(timer);
      current.kill('SIGKILL');
      void startWorker().then((fresh) => {
        worker = fresh;
        resolve(result);
      });
    };
    const timer = setTimeout(() => replace('hung'), DEADLINE_MS);
    current.once('close', (code, signal) =>
      replace({ t: 'crashed', how: `exit ${code ?? signal}: ${lastWords.get(current)?.() ?? ''}` }),
    );
    current.once('message', (outcome: ReadOutcome) => {
      clearTimeout(timer);
      current.removeAllListeners('close');
      resolve(outcome);
    });
    current.send(request);
  });
}

const mutation = fc.oneof(
  fc.record({ kind: fc.constant('flip' as const), at: fc.nat(), bit: fc.integer({ min: 0, max: 7 }) }),
  fc.record({ kind: fc.constant('huge' as const), at: fc.nat(), width: fc.integer({ min: 1, max: 8 }) }),
  fc.record({ kind: fc.constant('insert' as const), at: fc.nat(), byte: fc.integer({ min: 0, max: 255 }) }),
  fc.record({ kind: fc.constant('delete' as const), at: fc.nat() }),
  fc.record({ kind: fc.constant('cut' as const), at: fc.nat() }),
);
type Mutation = typeof mutation extends fc.Arbitrary<infer M> ? M : never;

function mutate(bytes: Uint8Array, m: Mutation): Uint8Array {
  const at = m.at % Math.max(1, bytes.length);
  switch (m.kind) {
    case 'flip': {
      const out = bytes.slice();
      out[at]! ^= 1 << m.bit;
      return out;
    }
    case 'huge': {
      const out = bytes.slice();
      out.fill(0xff, at, Math.min(out.length, at + m.width));
      return out;
    }
    case 'insert':
      return Uint8Array.from([...bytes.subarray(0, at), m.byte, ...bytes.subarray(at)]);
    case 'delete':
      return Uint8Array.from([...bytes.subarray(0, at), ...bytes.subarray(at + 1)]);
    case 'cut':
      return bytes.slice(0, at);
  }
}

async function expectTypedOutcomes(seed: Uint8Array, footerKey: Uint8Array | undefined, numRuns: number) {
  await fc.assert(
    fc.asyncProperty(fc.array(mutation, { minLength: 1, maxLength: 3 }), async (ms) => {
      const bytes = ms.reduce(mutate, seed);
      const outcome = await readInWorker({ bytes, ...(footerKey ? { footerKey } : {}) });
      const name = JSON.stringify(ms);
      expect(outcome, name).not.toBe('hung');
      if (outcome === 'hung') return;
      if (outcome.t === 'crashed') expect.fail(`${name}: the reader process ended (${outcome.how})`);
      expect(outcome.t, `${name}: ${outcome.t === 'threw' ? outcome.message : ''}`).not.toBe('threw');
      if (outcome.t === 'refused') expect(TYPED.has(outcome.type), outcome.type).toBe(true);
    }),
    { numRuns },
  );
}

describeVectors('mutated Parquet files: a value or a typed error, never a hang or a throw', DIR, () => {
  beforeAll(async () => {
    worker = await startWorker();
  }, 120_000);
  afterAll(async () => {
    worker.kill();
  });

  it.each(SEEDS)(
    '%s, mutated',
    async (name) => {
      const seed = new Uint8Array(readFileSync(vectorPath(`${DIR}/${name}`)));
      const clean = await readInWorker({ bytes: seed });
      expect(clean).toMatchObject({ t: 'read' });
      await expectTypedOutcomes(seed, undefined, runs(60));
    },
    60_000,
  );

  it('our own encrypted objects, mutated (with their key)', async () => {
    const random = seededRandom('parquet-fuzz');
    const columns: ColumnSpec[] = [
      { name: 'ts', type: 'timestamp', nullable: false },
      { name: 'device', type: 'string', nullable: false },
      { name: 'temp', type: 'double', nullable: true },
      { name: 'total', type: 'int64', nullable: true },
      { name: 'ok', type: 'boolean', nullable: true },
      { name: '_row_id', type: 'rowid', nullable: false },
    ];
    const rows = Array.from({ length: 300 }, (_, i) => ({
      ts: 1_700_000_000_000 + i,
      device: `d-${i % 7}`,
      temp: i % 5 === 0 ? null : i / 4,
      total: BigInt(i) * 3n,
      ok: i % 2 === 0,
      _row_id: random.bytes(16),
    }));
    const footerKey = random.bytes(32);
    const written = await writeEncryptedParquet(rows, {
      columns,
      footerKey,
      cipher: webPmeCipher,
      random,
      pageBytes: 256,
      rowGroupRows: 100,
    });
    if (!written.ok) throw new Error(JSON.stringify(written.error));
    expect(await readInWorker({ bytes: written.value.bytes, footerKey })).toEqual({ t: 'read', rows: 300 });
    expect(toHex(written.value.bytes.subarray(0, 4))).toBe('50415245');
    await expectTypedOutcomes(written.value.bytes, footerKey, runs(200));
  }, 60_000);
});
