/**
 * A headless admin killed (SIGKILL) while it compacts a table (issue 24): at every point —
 * while the compaction is formed, once it waits for publication, right after its catalog row is
 * written — a reader on another machine sees either the old objects or the compaction, never
 * both and never neither: each of its queries, made all along, counts every row exactly once.
 * After a restart on the same data directory the work resumes (a compaction kept here is
 * published; one that was not yet kept is formed again) and the reader ends on one object.
 * The machines run as `sov node` wires them (src/cli/headless.ts), through the real relay.
 */
import { fork } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { Headless } from '../../src/cli/headless.ts';
import { foundHeadless, machinesIn, pairHeadless, until } from '../helpers/headless-mesh.ts';
import { freePort, spawnRelay } from '../helpers/relay-child.ts';

type Step = 'forming' | 'formed' | 'published';

const dir = mkdtempSync(join(tmpdir(), 'sov-compaction-crash-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const open = machinesIn(dir);

const COUNT = 'SELECT count(*) AS n FROM measurements';

/** Runs the compacting admin on its data directory and kills it when it reports `step`. */
async function killAt(step: Step): Promise<void> {
  const child = fork('test/helpers/compacting-node.ts', [join(dir, 'admin')], {
    execArgv: ['--import', 'tsx'],
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  });
  const exited = new Promise<NodeJS.Signals | null>((resolve) => child.once('exit', (_, signal) => resolve(signal)));
  await new Promise<void>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`the admin exited (${code}) before it reached ${step}`)));
    child.on('message', (m: { t: Step }) => {
      if (m.t !== step) return;
      child.kill('SIGKILL');
      resolve();
    });
  });
  expect(await exited).toBe('SIGKILL');
}

/**
 * Queries `reader` until stopped; every answer that does not count `expected()` rows, described
 * (none while `expected()` is undefined: new objects are arriving).
 */
function watch(
  reader: Headless,
  expected: () => number | undefined,
): { stop: () => Promise<string[]>; queries: () => number } {
  const wrong: string[] = [];
  let running = true;
  let queries = 0;
  const loop = (async () => {
    while (running) {
      await new Promise((resolve) => setTimeout(resolve, 25));
      const want = expected();
      const answer = want === undefined ? undefined : await reader.node.objects.query(COUNT);
      if (answer) queries++;
      if (!answer || want !== expected()) continue;
      if (!answer.ok) wrong.push(answer.error.type);
      else if (answer.value.rows[0]?.[0] !== want) {
        wrong.push(`${String(answer.value.rows[0]?.[0])} rows from ${answer.value.explain.scanned} objects`);
      }
    }
  })();
  return {
    stop: async () => {
      running = false;
      await loop;
      return wrong;
    },
    queries: () => queries,
  };
}

describe('compaction after a crash', () => {
  it('never shows both sets or neither, and finishes after a restart, wherever the compacting machine was killed', async () => {
    const port = await freePort();
    const relay = await spawnRelay(port, join(dir, 'relay'));
    const machines: Headless[] = [];
    let admin: Headless | undefined;
    try {
      admin = await open('admin');
      await foundHeadless(admin, 'admin', port);
      const reader = await open('reader');
      machines.push(reader);
      await pairHeadless(admin, reader, 'reader');

      let rows = 0;
      let expected: number | undefined;
      const watching = watch(reader, () => expected);
      for (const step of ['forming', 'formed', 'published'] as const) {
        // Three new small objects; the reader counts their rows before the compaction starts.
        expected = undefined;
        for (const rows of [200, 300, 400])
          expect((await admin.node.objects.importSample('GENERAL', rows)).ok).toBe(true);
        await until(
          admin,
          (s) => !s.objects.some((o) => o.state === 'pending' || (o.state === 'published' && !o.uploaded)),
          'the objects are published and uploaded',
        );
        rows += 900;
        await until(reader, (s) => s.objects.filter((o) => o.manifest).length > 0, 'the reader lists objects');
        for (;;) {
          const seen = await reader.node.objects.query(COUNT);
          if (seen.ok && seen.value.rows[0]?.[0] === rows) break;
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
        expected = rows;

        await admin.close();
        admin = undefined;
        await killAt(step);
        admin = await open('admin');
        await until(admin, (s) => s.relay === 'ready', 'the restarted admin is online');
        // A compaction kept before the kill is published now and takes its inputs: nothing to do.
        // One killed while it was formed left nothing: it is formed again.
        const again = await admin.node.objects.compact('GENERAL', 'measurements');
        expect(again.ok).toBe(true);
        for (;;) {
          const seen = await reader.node.objects.query(COUNT);
          if (!seen.ok) throw new Error(seen.error.type);
          if (seen.value.explain.scanned === 1) break;
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
        const pending = (await until(admin, () => true, 'a snapshot')).objects.filter((o) => o.state === 'pending');
        expect(pending, step).toEqual([]);
      }
      const wrong = await watching.stop();
      expect(watching.queries()).toBeGreaterThan(30);
      expect(wrong).toEqual([]);
    } finally {
      await admin?.close();
      for (const m of machines) await m.close();
      relay.kill('SIGTERM');
    }
  }, 300_000);
});
