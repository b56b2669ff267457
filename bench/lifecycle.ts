/**
 * Benchmark `lifecycle`: rotating a domain's key by rewrap (issue 24), as a headless node
 * (`sov node`, SQLite) runs it — MeshNode and its services wired by src/cli/headless.ts,
 * through the real relay (`sov relay`, a child process).
 *
 *   setup    relay on 127.0.0.1; one headless machine founds a mesh (the admin, the only
 *            reader of GENERAL). SAMPLE real objects are formed and published through the
 *            node's own object plane (sample measurements, SAMPLE_ROWS rows each). Then
 *            OBJECTS catalog entries are published through the node's own state plane, as
 *            publication writes them (test/helpers/catalog-seed.ts): an `object_catalog` row
 *            (a sealed manifest's worth of random bytes) and an `object_access` row whose
 *            record the key holder wrapped under generation 1 from a fresh object secret. Forming 100,000 real objects
 *            would take most of an hour here; a rewrap never opens a manifest or an
 *            object's bytes, so what it does per object is the same.
 *   timed    `rotation_seconds`: `node.domains.rotate('GENERAL')` — the MLS commit through
 *            the relay's sequencer, the new generation to the key holder, then the
 *            background rewrap (src/runtime/rewrap-job.ts) — until the Domains view's
 *            progress says every object has a record under generation 2.
 *   bytes    `rewrap_bytes_per_object`: what the rotation added to the log (the sealed
 *            state-plane envelopes of the new `object_access` rows, as stored and sent to
 *            peers) ÷ objects; `access_record_bytes`: the wrapped secret alone (60).
 *   anchor   `reencrypt_seconds`: re-encrypting every object's bytes instead — AES-256-GCM
 *            decrypt and encrypt (node:crypto) of the sample objects' bytes, timed over
 *            REENCRYPT_SAMPLE objects and scaled to OBJECTS (sample objects are small, so
 *            the anchor is a lower bound for real ones).
 *
 * Then compaction, where it runs — in a browser that reads the domain (bench/lib/compaction-browser.ts):
 * `compaction_rows_per_s` compacting COMPACT_OBJECTS objects of 1,000 rows into one, against
 * `anchors.form_seconds` (forming one object of the same rows afresh in the same browser);
 * `ratios.compaction_time_vs_form`.
 *
 * Then disaster recovery (bench/lib/recovery-headless.ts): `recovery_seconds`, a fresh headless
 * machine restoring a RECOVERY_OBJECTS-object catalog from a recovery kit and the relay, against
 * `anchors.query_all_seconds` (its first query over every object); `ratios.recovery_vs_query_all`.
 *
 * Objects default to 100,000 (SOV_BENCH_OBJECTS overrides, for a quick run), compacted objects
 * to 1,000 (SOV_BENCH_COMPACT_OBJECTS), recovered objects to 1,000 (SOV_BENCH_RECOVERY_OBJECTS).
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { WRAPPED_BYTES } from '../src/core/object/access.js';
import { openHeadless, type Headless } from '../src/cli/headless.ts';
import type { NodeSnapshot } from '../src/runtime/mesh-node.js';
import { seedCatalog } from '../test/helpers/catalog-seed.ts';
import { freePort, spawnRelay } from '../test/helpers/relay-child.ts';
import { measureCompaction } from './lib/compaction-browser.ts';
import { measureRecovery } from './lib/recovery-headless.ts';
import type { BenchResult } from './run.ts';

const OBJECTS = Number(process.env['SOV_BENCH_OBJECTS'] ?? 100_000);
const SAMPLE = 20;
const SAMPLE_ROWS = 1_000;
const REENCRYPT_SAMPLE = 2_000;
const ROTATION_MS = 60 * 60_000;
const COMPACT_OBJECTS = Number(process.env['SOV_BENCH_COMPACT_OBJECTS'] ?? 1_000);
const COMPACT_ROWS = 1_000;
const RECOVERY_OBJECTS = Number(process.env['SOV_BENCH_RECOVERY_OBJECTS'] ?? 1_000);

function until(machine: Headless, what: string, test: (s: NodeSnapshot) => boolean, timeout: number) {
  return new Promise<NodeSnapshot>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`bench lifecycle: no ${what} in ${timeout} ms`)), timeout);
    const stop = machine.node.subscribe((s) => {
      if (!test(s)) return;
      clearTimeout(timer);
      queueMicrotask(() => stop());
      resolve(s);
    });
  });
}

/** Seconds to decrypt and encrypt `bytes` again with AES-256-GCM, `times` times. */
function reencryptSeconds(samples: readonly Uint8Array[], times: number): number {
  const key = randomBytes(32);
  const sealed = samples.map((bytes) => {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', key, iv);
    const ct = Buffer.concat([cipher.update(bytes), cipher.final()]);
    return { iv, ct, tag: cipher.getAuthTag() };
  });
  const started = performance.now();
  for (let i = 0; i < times; i++) {
    const s = sealed[i % sealed.length]!;
    const decipher = createDecipheriv('aes-256-gcm', key, s.iv);
    decipher.setAuthTag(s.tag);
    const plain = Buffer.concat([decipher.update(s.ct), decipher.final()]);
    const cipher = createCipheriv('aes-256-gcm', key, randomBytes(12));
    Buffer.concat([cipher.update(plain), cipher.final()]);
    cipher.getAuthTag();
  }
  return (performance.now() - started) / 1000;
}

