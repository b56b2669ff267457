/**
 * Code apart from ciphertext (issue 25): the app comes from a static host (`vite preview` of
 * the built app, as any static host would serve it) or from a machine of the mesh (`sov node
 * --serve-app`), and the relay, started with `--no-app`, serves no code at all. Two browsers
 * found and join a mesh across the two origins and sync; a page from an origin the relay's
 * operator did not list can neither call its API nor open its WebSocket.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, test, type Browser, type Page } from '@playwright/test';
import { freePort, pair, profile, RelayProcess } from './relay-process.ts';

/** `vite preview` of dist/ on the loopback at `port`, once it answers. */
function staticHost(port: number): Promise<ChildProcess> {
  return answering(
    port,
    spawn(
      process.execPath,
      ['node_modules/vite/bin/vite.js', 'preview', '--host', '127.0.0.1', '--port', String(port), '--strictPort'],
      { stdio: 'ignore' },
    ),
  );
}

/** A headless machine serving dist/ on the loopback at `port` (`sov node --serve-app`), once it answers. */
function meshMachine(port: number): Promise<ChildProcess> {
  const data = mkdtempSync(join(tmpdir(), 'sov-serve-app-'));
  const args = ['src/cli/sov.mjs', 'node', '--role', 'server', '--data', data, '--serve-app', `127.0.0.1:${port}`];
  return answering(port, spawn(process.execPath, args, { stdio: 'ignore' }));
}

async function answering(port: number, child: ChildProcess): Promise<ChildProcess> {
  await expect
    .poll(async () => (await fetch(`http://127.0.0.1:${port}/`).catch(() => undefined))?.status, { timeout: 30_000 })
    .toBe(200);
  return child;
}

/** What a page at its origin gets from the relay: its health answer readable, its WebSocket open. */
function reach(relay: RelayProcess) {
  return async (page: Page) =>
    page.evaluate(
      async ({ http, ws }) => {
        const api = await fetch(`${http}/api/health`).then(
          (r) => r.status,
          () => 'refused',
        );
        const socket = await new Promise<string>((resolve) => {
          const s = new WebSocket(ws);
          s.onopen = () => {
            s.close();
            resolve('open');
          };
          s.onerror = () => resolve('refused');
        });
        return { api, socket };
      },
      { http: relay.url, ws: relay.wsUrl },
    );
}

/**
 * Two browsers pair across the origins — the founder opens the operator's link, which names the
 * relay; the joiner takes it from the ticket — and a row each writes reaches the other.
 */
async function pairAndSync(browser: Browser, relay: RelayProcess): Promise<[Page, Page]> {
  const [ca, cb] = [await browser.newContext(), await browser.newContext()];
  const [a, b] = [await ca.newPage(), await cb.newPage()];
  await pair(relay, a, b, `/?relay=${encodeURIComponent(relay.wsUrl)}`);
  for (const [writer, reader, name] of [[a, b, 'Pump 7'] as const, [b, a, 'Valve 3'] as const]) {
    await writer.getByTestId('new-profile-name').fill(name);
    await writer.getByTestId('add-profile').click();
    await expect(profile(reader, name)).toBeVisible();
  }
  return [a, b];
}

/** A relay serving no code, listing the app's origin at `appPort`. */
async function bareRelay(appPort: number): Promise<RelayProcess> {
  const app = `http://127.0.0.1:${appPort}`;
  const relay = new RelayProcess(await freePort(), undefined, { args: ['--no-app', '--origin', app], appUrl: app });
  await relay.start();
  return relay;
}

test('the app from a static host works with a relay that serves no code; other origins are refused', async ({
  browser,
}) => {
  const appPort = await freePort();
  const relay = await bareRelay(appPort);
  const host = await staticHost(appPort);
  try {
    // The relay holds no code to serve.
    const none = await fetch(`${relay.url}/`);
    expect(none.status).toBe(404);
    expect(await none.text()).toMatch(/serves no app/);

    const [a] = await pairAndSync(browser, relay);
    expect(await reach(relay)(a)).toEqual({ api: 200, socket: 'open' });

    // The same app from an origin the operator did not list (localhost is another origin than 127.0.0.1).
    const stranger = await (await browser.newContext()).newPage();
    await stranger.goto(`http://localhost:${appPort}/`);
    await expect(stranger.getByTestId('create-mesh')).toBeVisible();
    expect(await reach(relay)(stranger)).toEqual({ api: 'refused', socket: 'refused' });
    // Founding there names the page's own origin, which has no relay; a mistyped address is caught.
    await expect(stranger.getByTestId('relay-url')).toHaveValue(`ws://localhost:${appPort}/ws`);
    await stranger.getByTestId('relay-url').fill('https://relay.example.org');
    await stranger.getByTestId('create-mesh').click();
    await expect(stranger.getByTestId('relay-problem')).toContainText('ws:// or wss://');
  } finally {
    host.kill('SIGTERM');
    await relay.stop();
  }
});

test('the app served by a machine of the mesh works with a relay that serves no code', async ({ browser }) => {
  const appPort = await freePort();
  const relay = await bareRelay(appPort);
  const host = await meshMachine(appPort);
  try {
    await pairAndSync(browser, relay);
  } finally {
    host.kill('SIGTERM');
    await relay.stop();
  }
});
