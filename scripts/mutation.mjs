#!/usr/bin/env node
// `npm run mutation [-- FILE…]`: mutation testing of the protocol core with StrykerJS (vitest
// runner, stryker.config.mjs), then bench/results/mutation.json. Not part of `npm test`: the
// whole core takes hours on two cores, so it runs in batches — pass the files to mutate (a
// batch), and every batch's per-file results are kept in .reports/mutation/cumulative.json, so
// the figure covers every file run so far (re-running a file replaces its results; Stryker's
// incremental file skips mutants whose code and tests did not change). The per-file results
// are kept in bench/results/mutation-mutants.json, committed, so batches run in different
// sessions add up. `--report-only FILE…` skips Stryker and folds those files in from its last
// report (give the same --tests= its run had, if any).
//
// `--tests=FILE,…` scores the batch against those test files only (vitest.mutation.config.ts
// reads them from SOV_MUTATION_TESTS). It is for modules every test touches (bytes, CBOR): with
// the whole suite, each of their mutants re-runs hundreds of tests and a batch takes hours. A
// narrower suite can only kill fewer mutants, so the score stays an honest lower bound; the
// files scored this way and their tests are listed in the report (`narrowed`).
//
// figures.mutation_score_core = killed ÷ (killed + survived), timeouts counted as killed and
// mutants no test covers counted as survived; survivors listed as an equivalent mutant
// (test/mutation/equivalent.json, each with its reason) count as neither.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const REPORT = join(ROOT, '.reports/mutation/mutation.json');
const CUMULATIVE = join(ROOT, 'bench/results/mutation-mutants.json');
const EQUIVALENT = join(ROOT, 'test/mutation/equivalent.json');
const RESULT = join(ROOT, 'bench/results/mutation.json');

const reportOnly = process.argv.includes('--report-only');
const testsArg = process.argv.find((a) => a.startsWith('--tests='));
const tests = testsArg ? testsArg.slice('--tests='.length).split(',').filter(Boolean) : [];
const files = process.argv.slice(2).filter((a) => a !== '--report-only' && a !== testsArg);
if (reportOnly && files.length === 0) {
  // The report also carries other files' results from Stryker's incremental file: fold in only those named.
  console.error('mutation: --report-only needs the files its run mutated');
  process.exit(2);
}
if (testsArg && (tests.length === 0 || (files.length === 0 && !reportOnly))) {
  console.error('mutation: --tests=FILE,… needs test files and the files to mutate');
  process.exit(2);
}
const vectors = process.env.SOV_VECTORS_DIR ?? resolve(ROOT, '..', 'shared', 'vectors');
const args = ['stryker', 'run', ...(files.length > 0 ? ['--mutate', files.join(',')] : [])];
if (!reportOnly) {
  const run = spawnSync('npx', args, {
    cwd: ROOT,
    stdio: 'inherit',
    // Stryker tests in a sandbox copy, where the repository's relative path to the vectors does not hold.
    env: {
      ...process.env,
      SOV_VECTORS_DIR: vectors,
      ...(tests.length > 0 ? { SOV_MUTATION_TESTS: tests.join(',') } : {}),
    },
  });
  if (run.status !== 0) {
    console.error(`mutation: stryker exited with ${run.status}`);
    process.exit(1);
  }
}

const report = JSON.parse(readFileSync(REPORT, 'utf8'));
const cumulative = existsSync(CUMULATIVE) ? JSON.parse(readFileSync(CUMULATIVE, 'utf8')) : { files: {} };
/** Files scored against --tests, with those tests; a Map, so a file rescored with the whole suite leaves it. */
const narrowed = new Map(Object.entries(cumulative.tests ?? {}));
// Only the files this run mutated are replaced (with --report-only: the files named). Stryker's
// report also carries other files' results from its incremental file, which may predate their
// tests or come from a run against other tests.
const latest = Object.fromEntries(
  Object.entries(report.files).filter(([file]) => files.length === 0 || files.includes(file)),
);
// Only what the score needs, one mutant a line: where, which mutator, what it became, the code it
// replaced, and how it ended.
for (const [file, result] of Object.entries(latest)) {
  // A file this run mutated was scored against --tests (or, without it, the whole suite); with
  // --report-only, --tests= says what the folded report's run was narrowed to.
  if (tests.length > 0) narrowed.set(file, tests);
  else narrowed.delete(file);
  const lines = (result.source ?? '').split('\n');
  cumulative.files[file] = result.mutants.map((m) => ({
    location: { start: { line: m.location.start.line, column: m.location.start.column } },
    mutatorName: m.mutatorName,
    original: originalText(lines, m.location),
    replacement: m.replacement,
    status: m.status,
  }));
}

