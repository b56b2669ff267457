/**
 * Benchmark `catchup-browser`: the state plane's catch-up as a browser user meets it —
 * Debian's Chromium, the built app, the real relay (`sov relay`), IndexedDB, the app's
 * own workers. Nothing here reaches past the UI's calls: pages are opened with
 * `?automation` (src/app/automation.ts), which exposes the calls the UI makes.
 *
 *   setup    relay on 127.0.0.1 (temp data dir, the built app from dist/, built first if
 *            missing); two browser contexts are two machines; A founds a mesh, B joins it
 *            through the pairing ceremony (codes compared and confirmed, as a person does).
 *            B's page closes: B is offline.
 *   timed    `local_writes_per_s`: A saves EVENTS profiles through the app's write path
 *            (`saveProfile`, 16 in flight, as a script or a fast typist would), rate over
 *            the first LOCAL_WINDOW. `seconds_100k_events`: B's page opens and catches up
 *            through the relay until its watermark for A reaches A's log; long tasks on
 *            B's main thread during it (PerformanceObserver `longtask`) give
 *            `longest_main_thread_task_ms`. `first_rows_ms`: B reloads; time until the
 *            first profile card is on screen. `peer_edit_visible_ms`: A edits the profile
 *            B shows first; time until B's screen has it (median of PEER_EDITS).
 *   anchor   `idb_bulk_put_seconds`: in B's browser, the same number of records of the
 *            same average size (B's IndexedDB growth during the catch-up ÷ EVENTS) put in
 *            one transaction on a fresh database — what Dexie `bulkPut` issues, without
 *            Dexie's wrapper.
 * Events default to 100,000 (SOV_BENCH_EVENTS overrides, for a quick run); SOV_BENCH_PROFILE=DIR
 * writes CPU profiles of the pages and workers during the catch-up, of A's saves in
 * DIR/local-writes and of the peer edits in DIR/peer-edits (bench/lib/cpu-profile.ts).
 * Progress (B's watermark, and what it has parked or refused) is printed every 10 s
 * (SOV_BENCH_PROGRESS_MS overrides).
 */
import { chromium, type Browser, type BrowserContext, type Page } from '@playwright/test';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Automation } from '../src/app/automation.ts';
import { freePort, spawnRelay } from '../test/helpers/relay-child.ts';
import { CpuProfiles } from './lib/cpu-profile.ts';
import type { BenchResult } from './run.ts';

const EVENTS = Number(process.env['SOV_BENCH_EVENTS'] ?? 100_000);
const LOCAL_WINDOW = Math.min(EVENTS, 10_000);
const IN_FLIGHT = 128;
const PEER_EDITS = 5;
const CHROMIUM = process.env['SOV_CHROMIUM'] ?? '/usr/bin/chromium';
const STEP_MS = 120_000;
const CATCHUP_MS = 60 * 60_000;
/** How often the catch-up's progress (B's watermark) is printed to stderr. */
const PROGRESS_MS = Number(process.env['SOV_BENCH_PROGRESS_MS'] ?? 10_000);
/** Where CPU profiles of B's page and workers during the catch-up go (bench/lib/cpu-profile.ts); none if unset. */
const PROFILE_DIR = process.env['SOV_BENCH_PROFILE'];

declare global {
  var sovAutomation: Automation | undefined;
  var sovLongTasks: number[] | undefined;
}

async function ensureBuilt(): Promise<void> {
  if (existsSync('dist/index.html')) return;
  await exec(process.execPath, ['node_modules/vite/bin/vite.js', 'build']);
}

function exec(cmd: string, args: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: 'inherit' });
    child.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`${cmd} exited ${code}`))));
  });
}

/** Waits until `probe` (run in the page) returns something truthy; throws with `what` after `timeout`. */
async function until<T>(page: Page, what: string, probe: () => T | Promise<T>, timeout = STEP_MS): Promise<void> {
  await page.waitForFunction(probe, undefined, { timeout, polling: 100 }).catch((e: unknown) => {
    throw new Error(`catchup-browser: ${what}: ${(e as Error).message.split('\n')[0]}`);
  });
}

async function openMachine(context: BrowserContext, url: string): Promise<Page> {
  const page = await context.newPage();
  await page.goto(`${url}/?automation`);
  await until(page, 'automation handle', () => globalThis.sovAutomation !== undefined);
  return page;
}

