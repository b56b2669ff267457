/**
 * Benchmark `merge`: the production apply path over 1,000,000 pre-verified
 * column writes on 100,000 rows of `device_profiles`, on two replica stores,
 * against loro-crdt applying the same writes in the same process (each of the
 * three sides on a worker thread of its own, so each starts on a fresh heap).
 *
 *   sqlite  `admission` (duplicate check, authorisation, hash chain, then
 *           `recordEvent`: log append, chain head, clock, per-column LWW merge,
 *           tombstones, resurrection pairs) inside one `SqliteReplicaStore`
 *           transaction (BEGIN IMMEDIATE … COMMIT) per batch of
 *           MAX_EVENTS_PER_FRAME events — exactly what `Replica.ingest` runs
 *           after opening and verifying a frame. The store is a file in a fresh
 *           temporary directory, opened as the headless node opens its replica
 *           (`src/cli/node.ts`: one file, WAL journal, synchronous = FULL —
 *           the store's constructor sets both), and removed afterwards.
 *   memory  the same apply, one `MemoryReplicaStore` transaction per batch.
 *   loro    one LoroDoc, one LoroMap per row (a child of the root map
 *           `device_profiles`), one `doc.commit()` per batch of the same size.
 *           A put is `rowMap.set(column, value)`; a delete is `rowMap.clear()`
 *           (Loro's row deletion: every key of the row is deleted, and a later
 *           `set` brings the key back — Loro's resurrection).
 *
 * Which store the product runs: the headless node runs SQLite
 * (`SqliteReplicaStore`, src/storage/sqlite-replica-store.ts, a file under its
 * data directory) and browsers run IndexedDB (`DexieReplicaStore`,
 * src/storage/dexie-store.ts, from src/runtime/mesh-node.ts). The product no
 * longer uses `MemoryReplicaStore`: nothing in src/ outside
 * src/storage/memory-*.ts refers to it. It serves tests
 * (test/helpers/deterministic.ts and tests under test/core, test/storage and
 * test/runtime) and benches (bench/events.ts, bench/lib/node-peer.ts and this
 * one). Here it is kept as the in-process lower bound of the apply path — the
 * same steps with no storage engine under them — next to the SQLite figure,
 * which is the product's.
 *
 * Where SQLite's time went (a 200,000-write run of this side with each statement
 * timed, SOV_BENCH_WRITES=200000; 2026-12-06): 17.6 s against loro's 2.9 s. COMMIT
 * 10.0 s (55%): 782 commits of ~1,000 dirty pages each — every event inserts one
 * random-order key into each of three indexes (log outer_id, log row_key, the rows
 * table) and the WAL is synced at every commit (`synchronous = FULL`, so an
 * acknowledged frame survives a power cut: storage/sqlite-setup.ts); the statements
 * 4.4 s; record packing, CBOR and the apply logic the rest. Prepared statements are
 * cached and the clock, heads and rows a transaction reads are kept for it. What is
 * left is the I/O of durable commits of 256 events: the catch-up joins consecutive
 * frames into one transaction (runtime/frame-dispatch.ts), this benchmark does not.
 *
 * What did not help, measured at the full 1,000,000 writes on 2026-12-07 (this side alone,
 * 203–209 s that day, loro 9.8–13.6 s): a 256 MiB page cache instead of 64 MiB (203 s
 * against 209 s: reading index pages is not the cost); one transaction per 16,384 events,
 * as a catch-up joins 64 frames (156 s: still 16x loro); `synchronous = NORMAL` (no
 * gain at 300,000 writes); pages of 1 or 2 KiB (slower: 59 and 57 s against 45 s at
 * 300,000). The same schema's bare statements, with no apply logic at all, took 73 s
 * for 1,000,000 rows at 16,384 per transaction: the floor of this layout is SQLite's
 * B-tree upkeep of the randomly keyed indexes (outer id, row key, the rows table) and
 * every page written twice (WAL, then the database). What is left to try for the aim
 * (3x loro) is another layout — the sealed bytes out of the log's B-tree, a shorter
 * dedupe key, no row-key index on the log — rather than tuning.
 *
 * The script of writes is generated once from a fixed seed: each write picks a
 * row uniformly, 2% are deletes, the rest set one of the five columns; writers
 * are four signers taking turns, each with its own hash chain and a strictly
 * increasing HLC, so deletes are followed by later, higher-stamped edits of the
 * same row (resurrections, each recorded once as a pair).
 *
 * No crypto runs in the timed part, and none is needed to build the input:
 * pre-verified events carry stand-in ids (unique pseudo-random 32-byte values in
 * place of BLAKE3 digests; the apply path treats ids as opaque), stand-in
 * sealed bytes of the measured sealed size, and — like decoded events — their
 * own copy of the signer key, their signed body bytes, and the names the opener
 * builds for every envelope (`open.ts`: outer id and event id).
 *
 * Value construction is outside every timer: our events (row names, column
 * values, bodies) and loro's inputs (row names, column names, the same column
 * values) are built batch by batch before each side's timed apply of the batch,
 * and each side's time is the sum over its batches.
 *
 * Both stores must end in the same state: the same rows, tombstoned rows,
 * deletes applied, resurrections, log length and stored resurrection records,
 * and the same digest of every row's cells and tombstone; the run throws
 * otherwise, and when either store's row count differs from loro's.
 *
 * figures.writes_per_s = writes ÷ the memory store's apply time;
 * figures.sqlite_writes_per_s = writes ÷ the SQLite store's apply time;
 * ratios.merge_time_vs_loro = memory apply time ÷ loro's and
 * ratios.merge_sqlite_time_vs_loro = SQLite apply time ÷ loro's (below 1:
 * faster than loro; the SQLite ratio's aim is ≤ 3).
 */
