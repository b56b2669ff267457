/**
 * The relay end to end: a real server on 127.0.0.1:0, real `ws` clients speaking
 * sov-relay/1, a temporary data dir. Waits on events, never on wall-clock sleeps: state only
 * the relay knows (presence, a mailbox's count) is polled over HTTP until it holds, and the
 * heartbeat's rounds are driven one by one through a fake `setInterval`.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { get as httpGet } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { ed25519 } from '@noble/curves/ed25519.js';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { bytesEqual, toHex } from '../../src/core/bytes.js';
import { MAX_FRAME_BODY, MAX_RELAY_MESSAGE, relayAuthPayload } from '../../src/core/relay-wire.js';
import { startRelay, type RelayHandle, type RelayOptions } from '../../src/relay/server.js';
import { chooseEncoding } from '../../src/relay/static.js';
import { bytes, key, RelayTestClient as Client, text, type Key } from '../helpers/relay-client.js';

const ALICE = key(1);
const BOB = key(2);
const CAROL = key(3);
const TOPIC = new Uint8Array(32).fill(0xa1);
const OTHER_TOPIC = new Uint8Array(32).fill(0xb2);

async function joinAs(relay: RelayHandle, who: Key, topic = TOPIC, signer = who): Promise<Client> {
  const client = await Client.open(relay.wsUrl);
  const challenge = await client.expect('challenge');
  const sig = ed25519.sign(relayAuthPayload(challenge.nonce, topic, who.id), signer.secret);
  client.send({ t: 'auth', topic, endpoint: who.id, sig, cnonce: new Uint8Array(32) });
  const ready = await client.expect('ready');
  expect(bytesEqual(ready.endpoint, who.id)).toBe(true);
  return client;
}

async function getJson(url: string): Promise<unknown> {
  const res = await fetch(url);
  return res.json();
}

async function presence(relay: RelayHandle, who: Key, topic = TOPIC): Promise<{ online: boolean; pending: number }> {
  return (await getJson(`${relay.url}/api/presence?topic=${toHex(topic)}&endpoint=${toHex(who.id)}`)) as {
    online: boolean;
    pending: number;
  };
}

/** Pause between two probes of `until`: a poll interval, never what a test waits for. */
const POLL_MS = 5;

/** Polls `check` until it holds; the deadline is a generous limit for a loaded machine, not a measure. */
async function until(check: () => Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('until: timed out');
    await delay(POLL_MS);
  }
}

/**
 * Resolves once the relay has handled everything `client` sent before: it handles one session's
 * messages in order, so a frame to itself coming back proves the earlier ones were taken.
 */
async function handled(client: Client, self: Key): Promise<void> {
  client.sendTo(self, bytes('barrier'));
  await client.expect('frame');
}

