/**
 * A headless admin killed (SIGKILL) while it rewraps a domain's objects under a new
 * generation (issue 24): after a restart on the same data directory the catalog is
 * consistent — every object keeps its old record, none has two under the new generation —
 * and the rewrap resumes from what is left and finishes. The machine runs as `sov node`
 * wires it (src/cli/headless.ts), through the real relay.
 */
import { fork } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openHeadless, type Headless } from '../../src/cli/headless.ts';
import type { NodeSnapshot } from '../../src/runtime/mesh-node.js';
import { ACCESS_TABLE } from '../../src/runtime/catalog-rows.js';
import { REWRAP_BATCH } from '../../src/runtime/rewrap-job.js';
import { freePort, spawnRelay } from '../helpers/relay-child.ts';

const OBJECTS = 5000;
const dir = mkdtempSync(join(tmpdir(), 'sov-rotation-crash-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

type Progress = { readonly t: 'progress'; readonly gen: number; readonly done: number; readonly total: number };

function rewrapOf(s: NodeSnapshot) {
  return s.domains.find((d) => d.domain === 'GENERAL')?.rewrap;
}

describe('rotation after a crash', () => {
  it('resumes the rewrap where the killed machine left it, without losing or doubling a record', async () => {
    const port = await freePort();
    const relay = await spawnRelay(port, join(dir, 'relay'));
    const relayUrl = `ws://127.0.0.1:${port}/ws`;
    const data = join(dir, 'admin');
    let machine: Headless | undefined;
    try {
      const child = fork('test/helpers/rotating-node.ts', [data, relayUrl, String(OBJECTS)], {
        execArgv: ['--import', 'tsx'],
        stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
      });
      const exited = new Promise<NodeJS.Signals | null>((resolve) =>
        child.once('exit', (_, signal) => resolve(signal)),
      );
      const killedAt = await new Promise<number>((resolve, reject) => {
        child.once('exit', (code) => reject(new Error(`the admin exited (${code}) before its rewrap was under way`)));
        child.on('message', (m: Progress) => {
          if (m.gen !== 2 || m.done === 0 || m.done >= m.total) return;
          child.kill('SIGKILL');
          resolve(m.done);
        });
      });
      expect(await exited).toBe('SIGKILL');
      expect(killedAt).toBeLessThan(OBJECTS);

      machine = await openHeadless(data, {
        role: 'server',
        restart: () => {
          throw new Error('the machine asked to restart');
        },
      });
      const node = machine.node;
      const catalog = async () => {
        const listed = await node.objects.catalogObjects();
        if (!listed.ok) throw new Error(listed.error.type);
        return listed.value;
      };
      const under = async (gen: number) => (await catalog()).filter((o) => o.gens.includes(gen)).length;
      const before = await under(2);
      expect(before).toBeGreaterThanOrEqual(killedAt);
      expect(before).toBeLessThan(OBJECTS);
      const finished = await new Promise<NodeSnapshot>((resolve) => {
        const stop = node.subscribe((s) => {
          const r = rewrapOf(s);
          if (r?.gen === 2 && r.done === r.total) {
            queueMicrotask(() => stop());
            resolve(s);
          }
        });
      });
      expect(rewrapOf(finished)).toMatchObject({ gen: 2, total: OBJECTS, done: OBJECTS, withheld: 0 });
      // Every object holds its publication's record and exactly one under generation 2, in
      // per-object rows (gen 1) and batch rows (gen 2; a batch cut short is written again whole).
      const objects = await catalog();
      expect(objects).toHaveLength(OBJECTS);
      for (const o of objects)
        expect(
          [...o.gens].sort((a, b) => a - b),
          o.id,
        ).toEqual([1, 2]);
      const rows = (await machine.services.replica.rows(ACCESS_TABLE)).map((r) => r.row);
      expect(rows.filter((r) => r.includes(':batch:2:')).length).toBeGreaterThanOrEqual(
        Math.ceil(OBJECTS / REWRAP_BATCH),
      );
    } finally {
      await machine?.close();
      relay.kill('SIGTERM');
    }
  }, 240_000);
});