/** The code a mutant replaced, on one line (its first 120 characters). */
function originalText(lines, { start, end }) {
  const text =
    start.line === end.line
      ? (lines[start.line - 1] ?? '').slice(start.column - 1, end.column - 1)
      : [
          (lines[start.line - 1] ?? '').slice(start.column - 1),
          ...lines.slice(start.line, end.line - 1),
          (lines[end.line - 1] ?? '').slice(0, end.column - 1),
        ].join(' ');
  return text.replace(/\s+/g, ' ').slice(0, 120);
}
mkdirSync(dirname(CUMULATIVE), { recursive: true });
const sortedFiles = Object.keys(cumulative.files).sort();
writeFileSync(
  CUMULATIVE,
  `{"files":{\n${sortedFiles
    .map((f) => `${JSON.stringify(f)}:[\n${cumulative.files[f].map((m) => JSON.stringify(m)).join(',\n')}\n]`)
    .join(',\n')}\n},\n"tests":${JSON.stringify(Object.fromEntries([...narrowed].sort()))}}\n`,
);

const equivalent = JSON.parse(readFileSync(EQUIVALENT, 'utf8')).mutants;
const isEquivalent = (file, m) =>
  equivalent.find(
    (e) =>
      e.file === file &&
      e.line === m.location.start.line &&
      (e.column === undefined || e.column === m.location.start.column) &&
      e.replacement === m.replacement &&
      // Two mutants of one place can become the same text; `original` says which one is meant.
      (e.original === undefined || e.original === m.original),
  );

const counts = { killed: 0, timeout: 0, survived: 0, no_coverage: 0, equivalent: 0, errors: 0, ignored: 0 };
const survivors = [];
const equivalents = [];
for (const [file, mutants] of Object.entries(cumulative.files)) {
  for (const m of mutants) {
    const where = {
      file,
      line: m.location.start.line,
      column: m.location.start.column,
      mutator: m.mutatorName,
      original: m.original,
      replacement: m.replacement,
    };
    if (m.status === 'Killed') counts.killed++;
    else if (m.status === 'Timeout') counts.timeout++;
    else if (m.status === 'Ignored') counts.ignored++;
    else if (m.status === 'CompileError' || m.status === 'RuntimeError') counts.errors++;
    else if (isEquivalent(file, m)) {
      counts.equivalent++;
      equivalents.push({ ...where, why: isEquivalent(file, m).why });
    } else {
      counts[m.status === 'NoCoverage' ? 'no_coverage' : 'survived']++;
      survivors.push({ ...where, status: m.status });
    }
  }
}
const killed = counts.killed + counts.timeout;
const score = killed / (killed + counts.survived + counts.no_coverage);
const record = {
  name: 'mutation',
  date: new Date().toISOString(),
  machine: {
    cpus: cpus().length,
    model: cpus()[0]?.model.trim() ?? 'unknown',
    memGiB: Math.round((totalmem() / 2 ** 30) * 10) / 10,
    node: process.version,
    platform: `${process.platform}-${process.arch}`,
  },
  figures: {
    mutation_score_core: score,
    files: Object.keys(cumulative.files).length,
    killed: counts.killed,
    timeout: counts.timeout,
    survived: counts.survived,
    no_coverage: counts.no_coverage,
    equivalent: counts.equivalent,
    errors: counts.errors,
  },
  anchors: {},
  ratios: {},
  scope: Object.keys(cumulative.files).sort(),
  narrowed: Object.fromEntries([...narrowed].sort()),
  survivors,
  equivalents,
};
mkdirSync(dirname(RESULT), { recursive: true });
writeFileSync(RESULT, JSON.stringify(record, null, 2) + '\n');
console.log(
  `mutation: score ${score.toFixed(3)} over ${record.figures.files} files ` +
    `(${killed} killed, ${counts.survived} survived, ${counts.no_coverage} not covered, ${counts.equivalent} equivalent)`,
);