import { everyTablePublic } from '../src/core/sync-manifest.js';
import { LoroDoc, LoroMap } from 'loro-crdt';
import { createHash } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { toHex } from '../src/core/bytes.js';
import { encodeCbor } from '../src/core/cbor.js';
import { eventIdOf, type EventBody, type SignedEvent } from '../src/core/event.js';
import { envelopeId } from '../src/core/seal.js';
import { admission, namesOf, type OpenedEnvelope } from '../src/core/ingest.js';
import { run as runSteps, type Steps } from '../src/core/steps.js';
import type { ReplicaStore, ReplicaTx } from '../src/core/store.js';
import { MAX_EVENTS_PER_FRAME } from '../src/core/peer-wire.js';
import type { Stamp } from '../src/core/hlc.js';
import type { RowState } from '../src/core/merge.js';
import type { ColumnValue } from '../src/core/schema.js';
import type { TrustContext } from '../src/core/trust.js';
import { MemoryReplicaStore } from '../src/storage/memory-store.js';
import { SqliteReplicaStore } from '../src/storage/sqlite-replica-store.js';
import type { BenchResult } from './run.ts';

/** 1,000,000 (SOV_BENCH_WRITES overrides, for a quick or profiled run of one side). */
const WRITES = Number(process.env['SOV_BENCH_WRITES'] ?? 1_000_000);
const ROWS = 100_000;
const DELETE_PER_MILLE = 20;
const SIGNERS = 4;
const BATCH = MAX_EVENTS_PER_FRAME;
/** Size of a sealed one-column event as measured by `bench events` (stand-in bytes). */
const SEALED_BYTES = 260;
const BASE_MS = 1_704_067_200_000;
const COLUMNS = ['name', 'location', 'schedule', 'notes', 'active'] as const;
const DELETE = -1;

/** mulberry32: a small seeded generator, so every run applies the same script. */
function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return (t ^ (t >>> 14)) >>> 0;
  };
}

type Script = { readonly rows: Int32Array; readonly cols: Int8Array; readonly values: Int32Array };

