/**
 * Disaster recovery of a catalog for `bench lifecycle` (issue 24), on headless machines as
 * `sov node` wires them (src/cli/headless.ts, SQLite), through the real relay:
 *
 *   setup    an admin founds a mesh and forms OBJECTS real objects in GENERAL (sample
 *            measurements, ROWS rows each) through its own object plane, published and uploaded;
 *            it makes a recovery kit, which writes the first checkpoint.
 *   timed    `recovery_seconds`: a fresh machine given the kit and its code — opening the kit
 *            (scrypt), then, started again as the kit's machine, listing and opening the root,
 *            fetching and opening the checkpoint, admitting its envelopes, checking key history
 *            and ciphertext — until it is a member (`sov node --restore` does the same).
 *   anchor   `query_all_seconds`: the restored machine's first query over every object
 *            (`SELECT count(*)`: each object's access record, manifest and footer opened), so
 *            `ratios.recovery_vs_query_all` says how many full reads of the catalog a restore costs.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openHeadless, type Headless } from '../../src/cli/headless.ts';
import type { NodeSnapshot } from '../../src/runtime/mesh-node.js';
import { freePort, spawnRelay } from '../../test/helpers/relay-child.ts';

const ROWS = 20;

function until(machine: Headless, what: string, test: (s: NodeSnapshot) => boolean, timeout: number) {
  return new Promise<NodeSnapshot>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`bench recovery: no ${what} in ${timeout} ms`)), timeout);
    const stop = machine.node.subscribe((s) => {
      if (!test(s)) return;
      clearTimeout(timer);
      queueMicrotask(() => stop());
      resolve(s);
    });
  });
}

export type RecoveryFigures = {
  readonly objects: number;
  readonly entries: number;
  readonly checkpoint_bytes: number;
  readonly recovery_seconds: number;
  readonly query_all_seconds: number;
};

export async function measureRecovery(objects: number): Promise<RecoveryFigures> {
  const dir = await mkdtemp(join(tmpdir(), 'sov-bench-recovery-'));
  const port = await freePort();
  const relay = await spawnRelay(port, join(dir, 'relay'));
  const open = (name: string) =>
    openHeadless(join(dir, name), {
      role: 'server',
      restart: () => {
        throw new Error(`bench recovery: ${name} asked to restart`);
      },
    });
  const machines: Headless[] = [];
  try {
    const admin = await open('admin');
    machines.push(admin);
    await admin.node.pairing.found('admin', `ws://127.0.0.1:${port}/ws`);
    await until(admin, 'relay session', (s) => s.relay === 'ready', 60_000);
    for (let i = 0; i < objects; i++) {
      const formed = await admin.node.objects.importSample('GENERAL', ROWS);
      if (!formed.ok) throw new Error(`bench recovery: ${formed.error.type}`);
    }
    await admin.node.objects.sync();
    await until(
      admin,
      'published objects',
      (s) => s.objects.filter((o) => o.state === 'published' && o.uploaded).length === objects,
      30 * 60_000,
    );
    const kit = await admin.node.recovery.makeKit();
    if (!kit.ok) throw new Error(`bench recovery: ${kit.error.reason}`);
    const mark = (await until(admin, 'checkpoint', (s) => s.checkpoint !== undefined, 60_000)).checkpoint!;

    const started = performance.now();
    const fresh = await open('restored');
    const imported = await fresh.node.recovery.importKit(kit.value.file, kit.value.code);
    if (!imported.ok) throw new Error(`bench recovery: ${imported.error.reason}`);
    await fresh.close();
    const restored = await open('restored');
    machines.push(restored);
    const done = await until(restored, 'restore', (s) => s.status === 'member', 30 * 60_000);
    const seconds = (performance.now() - started) / 1000;
    if (done.recovery?.state !== 'restored' || done.recovery.objects !== objects) {
      throw new Error(`bench recovery: restored ${JSON.stringify(done.recovery)}`);
    }
    const queried = performance.now();
    const answer = await restored.node.objects.query('SELECT count(*) AS n FROM measurements');
    const querySeconds = (performance.now() - queried) / 1000;
    if (!answer.ok || Number(answer.value.rows[0]?.[0]) !== objects * ROWS) {
      throw new Error(`bench recovery: the restored machine answers ${JSON.stringify(answer)}`);
    }
    return {
      objects,
      entries: mark.entries,
      checkpoint_bytes: mark.bytes,
      recovery_seconds: seconds,
      query_all_seconds: querySeconds,
    };
  } finally {
    for (const m of machines) await m.close();
    relay.kill('SIGTERM');
    await rm(dir, { recursive: true, force: true });
  }
}
