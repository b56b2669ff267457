/**
 * Benchmark `lighthouse`: the first screen as a new visitor meets it — Lighthouse 12.2.3
 * (pinned: 13 wants Node 22) against what `npm start` serves: the built app from dist/
 * through `sov relay` on 127.0.0.1, in Debian's Chromium, with Lighthouse's default mobile
 * settings (simulated slow 4G and a 4× slower CPU).
 *
 *   setup    the app built (once, if dist/ is missing); a relay child process on a free port.
 *   timed    RUNS Lighthouse runs of the first screen, each in a fresh headless Chromium
 *            (a cold cache); the run with the median performance score is reported.
 *   figures  the four category scores, FCP, LCP, TBT and CLS of that run, the bytes the
 *            first load transferred, the JavaScript it loaded but did not run, and the main
 *            bundle's size gzipped (the script index.html names).
 *   anchor   `main_bundle_raw_bytes`: the same bundle uncompressed, so the ratio says what
 *            compression saves on the wire.
 * Aims (issue 23): accessibility and best practices ≥ 0.95, performance ≥ 0.9.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { launch } from 'chrome-launcher';
import lighthouse from 'lighthouse';
import { freePort, spawnRelay } from '../test/helpers/relay-child.ts';
import type { BenchResult } from './run.ts';

const RUNS = 3;
const CHROMIUM = process.env['SOV_CHROMIUM'] ?? '/usr/bin/chromium';
const CATEGORIES = ['performance', 'accessibility', 'best-practices', 'seo'] as const;

function exec(cmd: string, args: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: 'inherit' });
    child.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`${cmd} exited ${code}`))));
  });
}

/** The main bundle: the module script dist/index.html loads. */
function mainBundle(): Buffer {
  const html = readFileSync('dist/index.html', 'utf8');
  const src = /<script type="module"[^>]*src="\/([^"]+)"/.exec(html)?.[1];
  if (!src) throw new Error('lighthouse: dist/index.html names no module script');
  return readFileSync(join('dist', src));
}

type Audit = { readonly numericValue?: number; readonly details?: { readonly overallSavingsBytes?: number } };
type Report = {
  readonly categories: Record<string, { readonly score: number | null }>;
  readonly audits: Record<string, Audit | undefined>;
};

const numeric = (report: Report, id: string): number => {
  const value = report.audits[id]?.numericValue;
  if (value === undefined) throw new Error(`lighthouse: the report has no ${id}`);
  return value;
};

async function audit(url: string): Promise<Report> {
  const profile = mkdtempSync(join(tmpdir(), 'sov-lighthouse-'));
  const chrome = await launch({
    chromePath: CHROMIUM,
    userDataDir: profile,
    chromeFlags: ['--headless=new', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-quic'],
  });
  try {
    const result = await lighthouse(url, {
      port: chrome.port,
      output: 'json',
      logLevel: 'error',
      onlyCategories: [...CATEGORIES],
    });
    if (!result) throw new Error('lighthouse: no result');
    const report = result.lhr as unknown as Report;
    return report;
  } finally {
    chrome.kill();
    rmSync(profile, { recursive: true, force: true });
  }
}

export async function run(): Promise<BenchResult> {
  if (!existsSync('dist/index.html')) await exec(process.execPath, ['node_modules/vite/bin/vite.js', 'build']);
  const port = await freePort();
  const data = mkdtempSync(join(tmpdir(), 'sov-bench-lighthouse-'));
  const relay = await spawnRelay(port, data);
  try {
    const reports: Report[] = [];
    for (let i = 0; i < RUNS; i++) reports.push(await audit(`http://127.0.0.1:${port}/`));
    const score = (r: Report, c: string) => r.categories[c]?.score ?? 0;
    reports.sort((a, b) => score(a, 'performance') - score(b, 'performance'));
    const median = reports[Math.floor(RUNS / 2)]!;
    const bundle = mainBundle();
    const gzipped = gzipSync(bundle, { level: 9 }).length;
    return {
      figures: {
        performance: score(median, 'performance'),
        accessibility: score(median, 'accessibility'),
        best_practices: score(median, 'best-practices'),
        seo: score(median, 'seo'),
        performance_min: score(reports[0]!, 'performance'),
        performance_max: score(reports.at(-1)!, 'performance'),
        fcp_ms: numeric(median, 'first-contentful-paint'),
        lcp_ms: numeric(median, 'largest-contentful-paint'),
        tbt_ms: numeric(median, 'total-blocking-time'),
        cls: numeric(median, 'cumulative-layout-shift'),
        transferred_bytes: numeric(median, 'total-byte-weight'),
        unused_js_bytes: median.audits['unused-javascript']?.details?.overallSavingsBytes ?? 0,
        main_bundle_gzip_bytes: gzipped,
        runs: RUNS,
      },
      anchors: { main_bundle_raw_bytes: bundle.length },
      ratios: { main_bundle_gzip_vs_raw: gzipped / bundle.length },
    };
  } finally {
    relay.kill();
    rmSync(data, { recursive: true, force: true });
  }
}