async function pair(a: Page, b: Page, url: string): Promise<void> {
  await a.getByTestId('machine-name').fill('writer');
  await a.getByTestId('create-mesh').click();
  await a.getByTestId('relay-state').filter({ hasText: 'ready' }).waitFor({ timeout: STEP_MS });
  // Inviting is on the Machines view.
  await a.getByTestId('nav-machines').click();
  await a.getByTestId('invite').click();
  const ticketField = a.getByTestId('ticket');
  await until(a, 'ticket', () => document.querySelector<HTMLInputElement>('[data-testid="ticket"]')?.value);
  const ticket = await ticketField.inputValue();
  await b.goto(`${url}/?automation`);
  await b.getByTestId('machine-name').fill('reader');
  await b.getByTestId('ticket-input').fill(ticket);
  await b.getByTestId('join-mesh').click();
  const code = a.getByTestId('pairing-sas');
  await code.filter({ hasText: /^\d{3} \d{3}$/ }).waitFor({ timeout: STEP_MS });
  await b
    .getByTestId('join-sas')
    .filter({ hasText: (await code.textContent()) ?? '' })
    .waitFor({ timeout: STEP_MS });
  await b.getByTestId('join-confirm').click();
  await a.getByTestId('pairing-confirm').click();
  await b.getByTestId('new-profile-name').waitFor({ timeout: STEP_MS });
  await until(a, 'two machines', () => document.querySelectorAll('[data-testid="machine"]').length === 2);
}

/** A's saves, IN_FLIGHT at a time; resolves with the seconds the first `window` took. */
async function writeProfiles(a: Page, count: number, window: number): Promise<number> {
  const CHUNK = 2_000;
  let windowSeconds = 0;
  const started = performance.now();
  for (let from = 0; from < count; from += CHUNK) {
    const to = Math.min(count, from + CHUNK);
    await a.evaluate(
      async ({ from, to, inFlight }) => {
        const automation = globalThis.sovAutomation!;
        let next = from;
        // Functions here are passed inline, never named: tsx would wrap a named one in a helper the page lacks.
        await Promise.all(
          Array.from({ length: inFlight }, async () => {
            while (next < to) {
              const i = next++;
              const saved = await automation.saveProfile(`p${String(i).padStart(6, '0')}`, {
                name: `Pump ${String(i).padStart(6, '0')}`,
                location: `shed ${i % 50}`,
                schedule: 'hourly',
                notes: `installed by the bench, unit ${i}`,
              });
              if (!saved) throw new Error(`save ${i} failed: ${automation.error()}`);
            }
          }),
        );
      },
      { from, to, inFlight: IN_FLIGHT },
    );
    if (to >= window && windowSeconds === 0) windowSeconds = (performance.now() - started) / 1000;
  }
  return windowSeconds;
}

async function logLength(page: Page): Promise<number> {
  return page.evaluate(() => globalThis.sovAutomation!.sync()?.logLength ?? 0);
}

async function storageUsed(page: Page): Promise<number> {
  return page.evaluate(async () => (await navigator.storage.estimate()).usage ?? 0);
}

/** The anchor: `count` records of `bytes` each, put in one transaction on a fresh database. */
async function idbBulkPutSeconds(page: Page, count: number, bytes: number): Promise<number> {
  return page.evaluate(
    async ({ count, bytes }) => {
      const db = await new Promise<IDBDatabase>((resolve, reject) => {
        const open = indexedDB.open(`bench-anchor-${Date.now()}`, 1);
        open.onupgradeneeded = () => open.result.createObjectStore('records', { keyPath: 'id' });
        open.onsuccess = () => resolve(open.result);
        open.onerror = () => reject(new Error(String(open.error)));
      });
      const records = Array.from({ length: count }, (_, i) => ({
        id: i,
        body: crypto.getRandomValues(new Uint8Array(Math.min(bytes, 65_536))),
      }));
      const started = performance.now();
      await new Promise<void>((resolve, reject) => {
        const tx = db.transaction('records', 'readwrite');
        const store = tx.objectStore('records');
        for (const record of records) store.put(record);
        tx.oncomplete = () => resolve();
        tx.onerror = () => reject(new Error(String(tx.error)));
      });
      const seconds = (performance.now() - started) / 1000;
      db.close();
      return seconds;
    },
    { count, bytes },
  );
}

/** Milliseconds from A's save of the profile B shows first until B's screen has the new text. */
async function peerEditVisibleMs(a: Page, b: Page, round: number): Promise<number> {
  const first = b.getByTestId('profile').first();
  await first.waitFor({ timeout: STEP_MS });
  const row = (await first.getAttribute('data-row')) ?? '';
  const text = `edited by A, round ${round}`;
  const seen = b.evaluate(
    ({ row, text }) =>
      new Promise<number>((resolve) => {
        const observer = new MutationObserver(() => {
          const value = document.querySelector(
            `[data-testid="profile"][data-row="${row}"] [data-testid="value-notes"]`,
          );
          if (value?.textContent === text) {
            observer.disconnect();
            resolve(Date.now());
          }
        });
        observer.observe(document.body, { subtree: true, childList: true, characterData: true });
      }),
    { row, text },
  );
  const sent = await a.evaluate(
    async ({ row, text }) => {
      const at = Date.now();
      await globalThis.sovAutomation!.saveProfile(row, { notes: text });
      return at;
    },
    { row, text },
  );
  return (await seen) - sent;
}