function makeScript(): Script {
  const next = seeded(0x5eed);
  const script = { rows: new Int32Array(WRITES), cols: new Int8Array(WRITES), values: new Int32Array(WRITES) };
  for (let i = 0; i < WRITES; i++) {
    script.rows[i] = next() % ROWS;
    script.cols[i] = next() % 1000 < DELETE_PER_MILLE ? DELETE : next() % COLUMNS.length;
    script.values[i] = next() % 10_000;
  }
  return script;
}

const rowName = (r: number): string => `device-${r}`;

function columnValue(column: (typeof COLUMNS)[number], v: number): ColumnValue {
  switch (column) {
    case 'active':
      return v % 2 === 0;
    case 'schedule':
      return v % 3 === 0 ? 'hourly' : 'daily';
    case 'location':
      return `field ${v % 97}`;
    default:
      return `${column} ${v}`;
  }
}

/** Builds pre-verified events from the script, one batch at a time, each signer's chain linked. */
class EventSource {
  readonly #script: Script;
  readonly #next = seeded(0xc0ffee);
  readonly #signers = Array.from({ length: SIGNERS }, () => this.#bytes(32));
  readonly #heads: { seq: number; id: Uint8Array }[] = Array.from({ length: SIGNERS }, () => ({
    seq: 0,
    id: new Uint8Array(32),
  }));
  readonly #sig = new Uint8Array(64);

  constructor(script: Script) {
    this.#script = script;
  }

  get signerIds(): string[] {
    return this.#signers.map(toHex);
  }

  #bytes(n: number): Uint8Array {
    const out = new Uint8Array(n);
    const view = new DataView(out.buffer);
    for (let i = 0; i < n; i += 4) view.setUint32(i, this.#next());
    return out;
  }

  batch(from: number, to: number): OpenedEnvelope[] {
    const out: OpenedEnvelope[] = [];
    for (let i = from; i < to; i++) out.push(this.#event(i));
    return out;
  }

  #event(i: number): OpenedEnvelope {
    const s = i % SIGNERS;
    const head = this.#heads[s]!;
    const col = this.#script.cols[i]!;
    const column = COLUMNS[col];
    const body: EventBody = {
      v: 1,
      domain: 'GENERAL',
      signer: this.#signers[s]!.slice(),
      seq: head.seq + 1,
      prev: head.id,
      table: 'device_profiles',
      row: rowName(this.#script.rows[i]!),
      op: column === undefined ? 'del' : 'put',
      cols: column === undefined ? {} : { [column]: columnValue(column, this.#script.values[i]!) },
      hlc: { ms: BASE_MS + Math.floor(i / SIGNERS), counter: 0 },
    };
    const id = this.#bytes(32);
    this.#heads[s] = { seq: body.seq, id };
    // As decoded: the signed body bytes (the body decodes from them) and, as the opener builds them, the names.
    const event: SignedEvent = { body, bodyBytes: encodeCbor(body), sig: this.#sig, bytes: new Uint8Array(0), id };
    const sealed = { domain: 'GENERAL' as const, gen: 1, id: this.#bytes(32), ct: new Uint8Array(0) };
    const names = { outerId: envelopeId(sealed), eventId: eventIdOf(event) };
    return { sealed, bytes: new Uint8Array(SEALED_BYTES), event, names };
  }
}

/** What one of our sides measured, and the end state the two stores must agree on. */
type Ours = {
  readonly ms: number;
  readonly rows: number;
  readonly tombstoned: number;
  readonly deletes: number;
  readonly resurrections: number;
  readonly resurrectionRecords: number;
  readonly logged: number;
  readonly digest: string;
};

type Applied = { resurrections: number; deletes: number };

/** What `Replica.ingest` runs for each opened event of a frame: the parked check, then admission. */
function* admitBatch(
  tx: ReplicaTx,
  batch: readonly OpenedEnvelope[],
  trust: TrustContext,
  now: number,
): Steps<Applied> {
  const found: Applied = { resurrections: 0, deletes: 0 };
  for (const opened of batch) {
    if ((yield tx.isParked(namesOf(opened).outerId)) as boolean) throw new Error('bench merge: parked');
    const verdict = yield* admission(tx, opened, trust, everyTablePublic, now, undefined);
    if (verdict.type !== 'Applied') throw new Error(`bench merge: admission gave ${verdict.type}`);
    found.resurrections += verdict.resurrections.length;
    if (verdict.body.op === 'del') found.deletes++;
  }
  return found;
}

/** A digest of every row's cells (value and stamp) and tombstone, in row order: equal states, equal digests. */
function digestOf(rows: readonly RowState[]): string {
  const hash = createHash('sha256');
  for (const state of [...rows].sort((a, b) => (a.row < b.row ? -1 : a.row > b.row ? 1 : 0))) {
    const stamp = (s: Stamp | undefined) => (s === undefined ? '-' : `${s.ms}.${s.counter}.${toHex(s.node)}`);
    const cells = Object.keys(state.cells)
      .sort()
      .map((c) => `${c}=${JSON.stringify(state.cells[c]!.value)}@${stamp(state.cells[c]!.stamp)}`);
    hash.update(`${state.table}/${state.row} del@${stamp(state.deleted)} ${cells.join(' ')}\n`);
  }
  return hash.digest('hex');
}

async function applyOurs(script: Script, store: ReplicaStore): Promise<Ours> {
  const source = new EventSource(script);
  const anchors = source.signerIds;
  const trust: TrustContext = { self: 'ab'.repeat(32), anchors: () => anchors };
  const now = BASE_MS + WRITES;
  let ms = 0;
  let resurrections = 0;
  let deletes = 0;
  for (let from = 0; from < WRITES; from += BATCH) {
    const batch = source.batch(from, Math.min(WRITES, from + BATCH));
    const start = performance.now();
    const applied = await store.transact((tx) => runSteps(admitBatch(tx, batch, trust, now)));
    ms += performance.now() - start;
    resurrections += applied.resurrections;
    deletes += applied.deletes;
  }
  const rows = await store.rows('device_profiles');
  return {
    ms,
    rows: rows.length,
    tombstoned: rows.filter((r) => r.deleted !== undefined).length,
    deletes,
    resurrections,
    resurrectionRecords: (await store.resurrections(WRITES)).length,
    logged: await store.lastPos(),
    digest: digestOf(rows),
  };
}

/** The SQLite side: a file store in a fresh temporary directory, opened as the headless node opens its replica. */
async function applySqlite(script: Script): Promise<Ours> {
  const dir = await mkdtemp(join(tmpdir(), 'sov-bench-merge-'));
  try {
    const store = new SqliteReplicaStore(join(dir, 'replica.sqlite'));
    try {
      return await applyOurs(script, store);
    } finally {
      store.close();
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** Loro's inputs for one batch, built as our events are: row names and column values made before the timer. */
type LoroBatch = {
  readonly rows: Int32Array;
  readonly names: string[];
  readonly columns: ((typeof COLUMNS)[number] | undefined)[];
  readonly values: (ColumnValue | undefined)[];
};

function loroBatch(script: Script, from: number, to: number): LoroBatch {
  const batch: LoroBatch = { rows: script.rows.subarray(from, to), names: [], columns: [], values: [] };
  for (let i = from; i < to; i++) {
    const column = COLUMNS[script.cols[i]!];
    batch.names.push(rowName(script.rows[i]!));
    batch.columns.push(column);
    batch.values.push(column === undefined ? undefined : columnValue(column, script.values[i]!));
  }
  return batch;
}

function applyLoro(script: Script): { ms: number; rows: number } {
  const doc = new LoroDoc();
  const root = doc.getMap('device_profiles');
  const handles: (LoroMap | undefined)[] = new Array<LoroMap | undefined>(ROWS);
  let ms = 0;
  for (let from = 0; from < WRITES; from += BATCH) {
    const batch = loroBatch(script, from, Math.min(WRITES, from + BATCH));
    const start = performance.now();
    for (let k = 0; k < batch.rows.length; k++) {
      const r = batch.rows[k]!;
      const map = (handles[r] ??= root.setContainer(batch.names[k]!, new LoroMap()));
      const column = batch.columns[k];
      if (column === undefined) map.clear();
      else map.set(column, batch.values[k]!);
    }
    doc.commit();
    ms += performance.now() - start;
  }
  const rows = root.size;
  doc.free();
  return { ms, rows };
}

type SideName = 'memory' | 'sqlite' | 'loro';
type Loro = { readonly ms: number; readonly rows: number };

/** Runs one side on a fresh script; what a side's worker thread calls. */
export async function measureSide(side: SideName): Promise<Ours | Loro> {
  const script = makeScript();
  if (side === 'loro') return applyLoro(script);
  return side === 'sqlite' ? applySqlite(script) : applyOurs(script, new MemoryReplicaStore());
}

/**
 * Runs one side on a worker thread of its own: a fresh heap for each. On one
 * heap the second side paid for the first one's leftovers: after loro, the
 * same apply took 21.4 s against 13.0 s alone, and 13.9 s when a full
 * collection ran between the two. (Loro itself is no slower on a worker.)
 */
async function onOwnThread<S extends SideName>(side: S): Promise<S extends 'loro' ? Loro : Ours> {
  const worker = new Worker(
    `(async () => {
      const { parentPort, workerData } = await import('node:worker_threads');
      const { register } = await import(workerData.tsx);
      register();
      const { measureSide } = await import(workerData.bench);
      parentPort.postMessage(await measureSide(workerData.side));
    })()`,
    {
      eval: true,
      workerData: { tsx: import.meta.resolve('tsx/esm/api'), bench: import.meta.url, side },
    },
  );
  try {
    return await new Promise<S extends 'loro' ? Loro : Ours>((resolve, reject) => {
      worker.once('message', resolve);
      worker.once('error', reject);
      worker.once('exit', (code) => reject(new Error(`bench merge: the ${side} thread exited with ${code}`)));
    });
  } finally {
    await worker.terminate();
  }
}

/** Throws unless the SQLite store ended in the memory store's state. */
function checkSame(memory: Ours, sqlite: Ours): void {
  const keys = ['rows', 'tombstoned', 'deletes', 'resurrections', 'resurrectionRecords', 'logged', 'digest'] as const;
  for (const key of keys) {
    if (memory[key] !== sqlite[key]) {
      throw new Error(`bench merge: ${key} is ${String(memory[key])} in memory, ${String(sqlite[key])} in SQLite`);
    }
  }
}

export async function run(): Promise<BenchResult> {
  const script = makeScript();
  const deletes = script.cols.reduce((n, c) => n + (c === DELETE ? 1 : 0), 0);
  const loro = await onOwnThread('loro');
  const memory = await onOwnThread('memory');
  const sqlite = await onOwnThread('sqlite');
  if (memory.rows !== loro.rows) throw new Error(`bench merge: ${memory.rows} rows here, ${loro.rows} in loro`);
  if (memory.deletes !== deletes) throw new Error(`bench merge: ${memory.deletes} deletes applied of ${deletes}`);
  if (memory.logged !== WRITES) throw new Error(`bench merge: ${memory.logged} events logged of ${WRITES}`);
  checkSame(memory, sqlite);
  const perSecond = (ms: number) => WRITES / (ms / 1000);
  return {
    figures: {
      writes_per_s: perSecond(memory.ms),
      apply_seconds: memory.ms / 1000,
      sqlite_writes_per_s: perSecond(sqlite.ms),
      sqlite_apply_seconds: sqlite.ms / 1000,
      writes: WRITES,
      rows: memory.rows,
      deletes,
      resurrections: memory.resurrections,
      batch: BATCH,
    },
    anchors: { loro_writes_per_s: perSecond(loro.ms), loro_apply_seconds: loro.ms / 1000 },
    ratios: { merge_time_vs_loro: memory.ms / loro.ms, merge_sqlite_time_vs_loro: sqlite.ms / loro.ms },
  };
}
