/**
 * Starts the real relay as a child process (`sov relay`), on a fixed port so
 * the app's origin survives a restart, with its own temporary data directory.
 */
import { test as base, expect, type Page, type TestInfo } from '@playwright/test';
import type { ChildProcess } from 'node:child_process';
import { appendFileSync, existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, spawnRelay } from '../helpers/relay-child.ts';

export { freePort };

/** How a test relay runs: extra `sov relay` options, and where pages open the app (default: the relay serves it). */
export type RelaySetup = { readonly args?: readonly string[]; readonly appUrl?: string };

export class RelayProcess {
  readonly port: number;
  readonly dataDir: string;
  readonly #setup: RelaySetup;
  #child: ChildProcess | undefined;

  constructor(port: number, dataDir = mkdtempSync(join(tmpdir(), 'sov-e2e-')), setup: RelaySetup = {}) {
    this.port = port;
    this.dataDir = dataDir;
    this.#setup = setup;
  }

  /** Every message the relay received or sent (`sov relay --tap`, relay/tap.ts). */
  get tapFile(): string {
    return join(this.dataDir, 'wire.tap');
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  get wsUrl(): string {
    return `ws://127.0.0.1:${this.port}/ws`;
  }

  /** Where pages open the app. */
  get appUrl(): string {
    return this.#setup.appUrl ?? this.url;
  }

  async start(): Promise<void> {
    const extra = ['--tap', this.tapFile, '--heartbeat', String(HEARTBEAT_SECONDS), ...(this.#setup.args ?? [])];
    // The relay's log (ids shortened, no bodies) next to its data, for diagnosing a failed test.
    this.#child = await spawnRelay(this.port, this.dataDir, extra, (d) =>
      appendFileSync(join(this.dataDir, 'relay.log'), d),
    );
  }

  /** Graceful stop (SIGTERM), or a crash with `SIGKILL`: no chance to flush or close anything. */
  async stop(signal: 'SIGTERM' | 'SIGKILL' = 'SIGTERM'): Promise<void> {
    const child = this.#child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    await new Promise<void>((resolve) => {
      child.once('exit', () => resolve());
      child.kill(signal);
    });
    this.#child = undefined;
  }

  /**
   * A failed test's relay log, attached whole and its tail printed: who connected as what,
   * which frames and lists were refused (the log carries short ids and no bodies).
   */
  async report(testInfo: TestInfo): Promise<void> {
    const file = join(this.dataDir, 'relay.log');
    if (!existsSync(file)) return;
    await testInfo.attach('relay.log', { path: file, contentType: 'text/plain' });
    const lines = readFileSync(file, 'utf8').trimEnd().split('\n');
    console.log(`── relay log, last ${Math.min(lines.length, REPORT_LINES)} of ${lines.length} lines:`);
    console.log(lines.slice(-REPORT_LINES).join('\n'));
  }

  async presence(topic: string, endpoint: string): Promise<{ online: boolean; pending: number }> {
    const response = await fetch(`${this.url}/api/presence?topic=${topic}&endpoint=${endpoint}`);
    return (await response.json()) as { online: boolean; pending: number };
  }
}

/** How much of a failed test's relay log is printed (all of it is attached). */
const REPORT_LINES = 80;

/**
 * The test relay pings every HEARTBEAT_SECONDS (production: 30) and cuts a
 * socket that missed one, so it notices a dead socket within two rounds.
 */
const HEARTBEAT_SECONDS = 5;

/**
 * How long to wait for the relay to see a browser that went offline leave.
 * Usually its close frame arrives at once; when offline emulation swallows it,
 * the heartbeat is what notices (at most two rounds) — a real disconnect
 * either way, just slower. The heartbeat is an application-level ping the
 * endpoint's code must answer: offline emulation keeps answering WebSocket
 * protocol pings for a socket whose close it holds back, so a protocol-level
 * heartbeat once kept an "offline" browser present for good (CI, stop 11).
 */
export const RELAY_SEES_DISCONNECT = { timeout: 4 * HEARTBEAT_SECONDS * 1000 + 10_000 };

