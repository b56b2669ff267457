/**
 * Benchmark `catchup-node`: the state plane's catch-up as a headless node (`sov node`) meets
 * it — MeshNode and its services in one Node process on SQLite, wired by the very code
 * `sov node` runs (src/cli/headless.ts), through the real relay (`sov relay`, a child
 * process). Nothing here reaches past MeshNode's public calls.
 *
 *   setup    relay on 127.0.0.1 (temp data dir); two headless machines, each with its own
 *            data directory: A in a child process (bench/lib/headless-child.ts), as a
 *            separate machine is, B in this one. A founds a mesh, B joins it through the
 *            pairing ceremony (codes compared and confirmed on both sides). B closes: B is
 *            offline.
 *   timed    `local_writes_per_s`: A saves EVENTS profiles through MeshNode.editProfile
 *            (IN_FLIGHT at a time), rate over the first LOCAL_WINDOW.
 *            `seconds_100k_events`: B opens again and catches up through the relay until
 *            its watermark for A reaches A's log.
 *   anchor   `sqlite_bulk_insert_seconds`: the same records — each log entry B stored
 *            (sealed envelope, ids, signer, seq, row key) and its row — inserted into a
 *            fresh SQLite file with one prepared statement per table in one transaction.
 * Events default to 100,000 (SOV_BENCH_EVENTS overrides, for a quick run); SOV_BENCH_PROFILE=DIR
 * writes a CPU profile of this process during the catch-up to DIR/catchup-node.cpuprofile.
 */
import Database from 'better-sqlite3';
import { fork, type ChildProcess } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { Session } from 'node:inspector/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { encodeCbor } from '../src/core/cbor.js';
import { openHeadless, type Headless } from '../src/cli/headless.ts';
import type { NodeSnapshot } from '../src/runtime/mesh-node.js';
import { SqliteReplicaStore } from '../src/storage/sqlite-replica-store.js';
import { freePort, spawnRelay } from '../test/helpers/relay-child.ts';
import type { BenchResult } from './run.ts';
import type { ReplicaStore } from '../src/core/store.js';
import type { ChildReply, ChildRequest } from './lib/headless-child.ts';

const EVENTS = Number(process.env['SOV_BENCH_EVENTS'] ?? 100_000);
const LOCAL_WINDOW = Math.min(EVENTS, 10_000);
const IN_FLIGHT = 16;
const STEP_MS = 120_000;
const CATCHUP_MS = 60 * 60_000;
/** How often the catch-up's progress (B's watermark) is printed to stderr. */
const PROGRESS_MS = 10_000;
/** Where a CPU profile of the catch-up goes; none if unset. */
const PROFILE_DIR = process.env['SOV_BENCH_PROFILE'];

/** Starts the V8 profiler of this process; the returned call stops it and writes the profile to `dir`. */
async function profile(dir: string): Promise<() => Promise<void>> {
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.start');
  return async () => {
    const { profile } = await session.post('Profiler.stop');
    session.disconnect();
    await mkdir(dir, { recursive: true });
    await writeFile(join(dir, 'catchup-node.cpuprofile'), JSON.stringify(profile));
  };
}

