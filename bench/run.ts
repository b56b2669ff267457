/**
 * Benchmark harness (DESIGN §8): `sov bench [NAME…]` runs the named benchmarks,
 * or all of them, and writes each result to `bench/results/NAME.json` as
 * `{name, date, machine, figures, anchors, ratios}`. Figures are ours, anchors
 * are a reference measured in the same run, ratios are figure ÷ anchor with the
 * direction in the key. Results are reproducible output, never hand-edited.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { cpus, totalmem } from 'node:os';
import { fileURLToPath } from 'node:url';

export type Numbers = Record<string, number>;
export type BenchResult = { readonly figures: Numbers; readonly anchors: Numbers; readonly ratios: Numbers };
export type Benchmark = { run(): Promise<BenchResult> };

/** name → module; each module loads only when its benchmark runs. */
const BENCHMARKS: Readonly<Record<string, () => Promise<Benchmark>>> = {
  events: () => import('./events.ts'),
  catchup: () => import('./catchup.ts'),
  'catchup-browser': () => import('./catchup-browser.ts'),
  'catchup-node': () => import('./catchup-node.ts'),
  realtime: () => import('./realtime.ts'),
  merge: () => import('./merge.ts'),
  transport: () => import('./transport.ts'),
  mls: () => import('./mls.ts'),
  objects: () => import('./objects.ts'),
  query: () => import('./query.ts'),
  lighthouse: () => import('./lighthouse.ts'),
  lifecycle: () => import('./lifecycle.ts'),
  metadata: () => import('./metadata.ts'),
  api: () => import('./api.ts'),
};

const RESULTS_DIR = fileURLToPath(new URL('./results/', import.meta.url));

export function machineInfo(): { cpus: number; model: string; memGiB: number; node: string; platform: string } {
  const list = cpus();
  return {
    cpus: list.length,
    model: list[0]?.model.trim() ?? 'unknown',
    memGiB: Math.round((totalmem() / 2 ** 30) * 10) / 10,
    node: process.version,
    platform: `${process.platform}-${process.arch}`,
  };
}

function checkNumbers(name: string, part: string, values: Numbers): void {
  for (const [key, value] of Object.entries(values)) {
    if (!Number.isFinite(value)) throw new Error(`bench ${name}: ${part}.${key} is not a finite number`);
  }
}

const round = (n: number): number => Number(n.toPrecision(4));

function summary(name: string, result: BenchResult): string {
  const show = (values: Numbers) => Object.entries(values).map(([k, v]) => `${k}=${round(v)}`);
  return `${name}: ${[...show(result.figures), ...show(result.anchors), ...show(result.ratios)].join(' ')}`;
}

async function runOne(name: string, load: () => Promise<Benchmark>): Promise<void> {
  const result = await (await load()).run();
  checkNumbers(name, 'figures', result.figures);
  checkNumbers(name, 'anchors', result.anchors);
  checkNumbers(name, 'ratios', result.ratios);
  const record = { name, date: new Date().toISOString(), machine: machineInfo(), ...result };
  await mkdir(RESULTS_DIR, { recursive: true });
  await writeFile(`${RESULTS_DIR}${name}.json`, JSON.stringify(record, null, 2) + '\n');
  process.stdout.write(summary(name, result) + '\n');
}

const USAGE = `usage: sov bench [NAME…]   (npm run bench -- [NAME…])

Runs the named benchmarks (default: all of them) and writes bench/results/NAME.json: figures,
the anchors measured in the same run, and their ratios.

  NAME                  one of: ${Object.keys(BENCHMARKS).join(', ')}
  -h, --help            this text

environment:
  SOV_BENCH_EVENTS=N    events for catchup-browser and catchup-node (default 100000; fewer for a quick run)
  SOV_BENCH_PROFILE=DIR write CPU profiles of the catch-ups into DIR (default: none)
  SOV_BENCH_OBJECTS=N   objects lifecycle rotates (default 100000)
  SOV_BENCH_ROWS=N      rows api reads through the SDK (default 100000)
  SOV_BENCH_COMPACT_OBJECTS=N  objects of 1,000 rows lifecycle compacts in Chromium (default 1000)
  SOV_BENCH_RECOVERY_OBJECTS=N objects of the catalog lifecycle restores from a recovery kit (default 1000)

example:
  SOV_BENCH_EVENTS=10000 sov bench catchup-node objects
`;

/** Returns the process exit code: 0 done, 2 usage error (an unknown name). */
export async function main(argv: readonly string[]): Promise<number> {
  if (argv.some((a) => a === '-h' || a === '--help')) {
    process.stdout.write(USAGE);
    return 0;
  }
  const names = argv.length > 0 ? [...new Set(argv)] : Object.keys(BENCHMARKS);
  const unknown = names.filter((n) => !Object.hasOwn(BENCHMARKS, n));
  if (unknown.length > 0) {
    process.stderr.write(`bench: unknown benchmark ${unknown.map((n) => `'${n}'`).join(', ')}\n${USAGE}`);
    return 2;
  }
  for (const name of names) await runOne(name, BENCHMARKS[name]!);
  return 0;
}