/** Playwright fixture: a fresh relay process per test, stopped afterwards. */
export const test = base.extend<{ relay: RelayProcess }>({
  // Playwright requires the object-destructuring first parameter even when unused.
  // eslint-disable-next-line no-empty-pattern
  relay: async ({}, use, testInfo) => {
    const relay = new RelayProcess(await freePort());
    await relay.start();
    await use(relay);
    await relay.stop();
    if (testInfo.status !== testInfo.expectedStatus) await relay.report(testInfo);
  },
});
export { expect };

/**
 * Opens one of the app's views through its navigation (sidebar or tab bar), as a user
 * does, and waits until it is the one shown.
 */
export async function view(
  page: Page,
  id: 'profiles' | 'machines' | 'domains' | 'objects' | 'query' | 'privacy' | 'sync',
): Promise<void> {
  await page.getByTestId(`nav-${id}`).click();
  await expect(page.locator(`main[data-view="${id}"]`)).toBeVisible();
}

/** Each of `pages` lists `count` machines in its Machines view, then shows `then`. */
export async function expectMachines(
  pages: readonly Page[],
  count: number,
  then: Parameters<typeof view>[1] = 'profiles',
): Promise<void> {
  for (const page of pages) {
    await view(page, 'machines');
    await expect(page.getByTestId('machine')).toHaveCount(count);
    await view(page, then);
  }
}

/** A device-profile card by its name. */
export const profile = (page: Page, name: string) => page.locator(`[data-testid="profile"][data-name="${name}"]`);

/**
 * The pairing ceremony's human step: both machines show a pairing code; the
 * test, like the humans, checks they are the same 6 digits and confirms on both.
 */
export async function confirmCodes(inviter: Page, joiner: Page): Promise<string> {
  const code = inviter.getByTestId('pairing-sas');
  await expect(code).toHaveText(/^\d{3} \d{3}$/);
  // Read before confirming: once both confirm, the code leaves the page (and a
  // locator read would wait for it until the test times out).
  const shown = (await code.textContent()) ?? '';
  await expect(joiner.getByTestId('join-sas')).toHaveText(shown);
  await joiner.getByTestId('join-confirm').click();
  await inviter.getByTestId('pairing-confirm').click();
  return shown;
}

/** `page` founds a mesh as `name`, connects, and issues a first invitation; returns its ticket text. */
export async function foundMesh(relay: RelayProcess, page: Page, name = 'workstation', path = ''): Promise<string> {
  await page.goto(`${relay.appUrl}${path}`);
  await page.getByTestId('machine-name').fill(name);
  await page.getByTestId('create-mesh').click();
  await expect(page.getByTestId('relay-state')).toHaveText('ready');
  await view(page, 'machines');
  await page.getByTestId('invite').click();
  const ticket = await page.getByTestId('ticket').inputValue();
  expect(ticket).toMatch(/^sov1\./);
  return ticket;
}

/** A founds a mesh as "workstation"; B joins it as "collector" with A's ticket, both confirming the code (pages opened at `path`). */
export async function pair(relay: RelayProcess, a: Page, b: Page, path = ''): Promise<void> {
  const ticket = await foundMesh(relay, a, 'workstation', path);
  await b.goto(`${relay.appUrl}${path}`);
  await b.getByTestId('machine-name').fill('collector');
  await b.getByTestId('ticket-input').fill(ticket);
  await b.getByTestId('join-mesh').click();
  await confirmCodes(a, b);
  await expect(b.getByTestId('new-profile-name')).toBeVisible();
  await expect(b.getByTestId('relay-state')).toHaveText('ready');
  await expect(a.getByTestId('machine')).toHaveCount(2);
  await view(a, 'profiles');
}

/** An admin page `inviter` of a mesh admits a further machine `page` as `name` with a fresh ticket. */
export async function pairAnother(relay: RelayProcess, inviter: Page, page: Page, name: string): Promise<void> {
  await view(inviter, 'machines');
  await inviter.getByTestId('invite').click();
  const ticket = await inviter.getByTestId('ticket').inputValue();
  await page.goto(relay.appUrl);
  await page.getByTestId('machine-name').fill(name);
  await page.getByTestId('ticket-input').fill(ticket);
  await page.getByTestId('join-mesh').click();
  await confirmCodes(inviter, page);
  await expect(page.getByTestId('new-profile-name')).toBeVisible();
  await view(inviter, 'profiles');
}
