/**
 * Which web pages may use the relay (relay/origins.ts, issue 25): requests without an Origin
 * (headless nodes, scripts) and the page the relay served itself, always; the origins its
 * operator lists, with the CORS answers a browser needs; any other page refused with 403, on
 * the API and the WebSocket alike. And `--no-app`: a relay that serves no code at all.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { parseOrigin } from '../../src/relay/origins.js';
import { startRelay, type RelayHandle } from '../../src/relay/server.js';

const APP = 'https://app.example.org';
let dir: string;
let relay: RelayHandle;
let bare: RelayHandle;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'sov-origins-'));
  const app = join(dir, 'dist');
  mkdirSync(app);
  writeFileSync(join(app, 'index.html'), '<!doctype html><title>app</title>');
  const common = { admission: 'open', port: 0, log: () => undefined, staticDir: app } as const;
  relay = await startRelay({ ...common, dataDir: join(dir, 'a'), origins: [APP] });
  bare = await startRelay({ ...common, dataDir: join(dir, 'b'), noApp: true });
});

afterAll(async () => {
  await relay.close();
  await bare.close();
  rmSync(dir, { recursive: true, force: true });
});

type Answer = { status: number; headers: Record<string, string | string[] | undefined>; body: string };

/** One HTTP request with exactly these headers (fetch would add or refuse some). */
function send(base: string, method: string, path: string, headers: Record<string, string> = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(`${base}${path}`, { method, headers }, (res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

/** Whether a WebSocket upgrade with this Origin (none when undefined) opens; else the refusal's status. */
function upgrade(wsUrl: string, origin?: string): Promise<'open' | number> {
  return new Promise((resolve) => {
    const ws = new WebSocket(wsUrl, origin === undefined ? {} : { headers: { Origin: origin } });
    ws.on('open', () => {
      ws.close();
      resolve('open');
    });
    ws.on('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0));
    ws.on('error', () => undefined);
  });
}

describe('origins', () => {
  it('answers requests without an Origin and the page it served itself', async () => {
    expect((await send(relay.url, 'GET', '/api/health')).status).toBe(200);
    const own = new URL(relay.url).origin;
    const same = await send(relay.url, 'GET', '/api/health', { Origin: own });
    expect(same.status).toBe(200);
    expect(same.headers['access-control-allow-origin']).toBeUndefined();
    expect(await upgrade(relay.wsUrl)).toBe('open');
    expect(await upgrade(relay.wsUrl, own)).toBe('open');
  });

  it('gives a listed origin the CORS answers for the signed API, and its WebSocket', async () => {
    const preflight = await send(relay.url, 'OPTIONS', '/api/v1/mailbox/fetch', {
      Origin: APP,
      'Access-Control-Request-Method': 'POST',
      'Access-Control-Request-Headers': 'content-type,sov-auth',
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers).toMatchObject({
      'access-control-allow-origin': APP,
      'access-control-allow-methods': 'GET, POST',
      'access-control-allow-headers': 'content-type, sov-auth',
      vary: 'Origin',
    });
    // The route itself answers (here: a request without a body, refused by the API, readable by the page).
    const call = await send(relay.url, 'POST', '/api/v1/mailbox/fetch', { Origin: APP });
    expect(call.status).toBe(415);
    expect(call.headers['access-control-allow-origin']).toBe(APP);
    expect(await upgrade(relay.wsUrl, APP)).toBe('open');
  });

  it('refuses pages from any other origin, on the API, its preflight, the app and the WebSocket', async () => {
    for (const origin of [
      'https://elsewhere.example',
      'null',
      'http://app.example.org',
      'https://app.example.org:8443',
    ]) {
      for (const [method, path] of [
        ['GET', '/api/health'],
        ['OPTIONS', '/api/v1/objects/put'],
        ['POST', '/api/v1/objects/put'],
      ] as const) {
        const answer = await send(relay.url, method, path, { Origin: origin });
        expect(answer.status, `${origin} ${method} ${path}`).toBe(403);
        expect(answer.body).toMatch(/may not use this relay/);
        expect(answer.headers['access-control-allow-origin']).toBeUndefined();
      }
      expect(await upgrade(relay.wsUrl, origin), origin).toBe(403);
    }
    // A client that writes its own Host header is no browser page: it gets what any signed client gets.
    const spoofed = await send(relay.url, 'GET', '/api/health', {
      Origin: 'http://evil.example',
      Host: 'evil.example',
    });
    expect(spoofed.status).toBe(200); // a non-browser can say anything: it proves its key like everyone
  });

  it('serves no code with --no-app, and still the API and the WebSocket', async () => {
    for (const path of ['/', '/index.html', '/assets/index.js', '/sw.js']) {
      const answer = await send(bare.url, 'GET', path);
      expect(answer.status, path).toBe(404);
      expect(answer.body).toMatch(/serves no app/);
    }
    expect((await send(relay.url, 'GET', '/')).body).toMatch(/<title>app<\/title>/);
    expect((await send(bare.url, 'GET', '/api/health')).status).toBe(200);
    expect(await upgrade(bare.wsUrl)).toBe('open');
  });

  it('takes origins as browsers write them and refuses anything else', () => {
    expect(parseOrigin('https://App.Example.org')).toBe('https://app.example.org');
    expect(parseOrigin('https://app.example.org:443/')).toBe('https://app.example.org');
    expect(parseOrigin('http://127.0.0.1:5173')).toBe('http://127.0.0.1:5173');
    for (const bad of ['app.example.org', 'ftp://x.example', 'https://x.example/app', 'https://u:p@x.example', '*']) {
      expect(() => parseOrigin(bad), bad).toThrow(/origin/);
    }
  });

  it('sov relay refuses a malformed --origin and --no-app with --static', () => {
    const run = (...args: string[]) =>
      spawnSync(process.execPath, ['src/cli/sov.mjs', 'relay', '--port', '0', '--data', join(dir, 'cli'), ...args], {
        encoding: 'utf8',
        timeout: 30_000,
      });
    const badOrigin = run('--origin', 'https://x.example/app');
    expect(badOrigin.status).toBe(2);
    expect(badOrigin.stderr).toMatch(/--origin 'https:\/\/x\.example\/app' is not an origin/);
    const both = run('--no-app', '--static', 'dist');
    expect(both.status).toBe(2);
    expect(both.stderr).toMatch(/--no-app serves no app/);
  });
});