/** Seconds to insert every log entry and row of `store` into a fresh SQLite file, one transaction. */
async function bulkInsertSeconds(store: ReplicaStore, path: string): Promise<number> {
  const entries = [];
  for (let after = 0; ;) {
    const page = await store.entriesAfter(after, 10_000);
    if (page.length === 0) break;
    entries.push(...page);
    after = page[page.length - 1]!.pos;
  }
  const rows = await store.rows('device_profiles');
  const records = entries.map((e) => ({
    pos: e.pos,
    outer: e.outerId,
    event: e.eventId ?? null,
    signer: e.signer ?? null,
    seq: e.seq ?? null,
    row_key: e.rowKey ?? null,
    sealed: Buffer.from(e.sealed),
  }));
  const states = rows.map((r) => ({ table_name: r.table, row_id: r.row, state: Buffer.from(encodeCbor(r.cells)) }));
  const db = new Database(path);
  db.pragma('journal_mode = WAL');
  db.exec(`CREATE TABLE log (pos INTEGER PRIMARY KEY, outer TEXT UNIQUE, event TEXT, signer TEXT, seq INTEGER,
    row_key TEXT, sealed BLOB);
    CREATE TABLE rows (table_name TEXT, row_id TEXT, state BLOB, PRIMARY KEY (table_name, row_id));`);
  const insertLog = db.prepare(
    'INSERT INTO log (pos, outer, event, signer, seq, row_key, sealed) VALUES (@pos, @outer, @event, @signer, @seq, @row_key, @sealed)',
  );
  const insertRow = db.prepare(
    'INSERT OR REPLACE INTO rows (table_name, row_id, state) VALUES (@table_name, @row_id, @state)',
  );
  const started = performance.now();
  db.transaction(() => {
    for (const r of records) insertLog.run(r);
    for (const s of states) insertRow.run(s);
  })();
  const seconds = (performance.now() - started) / 1000;
  db.close();
  return seconds;
}

/** Resolves with the first snapshot of `machine` that `test` accepts; throws with `what` after `timeout`. */
function until(
  machine: Headless,
  what: string,
  test: (s: NodeSnapshot) => boolean,
  timeout = STEP_MS,
): Promise<NodeSnapshot> {
  return new Promise((resolve, reject) => {
    let stop = (): void => undefined;
    const timer = setTimeout(() => {
      stop();
      reject(new Error(`catchup-node: timed out waiting for ${what}`));
    }, timeout);
    stop = machine.node.subscribe((s) => {
      if (!test(s)) return;
      clearTimeout(timer);
      queueMicrotask(() => stop());
      resolve(s);
    });
  });
}

const restart = (): void => {
  throw new Error('catchup-node: a machine asked to restart');
};

/** The writer A: a headless machine in a child process, asked one thing at a time. */
class Writer {
  readonly #child: ChildProcess;
  readonly #replies: ChildReply[] = [];
  #wake: () => void = () => undefined;
  /** Joiners' codes as A's screen shows them, by invitation. */
  readonly codes = new Map<string, string>();