describe('relay server', () => {
  let dir: string;
  let logs: string[];
  const relays: RelayHandle[] = [];
  const clients: Client[] = [];

  const start = async (options: Partial<RelayOptions> = {}): Promise<RelayHandle> => {
    const relay = await startRelay({
      port: 0,
      dataDir: join(dir, 'data'),
      log: (l) => logs.push(l),
      admission: 'open',
      ...options,
    });
    relays.push(relay);
    return relay;
  };
  const track = async (client: Promise<Client>): Promise<Client> => {
    const c = await client;
    clients.push(c);
    return c;
  };

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'sov-relay-'));
    logs = [];
  });
  afterEach(async () => {
    for (const c of clients.splice(0)) c.ws.terminate();
    await Promise.all(relays.splice(0).map((r) => r.close()));
    rmSync(dir, { recursive: true, force: true });
  });

  describe('authentication', () => {
    it('accepts a valid signature, reports the session and logs a short id', async () => {
      const relay = await start();
      await track(joinAs(relay, ALICE));
      expect(relay.sessionCount()).toBe(1);
      expect(await getJson(`${relay.url}/api/health`)).toMatchObject({
        ok: true,
        protocol: 'sov-relay/1',
        sessions: 1,
      });
      const short = toHex(ALICE.id).slice(0, 8);
      expect(logs.some((l) => l.includes(`auth endpoint=${short}`))).toBe(true);
      expect(logs.some((l) => l.includes(toHex(ALICE.id)))).toBe(false);
    });

    it('rejects a signature by another key with auth-failed and closes', async () => {
      const relay = await start();
      const client = await track(Client.open(relay.wsUrl));
      const challenge = await client.expect('challenge');
      const sig = ed25519.sign(relayAuthPayload(challenge.nonce, TOPIC, ALICE.id), BOB.secret);
      client.send({ t: 'auth', topic: TOPIC, endpoint: ALICE.id, sig, cnonce: new Uint8Array(32) });
      await client.expectError('auth-failed');
      expect(await client.closed).toBe(1008);
      expect(relay.sessionCount()).toBe(0);
    });

    it('rejects a signature over another nonce', async () => {
      const relay = await start();
      const client = await track(Client.open(relay.wsUrl));
      await client.expect('challenge');
      const sig = ed25519.sign(relayAuthPayload(new Uint8Array(32), TOPIC, ALICE.id), ALICE.secret);
      client.send({ t: 'auth', topic: TOPIC, endpoint: ALICE.id, sig, cnonce: new Uint8Array(32) });
      await client.expectError('auth-failed');
      expect(await client.closed).toBe(1008);
    });

    it('rejects any message before auth with not-authenticated and closes', async () => {
      const relay = await start();
      const client = await track(Client.open(relay.wsUrl));
      await client.expect('challenge');
      client.sendTo(BOB, bytes('too early'));
      await client.expectError('not-authenticated');
      expect(await client.closed).toBe(1008);
    });

    it('closes a connection that does not authenticate in time', async () => {
      const relay = await start({ authTimeoutMs: 30 });
      const client = await track(Client.open(relay.wsUrl));
      await client.expect('challenge');
      await client.expectError('not-authenticated');
      expect(await client.closed).toBe(1008);
    });

    it('replaces an older session for the same topic and endpoint', async () => {
      const relay = await start();
      const first = await track(joinAs(relay, ALICE));
      const second = await track(joinAs(relay, ALICE));
      expect(await first.closed).toBe(4000);
      expect(relay.sessionCount()).toBe(1);
      const bob = await track(joinAs(relay, BOB));
      bob.sendTo(ALICE, bytes('to the new one'));
      expect(text((await second.expect('frame')).body)).toBe('to the new one');
    });
  });

  describe('malformed input', () => {
    it('answers non-CBOR bytes with malformed and closes', async () => {
      const relay = await start();
      const client = await track(Client.open(relay.wsUrl));
      await client.expect('challenge');
      client.ws.send(new Uint8Array([0xff, 0x00, 0x13]));
      await client.expectError('malformed');
      expect(await client.closed).toBe(1008);
    });

    it('answers a text message with malformed and closes, even after auth', async () => {
      const relay = await start();
      const client = await track(joinAs(relay, ALICE));
      client.ws.send('hello');
      await client.expectError('malformed');
      expect(await client.closed).toBe(1008);
    });

    it('closes with 1009 when a message exceeds MAX_RELAY_MESSAGE', async () => {
      const relay = await start();
      const client = await track(joinAs(relay, ALICE));
      client.ws.send(new Uint8Array(MAX_RELAY_MESSAGE + 1));
      expect(await client.closed).toBe(1009);
    });
  });

  describe('store and forward', () => {
    it('delivers a frame live to an online recipient', async () => {
      const relay = await start();
      const alice = await track(joinAs(relay, ALICE));
      const bob = await track(joinAs(relay, BOB));
      alice.sendTo(BOB, bytes('hi bob'));
      const frame = await bob.expect('frame');
      expect(text(frame.body)).toBe('hi bob');
      expect(bytesEqual(frame.from, ALICE.id)).toBe(true);
      expect(logs.some((l) => l.includes('hi bob'))).toBe(false);
    });

    it('stores a burst of sends together and forwards them live, in the order they were sent', async () => {
      const relay = await start();
      const alice = await track(joinAs(relay, ALICE));
      const bob = await track(joinAs(relay, BOB));
      const sent = Array.from({ length: 40 }, (_, i) => `burst ${i}`);
      for (const t of sent) alice.sendTo(BOB, bytes(t));
      const got: string[] = [];
      const ids: number[] = [];
      while (got.length < sent.length) {
        const frame = await bob.expect('frame');
        got.push(text(frame.body));
        ids.push(frame.id);
      }
      expect(got).toEqual(sent);
      expect(ids).toEqual([...ids].sort((a, b) => a - b));
      expect((await presence(relay, BOB)).pending).toBe(40);
    });

    it('stores a frame for an offline recipient and delivers it after ready', async () => {
      const relay = await start();
      await (await joinAs(relay, BOB)).close();
      const alice = await track(joinAs(relay, ALICE));
      alice.sendTo(BOB, bytes('while you were out'));
      await until(async () => (await presence(relay, BOB)).pending === 1);
      const bob = await track(joinAs(relay, BOB));
      expect(text((await bob.expect('frame')).body)).toBe('while you were out');
    });

    it('redelivers un-acked frames on reconnect and forgets acked ones', async () => {
      const relay = await start();
      const alice = await track(joinAs(relay, ALICE));
      const bob1 = await track(joinAs(relay, BOB));
      alice.sendTo(BOB, bytes('one'));
      alice.sendTo(BOB, bytes('two'));
      const one = await bob1.expect('frame');
      const two = await bob1.expect('frame');
      expect(one.id).toBeLessThan(two.id);
      await bob1.close();

      const bob2 = await track(joinAs(relay, BOB));
      const again = [await bob2.expect('frame'), await bob2.expect('frame')];
      expect(again.map((f) => [f.id, text(f.body)])).toEqual([
        [one.id, 'one'],
        [two.id, 'two'],
      ]);
      bob2.send({ t: 'ack', ids: [one.id, two.id] });
      await until(async () => (await presence(relay, BOB)).pending === 0);
      await bob2.close();

      const bob3 = await track(joinAs(relay, BOB));
      alice.sendTo(BOB, bytes('three'));
      expect(text((await bob3.expect('frame')).body)).toBe('three');
    });

    it('pages a large backlog in order and merges live frames without gaps or duplicates', async () => {
      const relay = await start();
      await (await joinAs(relay, BOB)).close();
      const alice = await track(joinAs(relay, ALICE));
      for (let i = 0; i < 150; i++) alice.sendTo(BOB, bytes(`old ${i}`));
      await until(async () => (await presence(relay, BOB)).pending === 150);
      const bob = await track(joinAs(relay, BOB));
      for (let i = 0; i < 10; i++) alice.sendTo(BOB, bytes(`new ${i}`));
      const got: string[] = [];
      let last = 0;
      for (let i = 0; i < 160; i++) {
        const frame = await bob.expect('frame');
        expect(frame.id).toBeGreaterThan(last);
        last = frame.id;
        got.push(text(frame.body));
      }
      const want = [
        ...Array.from({ length: 150 }, (_, i) => `old ${i}`),
        ...Array.from({ length: 10 }, (_, i) => `new ${i}`),
      ];
      expect(got).toEqual(want);
    });

    it('loses no stored frame across a relay restart on the same data dir', async () => {
      const first = await start();
      await (await joinAs(first, BOB)).close();
      const alice = await track(joinAs(first, ALICE));
      for (const t of ['a', 'b', 'c']) alice.sendTo(BOB, bytes(t));
      await until(async () => (await presence(first, BOB)).pending === 3);
      await first.close();

      const second = await start();
      const bob = await track(joinAs(second, BOB));
      const got = [await bob.expect('frame'), await bob.expect('frame'), await bob.expect('frame')];
      expect(got.map((f) => text(f.body))).toEqual(['a', 'b', 'c']);
    });

    it('never routes across topics, even for the same endpoint id', async () => {
      const relay = await start();
      const bobInT1 = await track(joinAs(relay, BOB, TOPIC));
      const bobInT2 = await track(joinAs(relay, BOB, OTHER_TOPIC));
      const aliceInT1 = await track(joinAs(relay, ALICE, TOPIC));
      const aliceInT2 = await track(joinAs(relay, ALICE, OTHER_TOPIC));
      aliceInT1.sendTo(BOB, bytes('for T1'));
      expect(text((await bobInT1.expect('frame')).body)).toBe('for T1');
      aliceInT2.sendTo(BOB, bytes('for T2'));
      expect(text((await bobInT2.expect('frame')).body)).toBe('for T2');
      expect(await presence(relay, BOB, TOPIC)).toEqual({ online: true, pending: 1 });
      expect(await presence(relay, BOB, OTHER_TOPIC)).toEqual({ online: true, pending: 1 });
    });

    it('refuses a body over MAX_FRAME_BODY without closing the connection', async () => {
      const relay = await start();
      const alice = await track(joinAs(relay, ALICE));
      const bob = await track(joinAs(relay, BOB));
      alice.sendTo(BOB, new Uint8Array(MAX_FRAME_BODY + 1));
      await alice.expectError('frame-too-large');
      alice.sendTo(BOB, new Uint8Array(MAX_FRAME_BODY));
      expect((await bob.expect('frame')).body.length).toBe(MAX_FRAME_BODY);
    });

    it('refuses a recipient that never joined the topic', async () => {
      const relay = await start();
      const alice = await track(joinAs(relay, ALICE));
      alice.sendTo(CAROL, bytes('who?'));
      await alice.expectError('unknown-recipient');
      expect((await presence(relay, CAROL)).pending).toBe(0);
    });

    it('answers mailbox-full at the per-recipient bound', async () => {
      const relay = await start({ mailboxLimits: { maxFrames: 2, maxBytes: 1 << 20 } });
      await (await joinAs(relay, BOB)).close();
      const alice = await track(joinAs(relay, ALICE));
      for (const t of ['1', '2', '3']) alice.sendTo(BOB, bytes(t));
      await alice.expectError('mailbox-full');
      expect((await presence(relay, BOB)).pending).toBe(2);
    });
  });

  describe('rate limiting', () => {
    it('drops messages over the limit, then closes on sustained abuse', async () => {
      const relay = await start({ now: () => 1000, rateLimit: { perSecond: 1, burst: 3, closeAfterDrops: 2 } });
      const alice = await track(joinAs(relay, ALICE));
      for (let i = 0; i < 3; i++) alice.send({ t: 'ack', ids: [] });
      alice.send({ t: 'ack', ids: [] });
      await alice.expectError('rate-limited');
      expect(alice.closeCode).toBeUndefined();
      alice.send({ t: 'ack', ids: [] });
      await alice.expectError('rate-limited');
      alice.send({ t: 'ack', ids: [] });
      await alice.expectError('rate-limited');
      expect(await alice.closed).toBe(1008);
    });

    it('refills with time', async () => {
      let now = 0;
      const relay = await start({ now: () => now, rateLimit: { perSecond: 1, burst: 1, closeAfterDrops: 10 } });
      const alice = await track(joinAs(relay, ALICE));
      const bob = await track(joinAs(relay, BOB));
      alice.sendTo(BOB, bytes('first'));
      expect(text((await bob.expect('frame')).body)).toBe('first');
      alice.sendTo(BOB, bytes('dropped'));
      await alice.expectError('rate-limited');
      now += 1000;
      alice.sendTo(BOB, bytes('after refill'));
      expect(text((await bob.expect('frame')).body)).toBe('after refill');
    });
  });

  describe('http', () => {
    it('presence reflects a disconnect', async () => {
      const relay = await start();
      const bob = await track(joinAs(relay, BOB));
      expect(await presence(relay, BOB)).toEqual({ online: true, pending: 0 });
      await bob.close();
      await until(async () => !(await presence(relay, BOB)).online);
      expect(relay.sessionCount()).toBe(0);
      expect(logs.some((l) => l.includes(`disconnect endpoint=${toHex(BOB.id).slice(0, 8)}`))).toBe(true);
    });

    it('validates presence parameters and 404s unknown api paths', async () => {
      const relay = await start();
      expect((await fetch(`${relay.url}/api/presence?topic=zz&endpoint=00`)).status).toBe(400);
      expect((await fetch(`${relay.url}/api/nope`)).status).toBe(404);
      expect((await fetch(`${relay.url}/api/health`, { method: 'POST' })).status).toBe(405);
    });

    it('explains a missing static dir with a 404', async () => {
      const relay = await start({ staticDir: join(dir, 'no-such-dist') });
      const res = await fetch(`${relay.url}/`);
      expect(res.status).toBe(404);
      expect(await res.text()).toMatch(/npm run build/);
    });
  });

  describe('static files', () => {
    let relay: RelayHandle;
    beforeEach(async () => {
      const dist = join(dir, 'dist');
      mkdirSync(join(dist, 'assets'), { recursive: true });
      writeFileSync(join(dist, 'index.html'), '<!doctype html><title>sov</title>');
      writeFileSync(join(dist, 'sw.js'), 'self.addEventListener("fetch", () => {});');
      writeFileSync(join(dist, 'manifest.webmanifest'), '{"name":"sov"}');
      writeFileSync(join(dist, 'assets', 'app-1234.js'), 'export {};');
      writeFileSync(join(dist, 'assets', 'mesh.wasm'), new Uint8Array([0, 97, 115, 109]));
      writeFileSync(join(dir, 'secret.txt'), 'TOP SECRET');
      symlinkSync(join(dir, 'secret.txt'), join(dist, 'leak.txt'));
      relay = await start({ staticDir: dist });
    });

    const rawGet = (path: string): Promise<{ status: number; body: string }> =>
      new Promise((resolve, reject) => {
        httpGet({ host: '127.0.0.1', port: relay.port, path }, (res) => {
          let body = '';
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => (body += chunk));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
        }).on('error', reject);
      });

    it('serves index.html with no-cache and the security headers', async () => {
      const res = await fetch(`${relay.url}/`);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
      expect(res.headers.get('cache-control')).toBe('no-cache');
      expect(res.headers.get('x-content-type-options')).toBe('nosniff');
      expect(res.headers.get('referrer-policy')).toBe('no-referrer');
      const csp = res.headers.get('content-security-policy') ?? '';
      expect(csp).toContain("script-src 'self' 'wasm-unsafe-eval'");
      expect(csp).toContain("connect-src 'self' ws: wss:");
      expect(await res.text()).toContain('<title>sov</title>');
    });

    it('uses the right MIME types and cache policies', async () => {
      const cases: Array<[string, string, string]> = [
        ['/sw.js', 'text/javascript; charset=utf-8', 'no-cache'],
        ['/manifest.webmanifest', 'application/manifest+json; charset=utf-8', 'no-cache'],
        ['/assets/app-1234.js', 'text/javascript; charset=utf-8', 'public, max-age=31536000, immutable'],
        ['/assets/mesh.wasm', 'application/wasm', 'public, max-age=31536000, immutable'],
      ];
      for (const [path, type, cache] of cases) {
        const res = await fetch(`${relay.url}${path}`);
        expect([path, res.status, res.headers.get('content-type'), res.headers.get('cache-control')]).toEqual([
          path,
          200,
          type,
          cache,
        ]);
        await res.arrayBuffer();
      }
    });

    it('answers a matching ETag with 304', async () => {
      const first = await fetch(`${relay.url}/sw.js`);
      await first.text();
      const etag = first.headers.get('etag') ?? '';
      const again = await fetch(`${relay.url}/sw.js`, { headers: { 'If-None-Match': etag } });
      expect(again.status).toBe(304);
    });

    /** A raw request with the given Accept-Encoding: the body as sent, not decoded. */
    const encodedGet = (
      path: string,
      accept: string | undefined,
      headers: Record<string, string> = {},
    ): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: Buffer }> =>
      new Promise((resolve, reject) => {
        const sent = { ...(accept === undefined ? {} : { 'Accept-Encoding': accept }), ...headers };
        httpGet({ host: '127.0.0.1', port: relay.port, path, headers: sent }, (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (chunk: Buffer) => chunks.push(chunk));
          res.on('end', () =>
            resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }),
          );
        }).on('error', reject);
      });

    it('compresses text and WebAssembly as Brotli or gzip, whichever the client accepts, each with its own ETag', async () => {
      const js = readFileSync(join(dir, 'dist', 'assets', 'app-1234.js'));
      const br = await encodedGet('/assets/app-1234.js', 'gzip, deflate, br');
      expect([br.status, br.headers['content-encoding'], br.headers['vary']]).toEqual([200, 'br', 'Accept-Encoding']);
      expect(brotliDecompressSync(br.body)).toEqual(js);
      expect(Number(br.headers['content-length'])).toBe(br.body.length);
      const gz = await encodedGet('/assets/app-1234.js', 'gzip');
      expect(gz.headers['content-encoding']).toBe('gzip');
      expect(gunzipSync(gz.body)).toEqual(js);
      const plain = await encodedGet('/assets/app-1234.js', undefined);
      expect([plain.headers['content-encoding'], plain.body]).toEqual([undefined, js]);
      expect(new Set([br.headers['etag'], gz.headers['etag'], plain.headers['etag']]).size).toBe(3);
      // A validator names one representation: the Brotli ETag revalidates the Brotli body only.
      const etag = String(br.headers['etag']);
      expect((await encodedGet('/assets/app-1234.js', 'br', { 'If-None-Match': etag })).status).toBe(304);
      expect((await encodedGet('/assets/app-1234.js', 'gzip', { 'If-None-Match': etag })).status).toBe(200);
      const wasm = await encodedGet('/assets/mesh.wasm', 'br');
      expect(brotliDecompressSync(wasm.body)).toEqual(readFileSync(join(dir, 'dist', 'assets', 'mesh.wasm')));
      const index = await encodedGet('/settings', 'br');
      expect(brotliDecompressSync(index.body).toString()).toContain('<title>sov</title>');
    });

    it('weighs the encodings a client names, and sends a refused one never', () => {
      expect(chooseEncoding('gzip, deflate, br, zstd')).toBe('br');
      expect(chooseEncoding('br;q=0.5, gzip')).toBe('gzip');
      expect(chooseEncoding('br;q=0, gzip;q=0.1')).toBe('gzip');
      expect(chooseEncoding('br;q=0, gzip;q=0')).toBeUndefined();
      expect(chooseEncoding('identity')).toBeUndefined();
      expect(chooseEncoding('*')).toBe('br');
      expect(chooseEncoding('*, br;q=0')).toBe('gzip');
      expect(chooseEncoding('GZIP')).toBe('gzip');
      expect(chooseEncoding('br;q=abc, gzip')).toBe('gzip');
      expect(chooseEncoding('')).toBeUndefined();
      expect(chooseEncoding(undefined)).toBeUndefined();
    });

    it('falls back to index.html for app routes but not for missing assets', async () => {
      const route = await fetch(`${relay.url}/settings/peers`);
      expect(route.status).toBe(200);
      expect(await route.text()).toContain('<title>sov</title>');
      expect((await fetch(`${relay.url}/assets/gone-999.js`)).status).toBe(404);
    });

    it('refuses path traversal, dot-files and symlinks out of the root', async () => {
      for (const path of [
        '/..%2fsecret.txt',
        '/%2e%2e/secret.txt',
        '/../secret.txt',
        '/assets/..%2f..%2fsecret.txt',
        '/leak.txt',
        '/.env',
      ]) {
        const res = await rawGet(path);
        expect(res.body).not.toContain('TOP SECRET');
        expect([403, 404, 200]).toContain(res.status);
        if (res.status === 200) expect(res.body).toContain('<title>sov</title>');
      }
      expect((await rawGet('/..%2fsecret.txt')).status).toBe(403);
      expect((await rawGet('/leak.txt')).status).toBe(403);
    });
  });
  describe('heartbeat', () => {
    /** The relay's only interval is its heartbeat: faked, each `round()` is exactly one round. */
    const HEARTBEAT_MS = 30_000;
    const round = (): void => void vi.advanceTimersByTime(HEARTBEAT_MS);
    beforeEach(() => void vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] }));
    afterEach(() => void vi.useRealTimers());

    it('cuts a session whose network stack answers pings but whose code does not, and keeps one that answers', async () => {
      const relay = await start({ heartbeatMs: HEARTBEAT_MS });
      const alice = await track(joinAs(relay, ALICE));
      const bob = await track(joinAs(relay, BOB));
      // Alice's code answers each application ping; Bob's `ws` socket answers only protocol pings.
      for (let answered = 0; answered < 5; answered++) {
        round();
        const ping = await alice.expect('ping');
        alice.send({ t: 'pong', n: ping.n });
        await handled(alice, ALICE);
      }
      // Bob missed the first round's ping, so the second round cut him.
      expect(await bob.closed).toBe(1006);
      await until(async () => !(await presence(relay, BOB)).online);
      expect(
        logs.some((l) => l.includes(`endpoint=${toHex(BOB.id).slice(0, 8)}`) && l.includes('heartbeat timeout')),
      ).toBe(true);
      expect((await presence(relay, ALICE)).online).toBe(true);
    });

    it('a pong for an earlier round, or with a made-up number, does not keep a session', async () => {
      const relay = await start({ heartbeatMs: HEARTBEAT_MS });
      const alice = await track(joinAs(relay, ALICE));
      const bob = await track(joinAs(relay, BOB));
      round();
      const first = await alice.expect('ping');
      alice.send({ t: 'pong', n: first.n });
      bob.send({ t: 'pong', n: (await bob.expect('ping')).n + 1000 });
      await Promise.all([handled(alice, ALICE), handled(bob, BOB)]);
      round();
      expect(await bob.closed).toBe(1006);
      await alice.expect('ping');
      alice.send({ t: 'pong', n: first.n });
      await handled(alice, ALICE);
      round();
      expect(await alice.closed).toBe(1006);
      await until(async () => !(await presence(relay, ALICE)).online);
    });
  });
});
