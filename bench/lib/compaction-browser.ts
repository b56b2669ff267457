/**
 * The compaction part of `bench lifecycle` (issue 24), where compaction runs: in a browser
 * that reads the domain — Debian's Chromium, the built app, the real relay, IndexedDB, the
 * app's own Parquet worker — driven through `?automation` (src/app/automation.ts), the calls
 * the Objects view makes.
 *
 *   setup    relay on 127.0.0.1 (its own temporary data dir); one browser founds a mesh and
 *            forms OBJECTS sample objects of ROWS rows each in GENERAL's `readings`, all
 *            published (catalog rows, access records, bytes at the relay).
 *   timed    `compaction_seconds`: "Compact the table's small objects" — every object opened
 *            and decrypted from IndexedDB, its rows merged into one new object, encrypted,
 *            stored — until the page has the result.
 *   anchor   `form_seconds`: forming one sample object of the same OBJECTS × ROWS rows afresh
 *            in the same browser (what writing those rows costs with nothing to read).
 */
import { chromium, type Browser, type Page } from '@playwright/test';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Automation } from '../../src/app/automation.ts';
import { freePort, spawnRelay } from '../../test/helpers/relay-child.ts';

const CHROMIUM = process.env['SOV_CHROMIUM'] ?? '/usr/bin/chromium';
const STEP_MS = 120_000;
const LONG_MS = 60 * 60_000;

declare global {
  var sovAutomation: Automation | undefined;
}

export type CompactionFigures = {
  readonly objects: number;
  readonly rows: number;
  readonly compaction_seconds: number;
  readonly form_seconds: number;
};

async function ensureBuilt(): Promise<void> {
  if (existsSync('dist/index.html')) return;
  await new Promise<void>((resolve, reject) => {
    const child = spawn(process.execPath, ['node_modules/vite/bin/vite.js', 'build'], { stdio: 'inherit' });
    child.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`vite build exited ${code}`))));
  });
}

const pageError = (page: Page): Promise<string> => page.evaluate(() => globalThis.sovAutomation!.error());

export async function measureCompaction(objects: number, rows: number): Promise<CompactionFigures> {
  await ensureBuilt();
  const dir = await mkdtemp(join(tmpdir(), 'sov-bench-compaction-'));
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const relay = await spawnRelay(port, dir);
  let browser: Browser | undefined;
  try {
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update'],
    });
    const page = await (await browser.newContext()).newPage();
    await page.goto(`${url}/?automation`);
    await page.waitForFunction(() => globalThis.sovAutomation !== undefined, undefined, { timeout: STEP_MS });
    await page.getByTestId('machine-name').fill('compactor');
    await page.getByTestId('create-mesh').click();
    await page.getByTestId('relay-state').filter({ hasText: 'ready' }).waitFor({ timeout: STEP_MS });
    for (let i = 0; i < objects; i++) {
      const id = await page.evaluate((n) => globalThis.sovAutomation!.importSample('GENERAL', n, 'readings'), rows);
      if (!id) throw new Error(`bench lifecycle: sample ${i} not formed: ${await pageError(page)}`);
      if (i % 100 === 99) process.stderr.write(`bench lifecycle: ${i + 1} of ${objects} objects formed\n`);
    }
    await page.evaluate(() => globalThis.sovAutomation!.syncObjects());
    await page.waitForFunction(
      (n: number) => (globalThis.sovAutomation?.objectStates()['published'] ?? 0) >= n,
      objects,
      {
        timeout: LONG_MS,
        polling: 500,
      },
    );

    const started = performance.now();
    const said = await page.evaluate(() => globalThis.sovAutomation!.compact('GENERAL', 'readings'));
    const compaction = (performance.now() - started) / 1000;
    if (!said.startsWith(`Compacted ${objects} objects (${objects * rows} rows`)) {
      throw new Error(`bench lifecycle: compaction said "${said}" (${await pageError(page)})`);
    }

    const formStarted = performance.now();
    const anchor = await page.evaluate(
      (n) => globalThis.sovAutomation!.importSample('GENERAL', n, 'anchor'),
      objects * rows,
    );
    const form = (performance.now() - formStarted) / 1000;
    if (!anchor) throw new Error('bench lifecycle: the anchor object was not formed');
    return { objects, rows: objects * rows, compaction_seconds: compaction, form_seconds: form };
  } finally {
    await browser?.close();
    relay.kill('SIGTERM');
    await rm(dir, { recursive: true, force: true });
  }
}