export async function run(): Promise<BenchResult> {
  const dir = await mkdtemp(join(tmpdir(), 'sov-bench-lifecycle-'));
  const port = await freePort();
  const relay = await spawnRelay(port, join(dir, 'relay'));
  const relayUrl = `ws://127.0.0.1:${port}/ws`;
  const machine = await openHeadless(join(dir, 'a'), {
    role: 'server',
    restart: () => {
      throw new Error('bench lifecycle: the machine asked to restart');
    },
  });
  try {
    const { node } = machine;
    await node.pairing.found('admin', relayUrl);
    await until(machine, 'relay session', (s) => s.relay === 'ready', 60_000);
    for (let i = 0; i < SAMPLE; i++) {
      const formed = await node.objects.importSample('GENERAL', SAMPLE_ROWS);
      if (!formed.ok) throw new Error(`bench lifecycle: ${formed.error.type}`);
    }
    await node.objects.sync();
    const published = await until(
      machine,
      'published sample',
      (s) => s.objects.filter((o) => o.state === 'published' && o.size !== undefined).length === SAMPLE,
      120_000,
    );
    const sizes = published.objects.map((o) => o.size!);
    await seedCatalog(machine, 'GENERAL', OBJECTS);
    const total = OBJECTS + SAMPLE;
    const store = machine.services.replica;
    const before = await store.lastPos();

    const started = performance.now();
    const rotated = await node.domains.rotate('GENERAL');
    if (!rotated.ok) throw new Error(`bench lifecycle: rotation refused (${rotated.error.type})`);
    const done = await until(
      machine,
      'finished rewrap',
      (s) => {
        const r = s.domains.find((d) => d.domain === 'GENERAL')?.rewrap;
        return r !== undefined && r.gen === 2 && r.done === total;
      },
      ROTATION_MS,
    );
    const seconds = (performance.now() - started) / 1000;
    const rewrap = done.domains.find((d) => d.domain === 'GENERAL')!.rewrap!;
    if (rewrap.total !== total || rewrap.withheld !== 0) throw new Error('bench lifecycle: objects left out');

    let bytes = 0;
    const after = await store.lastPos();
    for (let pos = before; pos < after;) {
      const page = await store.sealedAfter(pos, after, 4096);
      if (page.length === 0) break;
      for (const e of page) bytes += e.sealed.length;
      pos = page.at(-1)!.pos;
    }
    const samples = sizes.map((size) => new Uint8Array(randomBytes(size)));
    const anchor = (reencryptSeconds(samples, REENCRYPT_SAMPLE) * total) / REENCRYPT_SAMPLE;
    const compaction = await measureCompaction(COMPACT_OBJECTS, COMPACT_ROWS);
    const recovery = await measureRecovery(RECOVERY_OBJECTS);
    return {
      figures: {
        compaction_objects: compaction.objects,
        compaction_rows: compaction.rows,
        compaction_seconds: compaction.compaction_seconds,
        compaction_rows_per_s: compaction.rows / compaction.compaction_seconds,
        objects: total,
        rotation_seconds: seconds,
        objects_per_s: total / seconds,
        rewrap_bytes_per_object: bytes / total,
        access_record_bytes: WRAPPED_BYTES,
        sample_object_bytes: sizes.reduce((a, b) => a + b, 0) / sizes.length,
        recovery_objects: recovery.objects,
        recovery_entries: recovery.entries,
        recovery_checkpoint_bytes: recovery.checkpoint_bytes,
        recovery_seconds: recovery.recovery_seconds,
      },
      anchors: {
        reencrypt_seconds: anchor,
        form_seconds: compaction.form_seconds,
        query_all_seconds: recovery.query_all_seconds,
      },
      ratios: {
        rotation_time_vs_reencrypt: seconds / anchor,
        compaction_time_vs_form: compaction.compaction_seconds / compaction.form_seconds,
        recovery_vs_query_all: recovery.recovery_seconds / recovery.query_all_seconds,
      },
    };
  } finally {
    await machine.close();
    relay.kill('SIGTERM');
    await rm(dir, { recursive: true, force: true });
  }
}