  constructor() {
    this.#child = fork('bench/lib/headless-child.ts', [], { execArgv: ['--import', 'tsx'] });
    this.#child.on('message', (reply: ChildReply) => {
      if (reply.t === 'sas') this.codes.set(reply.inv, reply.sas);
      else this.#replies.push(reply);
      this.#wake();
    });
    this.#child.once('exit', () => this.#wake());
  }

  async #next(timeout: number): Promise<ChildReply> {
    const deadline = performance.now() + timeout;
    for (;;) {
      const reply = this.#replies.shift();
      if (reply) return reply;
      if (this.#child.exitCode !== null) throw new Error('catchup-node: the writer exited');
      if (performance.now() > deadline) throw new Error('catchup-node: the writer did not answer');
      await new Promise<void>((resolve) => {
        this.#wake = resolve;
        setTimeout(resolve, 100);
      });
    }
  }

  async ask<T extends ChildReply['t']>(
    request: ChildRequest,
    expected: T,
    timeout = STEP_MS,
  ): Promise<Extract<ChildReply, { t: T }>> {
    this.#child.send(request);
    const reply = await this.#next(timeout);
    if (reply.t === 'error') throw new Error(`catchup-node: the writer: ${reply.message}`);
    if (reply.t !== expected) throw new Error(`catchup-node: the writer answered ${reply.t}, not ${expected}`);
    return reply as Extract<ChildReply, { t: T }>;
  }

  async code(): Promise<{ inv: string; sas: string }> {
    const deadline = performance.now() + STEP_MS;
    while (this.codes.size === 0) {
      if (performance.now() > deadline) throw new Error('catchup-node: no pairing code on the writer');
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const [inv, sas] = [...this.codes][0]!;
    return { inv, sas };
  }

  async close(): Promise<void> {
    if (this.#child.exitCode !== null || !this.#child.connected) return;
    await this.ask({ t: 'close' }, 'closed').catch(() => this.#child.kill('SIGKILL'));
  }
}

/** A founds a mesh; B joins with A's ticket; both compare the codes and confirm. */
async function pair(a: Writer, b: Headless, dir: string, relayUrl: string): Promise<void> {
  const { ticket } = await a.ask({ t: 'found', dir, relayUrl }, 'ticket');
  const joined = await b.node.pairing.join(ticket, 'reader');
  if (!joined.ok) throw new Error(`catchup-node: join refused: ${joined.error.type}`);
  const { inv, sas } = await a.code();
  const shown = await until(b, "the joiner's code", (s) => s.join.sas !== undefined);
  if (shown.join.sas !== sas) throw new Error('catchup-node: the two machines show different codes');
  await b.node.pairing.answerJoin(true);
  await a.ask({ t: 'answer', inv, confirmed: true }, 'answered');
  await until(b, 'B to be a member', (s) => s.status === 'member' && s.machines.length === 2);
  await a.ask({ t: 'machines', count: 2 }, 'machines');
}

const watermarkOf = (s: NodeSnapshot): number => Math.max(0, ...s.sync.peers.map((p) => p.watermark));

export async function run(): Promise<BenchResult> {
  const dir = await mkdtemp(join(tmpdir(), 'sov-bench-catchup-node-'));
  const port = await freePort();
  const relay = await spawnRelay(port, join(dir, 'relay'));
  const relayUrl = `ws://127.0.0.1:${port}/ws`;
  const machines: Headless[] = [];
  const open = async (name: string): Promise<Headless> => {
    const machine = await openHeadless(join(dir, name), { role: 'server', restart });
    machines.push(machine);
    return machine;
  };
  const a = new Writer();
  try {
    let b = await open('b');
    await pair(a, b, join(dir, 'a'), relayUrl);
    await b.close();
    machines.splice(machines.indexOf(b), 1);

    const written = await a.ask(
      { t: 'write', count: EVENTS, inFlight: IN_FLIGHT, window: LOCAL_WINDOW },
      'written',
      CATCHUP_MS,
    );
    const { windowSeconds, logLength: target } = written;

    const stopProfile = PROFILE_DIR ? await profile(PROFILE_DIR) : undefined;
    const started = performance.now();
    b = await open('b');
    let latest = 0;
    const watching = b.node.subscribe((s) => (latest = watermarkOf(s)));
    const progress = setInterval(() => {
      const seconds = ((performance.now() - started) / 1000).toFixed(0);
      process.stderr.write(`catchup-node: ${seconds} s: watermark ${latest} of ${target}\n`);
    }, PROGRESS_MS);
    try {
      await until(b, `B's watermark for A to reach ${target}`, (s) => watermarkOf(s) >= target, CATCHUP_MS);
    } finally {
      clearInterval(progress);
      watching();
    }
    const seconds = (performance.now() - started) / 1000;
    await stopProfile?.();
    await b.close();
    machines.splice(machines.indexOf(b), 1);

    const store = new SqliteReplicaStore(join(dir, 'b', 'replica.sqlite'));
    const anchor = await bulkInsertSeconds(store, join(dir, 'anchor.sqlite'));
    store.close();
    return {
      figures: {
        events: EVENTS,
        seconds_100k_events: seconds,
        events_per_s: EVENTS / seconds,
        local_writes_per_s: LOCAL_WINDOW / windowSeconds,
      },
      anchors: { sqlite_bulk_insert_seconds: anchor },
      ratios: { catchup_time_vs_sqlite_bulk_insert: seconds / anchor },
    };
  } finally {
    for (const machine of machines) await machine.close();
    await a.close();
    relay.kill('SIGTERM');
    await rm(dir, { recursive: true, force: true });
  }
}
