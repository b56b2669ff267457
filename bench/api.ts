/**
 * Benchmark `api` (issue 27): the headless node's loopback API on the path a script runs —
 * a headless machine as `sov node` wires it (src/cli/headless.ts, SQLite), its API server
 * (src/node-api/server.ts) on 127.0.0.1, and the SDK (src/sdk/client.ts) over HTTP.
 *
 *   setup    a relay (child process); machine A founds a mesh and saves ROWS device profiles
 *            through its own write path (16 at a time); machine B pairs with it (codes compared).
 *   timed    `rest_rows_per_s`: every row of `device_profiles` read through the SDK, pages of
 *            500 in key order, until the last page; `sse_p99_ms`: B saves EDITS profiles one at
 *            a time, each timed from B's write returning to A's `rows` event on the SDK's
 *            stream (p99, and the median as `sse_p50_ms`).
 *   anchor   `sqlite_rows_per_s`: the same rows read straight from A's store
 *            (`SqliteReplicaStore.rows`), in the same process.
 * ROWS defaults to 100,000 (SOV_BENCH_ROWS overrides, for a quick run).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startNodeApi } from '../src/node-api/server.ts';
import { NodeApiClient } from '../src/sdk/client.ts';
import { foundHeadless, machinesIn, pairHeadless } from '../test/helpers/headless-mesh.ts';
import { freePort, spawnRelay } from '../test/helpers/relay-child.ts';
import type { BenchResult } from './run.ts';

const ROWS = Number(process.env['SOV_BENCH_ROWS'] ?? 100_000);
const EDITS = 200;
const IN_FLIGHT = 16;
const PAGE = 500;

const percentile = (sorted: readonly number[], p: number): number =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;

export async function run(): Promise<BenchResult> {
  const dir = await mkdtemp(join(tmpdir(), 'sov-bench-api-'));
  const port = await freePort();
  const relay = await spawnRelay(port, join(dir, 'relay'));
  const open = machinesIn(dir);
  const a = await open('a');
  const b = await open('b');
  try {
    await foundHeadless(a, 'a', port);
    let next = 0;
    await Promise.all(
      Array.from({ length: IN_FLIGHT }, async () => {
        while (next < ROWS) {
          const i = next++;
          const saved = await a.node.writes.editProfile(`p${String(i).padStart(6, '0')}`, {
            name: `Pump ${i}`,
            location: `shed ${i % 50}`,
            schedule: 'hourly',
            notes: `installed by the bench, unit ${i}`,
          });
          if (!saved.ok) throw new Error(`api bench: save ${i} failed: ${saved.error.type}`);
        }
      }),
    );
    await pairHeadless(a, b, 'b');
    const token = 'bench-token-'.padEnd(43, 'x');
    const api = await startNodeApi({
      host: '127.0.0.1',
      port: await freePort(),
      token,
      node: a.node,
      fingerprint: () => a.fingerprint,
      log: () => undefined,
    });
    try {
      const client = new NodeApiClient({ url: api.url, token });

      let read = 0;
      const restStarted = performance.now();
      for (let offset = 0; ; offset += PAGE) {
        const page = await client.rows('device_profiles', { offset, limit: PAGE });
        if (!page.ok) throw new Error(`api bench: ${page.error.type}`);
        read += page.value.rows.length;
        if (page.value.rows.length < PAGE) break;
      }
      const restSeconds = (performance.now() - restStarted) / 1000;

      const storeStarted = performance.now();
      const stored = await a.services.replica.rows('device_profiles');
      const storeSeconds = (performance.now() - storeStarted) / 1000;
      // The saved rows and any the mesh keeps besides (a joining machine's own profile).
      if (stored.length < ROWS || read !== stored.length) {
        throw new Error(`api bench: read ${read} rows through the API, the store holds ${stored.length}`);
      }

      let waiting: ((at: number) => void) | undefined;
      const stream = client.events((e) => {
        if (e.type === 'rows') waiting?.(performance.now());
      });
      await new Promise((resolve) => setTimeout(resolve, 500));
      const latencies: number[] = [];
      for (let i = 0; i < EDITS; i++) {
        const arrived = new Promise<number>((resolve) => (waiting = resolve));
        const saved = await b.node.writes.editProfile(`b${i}`, { name: `Peer pump ${i}` });
        if (!saved.ok) throw new Error(`api bench: peer save failed: ${saved.error.type}`);
        const written = performance.now();
        const at = await Promise.race([
          arrived,
          new Promise<never>((_, reject) => setTimeout(() => reject(new Error('api bench: no event in 10 s')), 10_000)),
        ]);
        latencies.push(Math.max(0, at - written));
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      stream.close();
      latencies.sort((x, y) => x - y);
      return {
        figures: {
          rows: read,
          rest_rows_per_s: read / restSeconds,
          rest_seconds: restSeconds,
          sse_p50_ms: percentile(latencies, 50),
          sse_p99_ms: percentile(latencies, 99),
          peer_edits: EDITS,
        },
        anchors: { sqlite_rows_per_s: read / storeSeconds },
        ratios: { rest_rows_vs_store: storeSeconds / restSeconds },
      };
    } finally {
      await api.close();
    }
  } finally {
    await b.close();
    await a.close();
    relay.kill('SIGTERM');
    await rm(dir, { recursive: true, force: true });
  }
}
