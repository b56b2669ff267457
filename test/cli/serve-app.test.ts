/**
 * `sov node --serve-app`: a machine of the mesh serves the built app (issue 25), only the app,
 * with the relay's security headers; over HTTPS with a certificate, and never as plain HTTP on
 * an address other than the loopback.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { selfSignedCert } from '../helpers/tls-cert.ts';
import { afterAll, describe, expect, it } from 'vitest';
import { parseListen } from '../../src/cli/app-server.js';
import { freePort } from '../helpers/relay-child.ts';

const dir = mkdtempSync(join(tmpdir(), 'sov-serve-app-'));
const app = join(dir, 'dist');
mkdirSync(join(app, 'assets'), { recursive: true });
writeFileSync(join(app, 'index.html'), '<!doctype html><title>mesh app</title>');
writeFileSync(join(app, 'assets', 'app-1.js'), 'console.log(1)');
const children: ChildProcess[] = [];
afterAll(() => {
  for (const c of children) c.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

let machines = 0;
/** `sov node`'s arguments for a machine of its own (a data directory each). */
const node = (...args: string[]) => [
  'src/cli/sov.mjs',
  'node',
  '--role',
  'server',
  '--data',
  join(dir, `m${++machines}`),
  ...args,
];

/** Starts `sov node … --serve-app` and resolves with the URL it prints. */
function serving(args: string[]): Promise<string> {
  const child = spawn(process.execPath, node(...args), { stdio: ['pipe', 'pipe', 'inherit'] });
  children.push(child);
  return new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`no URL printed:\n${out}`)), 30_000);
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      const url = /serving the app at (\S+)/.exec(out)?.[1];
      if (url) {
        clearTimeout(timer);
        resolve(url);
      }
    });
  });
}

describe('sov node --serve-app', () => {
  it('serves the app and nothing of a relay, with the security headers, on the loopback', async () => {
    const port = await freePort();
    const url = await serving(['--serve-app', `127.0.0.1:${port}`, '--static', app]);
    expect(url).toBe(`http://127.0.0.1:${port}/`);
    const index = await fetch(url);
    expect(index.status).toBe(200);
    expect(await index.text()).toContain('<title>mesh app</title>');
    expect(index.headers.get('content-security-policy')).toContain("default-src 'self'");
    expect(await (await fetch(`${url}assets/app-1.js`)).text()).toBe('console.log(1)');
    for (const path of ['ws', 'api/health', 'api/v1/mailbox/fetch']) {
      const answer = await fetch(`${url}${path}`);
      expect(answer.status, path).toBe(404);
      expect(await answer.text()).toMatch(/serves the app only/);
    }
    expect((await fetch(url, { method: 'POST' })).status).toBe(405);
  });

  it('serves HTTPS with a certificate on any address', async () => {
    selfSignedCert(dir);
    const port = await freePort();
    const tls = ['--tls-cert', join(dir, 'cert.pem'), '--tls-key', join(dir, 'key.pem')];
    const url = await serving(['--serve-app', `127.0.0.1:${port}`, '--static', app, ...tls]);
    expect(url).toBe(`https://127.0.0.1:${port}/`);
    const body = await new Promise<string>((resolve, reject) => {
      request(url, { ca: readFileSync(join(dir, 'cert.pem')) }, (res) => {
        let text = '';
        res.on('data', (d: Buffer) => (text += d.toString()));
        res.on('end', () => resolve(text));
      })
        .on('error', reject)
        .end();
    });
    expect(body).toContain('<title>mesh app</title>');
  });

  it('refuses plain HTTP beyond the loopback, and malformed addresses', () => {
    const refused = (...args: string[]) => spawnSync(process.execPath, node(...args), { encoding: 'utf8' });
    const lan = refused('--serve-app', '0.0.0.0:8443');
    expect(lan.status).toBe(2);
    expect(lan.stderr).toMatch(/needs --tls-cert and --tls-key/);
    expect(refused('--serve-app', 'somewhere').stderr).toMatch(/is not ADDR:PORT/);
    expect(refused('--static', app).stderr).toMatch(/go with --serve-app/);
    expect(parseListen('[::1]:8080')).toEqual({ host: '::1', port: 8080 });
    expect(parseListen('127.0.0.1:1')).toEqual({ host: '127.0.0.1', port: 1 });
    expect(() => parseListen('127.0.0.1:70000')).toThrow(/ADDR:PORT/);
    // Three processes started one after another: on a loaded machine each took several seconds.
  }, 60_000);
});