const median = (xs: readonly number[]): number => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)] ?? 0;

export async function run(): Promise<BenchResult> {
  await ensureBuilt();
  const dataDir = await mkdtemp(join(tmpdir(), 'sov-bench-catchup-browser-'));
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const relay = await spawnRelay(port, dataDir);
  let browser: Browser | undefined;
  try {
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update'],
    });
    const [contextA, contextB] = [await browser.newContext(), await browser.newContext()];
    await contextB.addInitScript(() => {
      globalThis.sovLongTasks = [];
      new PerformanceObserver((list) => {
        for (const entry of list.getEntries()) globalThis.sovLongTasks!.push(entry.duration);
      }).observe({ type: 'longtask', buffered: true });
    });
    const a = await openMachine(contextA, url);
    let b = await openMachine(contextB, url);
    await pair(a, b, url);
    const usedBefore = await storageUsed(b);
    await b.close();

    const writeProfiles_ = PROFILE_DIR ? await CpuProfiles.start(browser, url) : undefined;
    const windowSeconds = await writeProfiles(a, EVENTS, LOCAL_WINDOW);
    await writeProfiles_?.stop(join(PROFILE_DIR!, 'local-writes'));
    const target = await logLength(a);

    b = await contextB.newPage();
    const started = performance.now();
    await b.goto(`${url}/?automation`);
    if (PROFILE_DIR) await until(b, 'automation handle', () => globalThis.sovAutomation !== undefined);
    const profiles = PROFILE_DIR ? await CpuProfiles.start(browser, url) : undefined;
    const progress = setInterval(() => {
      void b
        .evaluate(() => {
          const sync = globalThis.sovAutomation?.sync();
          const watermark = Math.max(0, ...(sync?.peers ?? []).map((p) => p.watermark));
          return { watermark, mode: sync?.mode, parked: sync?.parked, rejected: sync?.rejected };
        })
        .then(({ watermark, mode, parked, rejected }) => {
          const seconds = ((performance.now() - started) / 1000).toFixed(0);
          const waiting = JSON.stringify({ mode, parked, rejected });
          process.stderr.write(`catchup-browser: ${seconds} s: watermark ${watermark} of ${target} ${waiting}\n`);
        })
        .catch(() => undefined);
    }, PROGRESS_MS);
    await b
      .waitForFunction(
        (goal: number) => (globalThis.sovAutomation?.sync()?.peers ?? []).some((p) => p.watermark >= goal),
        target,
        { timeout: CATCHUP_MS, polling: 250 },
      )
      .catch((e: unknown) => {
        throw new Error(`catchup-browser: B's watermark for A never reached ${target}: ${String(e).split('\n')[0]}`);
      });
    const catchupSeconds = (performance.now() - started) / 1000;
    clearInterval(progress);
    await profiles?.stop(PROFILE_DIR!);
    const longTasks = await b.evaluate(() => globalThis.sovLongTasks ?? []);
    const bytesPerEvent = Math.max(1, (await storageUsed(b)) - usedBefore) / EVENTS;

    const reloaded = performance.now();
    await b.reload();
    await b.getByTestId('profile').first().waitFor({ timeout: STEP_MS });
    const firstRowsMs = performance.now() - reloaded;

    const edits: number[] = [];
    const editProfiles = PROFILE_DIR ? await CpuProfiles.start(browser, url) : undefined;
    for (let round = 0; round < PEER_EDITS; round++) edits.push(await peerEditVisibleMs(a, b, round));
    await editProfiles?.stop(join(PROFILE_DIR!, 'peer-edits'));

    const anchorSeconds = await idbBulkPutSeconds(b, EVENTS, Math.round(bytesPerEvent));
    return {
      figures: {
        events: EVENTS,
        seconds_100k_events: catchupSeconds,
        events_per_s: EVENTS / catchupSeconds,
        longest_main_thread_task_ms: Math.max(0, ...longTasks),
        long_tasks: longTasks.length,
        first_rows_ms: firstRowsMs,
        local_writes_per_s: LOCAL_WINDOW / windowSeconds,
        peer_edit_visible_ms: median(edits),
        bytes_per_event: bytesPerEvent,
      },
      anchors: { idb_bulk_put_seconds: anchorSeconds },
      ratios: { catchup_time_vs_idb_bulk_put: catchupSeconds / anchorSeconds },
    };
  } finally {
    await browser?.close();
    relay.kill('SIGTERM');
    await rm(dataDir, { recursive: true, force: true });
  }
}
