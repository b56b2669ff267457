/**
 * The relay's HTTP mailbox API end to end: a real server on 127.0.0.1:0, requests signed
 * here with noble Ed25519 exactly as core/relay-http.ts specifies, real `ws` clients for the
 * WebSocket side. Every refusal is one row of a table: its code and status, and afterwards
 * the recipient's mailbox holds exactly what it held before.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ed25519 } from '@noble/curves/ed25519.js';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { bytesEqual, toBase64Url, toHex } from '../../src/core/bytes.js';
import { encodeCbor } from '../../src/core/cbor.js';
import {
  AUTH_HEADER,
  CBOR_CONTENT_TYPE,
  MAILBOX_ROUTES,
  MAX_FETCH_PAGE_BYTES,
  decodeAuthHeader,
  decodeErrorBody,
  decodeMailboxResponse,
  encodeAuthHeader,
  encodeMailboxBody,
  type HttpAuth,
  type MailboxResponse,
  type MailboxRoute,
  type RelayHttpErrorCode,
} from '../../src/core/relay-http.js';
import { MAX_ACK_IDS, MAX_FRAME_BODY, MAX_RELAY_MESSAGE } from '../../src/core/relay-wire.js';
import { startRelay, type RelayHandle, type RelayOptions } from '../../src/relay/server.js';
import { bytes, joinRelay, text, type Key, type RelayTestClient } from '../helpers/relay-client.js';
import { ALICE, authHeader, BOB, CAROL, DAVE, OTHER_TOPIC, TOPIC, type Signing } from '../helpers/relay-http.js';

type Answer = { readonly status: number; readonly body: Uint8Array };

async function post(
  relay: RelayHandle,
  path: string,
  body: Uint8Array,
  headers: Record<string, string>,
): Promise<Answer> {
  const res = await fetch(`${relay.url}${path}`, { method: 'POST', headers, body: new Uint8Array(body) });
  return { status: res.status, body: new Uint8Array(await res.arrayBuffer()) };
}

type Req = { readonly path: string; readonly body: Uint8Array; readonly headers: Record<string, string> };

/** A correctly signed request as raw parts, for cases that break one of them. */
function signed(who: Key, route: MailboxRoute, value: unknown, s: Signing = {}): Req {
  const body = encodeCbor(value);
  const headers = { 'Content-Type': CBOR_CONTENT_TYPE, [AUTH_HEADER]: authHeader(who, MAILBOX_ROUTES[route], body, s) };
  return { path: MAILBOX_ROUTES[route], body, headers };
}

async function call<R extends MailboxRoute>(
  relay: RelayHandle,
  who: Key,
  route: R,
  value: unknown,
  s: Signing = {},
): Promise<MailboxResponse[R]> {
  const req = signed(who, route, value, s);
  const answer = await post(relay, req.path, req.body, req.headers);
  if (answer.status !== 200)
    throw new Error(`${route}: ${answer.status} ${JSON.stringify(decodeErrorBody(answer.body))}`);
  const decoded = decodeMailboxResponse(route, answer.body);
  if (!decoded.ok) throw new Error(decoded.error.reason);
  return decoded.value;
}

function refusalOf(answer: Answer): { status: number; code: RelayHttpErrorCode } {
  const decoded = decodeErrorBody(answer.body);
  if (!decoded.ok) throw new Error(`not an error body: ${decoded.error.reason}`);
  return { status: answer.status, code: decoded.value.code };
}

async function pending(relay: RelayHandle, who: Key, topic = TOPIC): Promise<number> {
  const res = await fetch(`${relay.url}/api/presence?topic=${toHex(topic)}&endpoint=${toHex(who.id)}`);
  return ((await res.json()) as { pending: number }).pending;
}

/** Sends a raw HTTP/1.1 request and resolves with the status, whether or not the body was written. */
function rawPost(
  relay: RelayHandle,
  path: string,
  headers: Record<string, string>,
  write: (req: ReturnType<typeof httpRequest>) => void,
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(`${relay.url}${path}`, { method: 'POST', headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: new Uint8Array(Buffer.concat(chunks)) }));
    });
    req.on('error', reject);
    write(req);
  });
}

describe('relay HTTP mailbox API', () => {
  let dir: string;
  const relays: RelayHandle[] = [];
  const clients: RelayTestClient[] = [];

  const start = async (options: Partial<RelayOptions> = {}): Promise<RelayHandle> => {
    const relay = await startRelay({
      port: 0,
      dataDir: join(dir, 'data'),
      log: () => undefined,
      admission: 'open',
      ...options,
    });
    relays.push(relay);
    return relay;
  };
  const online = async (relay: RelayHandle, who: Key, topic = TOPIC): Promise<RelayTestClient> => {
    const client = await joinRelay(relay.wsUrl, topic, who.id, (payload) => ed25519.sign(payload, who.secret));
    clients.push(client);
    return client;
  };
  /** Authenticates each endpoint once over WebSocket (membership), then leaves. */
  const members = async (relay: RelayHandle, ...who: Key[]): Promise<void> => {
    for (const w of who) await (await online(relay, w)).close();
  };

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'sov-http-mailbox-'));
  });
  afterEach(async () => {
    for (const c of clients.splice(0)) c.ws.terminate();
    await Promise.all(relays.splice(0).map((r) => r.close()));
    rmSync(dir, { recursive: true, force: true });
  });

  describe('round trips', () => {
    it('sends, fetches and acks over HTTP', async () => {
      const relay = await start();
      await members(relay, ALICE, BOB);
      const { id } = await call(relay, ALICE, 'send', { to: BOB.id, body: bytes('hello') });
      expect(await pending(relay, BOB)).toBe(1);

      const page = await call(relay, BOB, 'fetch', { after: 0, limit: 10 });
      expect(page.more).toBe(false);
      expect(page.frames).toHaveLength(1);
      expect(page.frames[0]!.id).toBe(id);
      expect(bytesEqual(page.frames[0]!.from, ALICE.id)).toBe(true);
      expect(text(page.frames[0]!.body)).toBe('hello');

      expect(await call(relay, BOB, 'ack', { ids: [id] })).toEqual({ acked: 1 });
      expect(await pending(relay, BOB)).toBe(0);
      expect((await call(relay, BOB, 'fetch', { after: 0, limit: 10 })).frames).toHaveLength(0);
    });

    it('pages by limit and by bytes, in id order, with `more` until the end', async () => {
      const relay = await start();
      await members(relay, ALICE, BOB);
      const ids: number[] = [];
      for (let i = 0; i < 5; i++) ids.push((await call(relay, ALICE, 'send', { to: BOB.id, body: bytes(`m${i}`) })).id);
      const first = await call(relay, BOB, 'fetch', { after: 0, limit: 2 });
      expect(first.frames.map((f) => f.id)).toEqual(ids.slice(0, 2));
      expect(first.more).toBe(true);
      const rest = await call(relay, BOB, 'fetch', { after: ids[1]!, limit: 3 });
      expect(rest.frames.map((f) => text(f.body))).toEqual(['m2', 'm3', 'm4']);
      expect(rest.more).toBe(false);

      await call(relay, BOB, 'ack', { ids });
      const big = new Uint8Array(MAX_FRAME_BODY);
      const count = MAX_FETCH_PAGE_BYTES / MAX_FRAME_BODY + 1;
      for (let i = 0; i < count; i++) await call(relay, ALICE, 'send', { to: BOB.id, body: big });
      const page = await call(relay, BOB, 'fetch', { after: 0, limit: 500 });
      expect(page.frames).toHaveLength(count - 1);
      expect(page.more).toBe(true);
    });

    it('shows an endpoint only its own mailbox, and its ack drops only its own frames', async () => {
      const relay = await start();
      await members(relay, ALICE, BOB, CAROL);
      const { id } = await call(relay, ALICE, 'send', { to: BOB.id, body: bytes('for bob') });
      expect((await call(relay, CAROL, 'fetch', { after: 0, limit: 10 })).frames).toHaveLength(0);
      expect(await call(relay, CAROL, 'ack', { ids: [id] })).toEqual({ acked: 0 });
      expect(await pending(relay, BOB)).toBe(1);
    });
  });

  describe('with WebSocket clients', () => {
    it('makes a frame sent over WebSocket fetchable over HTTP', async () => {
      const relay = await start();
      await members(relay, BOB);
      const alice = await online(relay, ALICE);
      alice.send({ t: 'send', to: BOB.id, body: bytes('via ws') });
      await expect.poll(() => pending(relay, BOB)).toBe(1);
      const page = await call(relay, BOB, 'fetch', { after: 0, limit: 10 });
      expect(page.frames.map((f) => text(f.body))).toEqual(['via ws']);
      expect(bytesEqual(page.frames[0]!.from, ALICE.id)).toBe(true);
    });

    it('delivers a frame sent over HTTP live to an online WebSocket recipient', async () => {
      const relay = await start();
      await members(relay, ALICE);
      const bob = await online(relay, BOB);
      const { id } = await call(relay, ALICE, 'send', { to: BOB.id, body: bytes('via http') });
      const frame = await bob.expect('frame');
      expect(frame.id).toBe(id);
      expect(bytesEqual(frame.from, ALICE.id)).toBe(true);
      expect(text(frame.body)).toBe('via http');
    });

    it('stores a frame sent over HTTP for an offline WebSocket recipient and delivers it on connect', async () => {
      const relay = await start();
      await members(relay, ALICE, BOB);
      await call(relay, ALICE, 'send', { to: BOB.id, body: bytes('later') });
      const bob = await online(relay, BOB);
      expect(text((await bob.expect('frame')).body)).toBe('later');
    });

    it('stops WebSocket redelivery of frames acked over HTTP', async () => {
      const relay = await start();
      await members(relay, ALICE, BOB);
      const ids: number[] = [];
      for (const m of ['a', 'b', 'c']) ids.push((await call(relay, ALICE, 'send', { to: BOB.id, body: bytes(m) })).id);
      expect(await call(relay, BOB, 'ack', { ids: ids.slice(0, 2) })).toEqual({ acked: 2 });
      const bob = await online(relay, BOB);
      const frame = await bob.expect('frame');
      expect(frame.id).toBe(ids[2]);
      bob.send({ t: 'ack', ids: [frame.id] });
      await expect.poll(() => pending(relay, BOB)).toBe(0);
      expect(bob.queued).toBe(0);
    });
  });

  describe('refusals leave the mailbox as it was', () => {
    type Setup = { relay: RelayHandle; frameId: number };
    type Case = {
      readonly name: string;
      readonly code: RelayHttpErrorCode;
      readonly status: number;
      readonly options?: Partial<RelayOptions>;
      readonly send: (s: Setup) => Promise<Answer>;
    };
    const sendToBob = (s: Signing = {}) => signed(ALICE, 'send', { to: BOB.id, body: bytes('x') }, s);
    const ackAsBob = (id: number, s: Signing = {}) => signed(BOB, 'ack', { ids: [id] }, s);
    const postReq = (relay: RelayHandle, r: Req): Promise<Answer> => post(relay, r.path, r.body, r.headers);
    /** A request body signed as is and posted as is. */
    const raw = (who: Key, route: MailboxRoute, body: Uint8Array): Req => ({
      path: MAILBOX_ROUTES[route],
      body,
      headers: { 'Content-Type': CBOR_CONTENT_TYPE, [AUTH_HEADER]: authHeader(who, MAILBOX_ROUTES[route], body) },
    });
    const withHeader = (r: Req, value: string | undefined): Req => {
      const headers: Record<string, string> = { 'Content-Type': CBOR_CONTENT_TYPE };
      if (value !== undefined) headers[AUTH_HEADER] = value;
      return { ...r, headers };
    };

    const cases: Case[] = [
      {
        name: 'signature by another key',
        code: 'auth-failed',
        status: 401,
        send: ({ relay, frameId }) => postReq(relay, ackAsBob(frameId, { signer: CAROL })),
      },
      {
        name: 'tampered body (hash mismatch)',
        code: 'auth-failed',
        status: 401,
        send: ({ relay, frameId }) => postReq(relay, ackAsBob(frameId, { signedBody: encodeCbor({ ids: [] }) })),
      },
      {
        name: 'another route signed',
        code: 'auth-failed',
        status: 401,
        send: ({ relay }) => postReq(relay, sendToBob({ signedPath: MAILBOX_ROUTES.ack })),
      },
      {
        name: 'another method signed',
        code: 'auth-failed',
        status: 401,
        send: ({ relay }) => postReq(relay, sendToBob({ signedMethod: 'PUT' })),
      },
      {
        name: 'another topic signed than claimed',
        code: 'auth-failed',
        status: 401,
        send: ({ relay, frameId }) => postReq(relay, ackAsBob(frameId, { signedTopic: OTHER_TOPIC })),
      },
      {
        name: 'timestamp 121 s old',
        code: 'stale',
        status: 401,
        send: ({ relay, frameId }) => postReq(relay, ackAsBob(frameId, { ts: Date.now() - 121_000 })),
      },
      {
        name: 'timestamp 121 s ahead',
        code: 'stale',
        status: 401,
        send: ({ relay }) => postReq(relay, sendToBob({ ts: Date.now() + 121_000 })),
      },
      {
        name: 'replayed nonce (the first use fetched, the replay acks)',
        code: 'replayed',
        status: 401,
        send: async ({ relay, frameId }) => {
          const nonce = new Uint8Array(16).fill(7);
          const ts = Date.now();
          await call(relay, BOB, 'fetch', { after: 0, limit: 1 }, { nonce, ts });
          return postReq(relay, ackAsBob(frameId, { nonce, ts }));
        },
      },
      {
        name: 'replay of an accepted request',
        code: 'replayed',
        status: 401,
        send: async ({ relay, frameId }) => {
          const r = ackAsBob(frameId + 1000);
          expect((await postReq(relay, r)).status).toBe(200);
          return postReq(relay, r);
        },
      },
      {
        name: 'endpoint that never authenticated over WebSocket',
        code: 'unknown-endpoint',
        status: 403,
        send: ({ relay }) => postReq(relay, signed(DAVE, 'send', { to: BOB.id, body: bytes('x') })),
      },
      {
        // Signature first: one who cannot sign as an endpoint learns nothing of its membership.
        name: 'a non-member endpoint claimed with a signature by another key (as for a member: 401)',
        code: 'auth-failed',
        status: 401,
        send: ({ relay }) => postReq(relay, signed(DAVE, 'send', { to: BOB.id, body: bytes('x') }, { signer: CAROL })),
      },
      {
        name: 'member of another topic only',
        code: 'unknown-endpoint',
        status: 403,
        send: ({ relay }) =>
          postReq(relay, signed(ALICE, 'send', { to: BOB.id, body: bytes('x') }, { topic: OTHER_TOPIC })),
      },
      {
        name: 'recipient that never joined',
        code: 'unknown-recipient',
        status: 404,
        send: ({ relay }) => postReq(relay, signed(ALICE, 'send', { to: DAVE.id, body: bytes('x') })),
      },
      {
        name: 'frame body over MAX_FRAME_BODY',
        code: 'frame-too-large',
        status: 413,
        send: ({ relay }) =>
          postReq(relay, signed(ALICE, 'send', { to: BOB.id, body: new Uint8Array(MAX_FRAME_BODY + 1) })),
      },
      {
        name: 'declared Content-Length over the bound, answered before the body is sent',
        code: 'frame-too-large',
        status: 413,
        send: ({ relay }) => {
          const r = sendToBob();
          const headers = { ...r.headers, 'Content-Length': String(MAX_RELAY_MESSAGE + 1) };
          return rawPost(relay, r.path, headers, (req) => req.flushHeaders());
        },
      },
      {
        name: 'streamed (chunked) body over the bound',
        code: 'frame-too-large',
        status: 413,
        send: ({ relay }) => {
          const r = sendToBob();
          return rawPost(relay, r.path, r.headers, (req) => {
            const chunk = new Uint8Array(64 * 1024);
            const pump = (left: number): void => {
              if (left === 0) return void req.end();
              if (req.destroyed) return;
              req.write(chunk, () => pump(left - 1));
            };
            req.on('error', () => undefined);
            pump(Math.ceil(MAX_RELAY_MESSAGE / chunk.length) + 2);
          });
        },
      },
      {
        name: 'fetch body over its small bound',
        code: 'frame-too-large',
        status: 413,
        send: ({ relay }) => postReq(relay, raw(BOB, 'fetch', new Uint8Array(64 * 1024 + 1))),
      },
      {
        name: 'missing sov-auth header',
        code: 'malformed',
        status: 400,
        send: ({ relay, frameId }) => postReq(relay, withHeader(ackAsBob(frameId), undefined)),
      },
      {
        name: 'sov-auth not base64url',
        code: 'malformed',
        status: 400,
        send: ({ relay, frameId }) => postReq(relay, withHeader(ackAsBob(frameId), 'not base64!')),
      },
      {
        name: 'sov-auth over its length bound',
        code: 'malformed',
        status: 400,
        send: ({ relay, frameId }) => postReq(relay, withHeader(ackAsBob(frameId), 'A'.repeat(600))),
      },
      {
        name: 'sov-auth with a short nonce',
        code: 'malformed',
        status: 400,
        send: ({ relay, frameId }) => {
          const r = ackAsBob(frameId);
          const h = decodeHeader(r.headers[AUTH_HEADER]);
          return postReq(relay, withHeader(r, encodeAuthHeader({ ...h, nonce: h.nonce.subarray(0, 8) })));
        },
      },
      {
        name: 'sov-auth with an extra field',
        code: 'malformed',
        status: 400,
        send: ({ relay, frameId }) => {
          const r = ackAsBob(frameId);
          const h = decodeHeader(r.headers[AUTH_HEADER]);
          return postReq(relay, withHeader(r, toBase64Url(encodeCbor({ ...h, extra: 1 }))));
        },
      },
      {
        name: 'body not CBOR (signed as is)',
        code: 'malformed',
        status: 400,
        send: ({ relay }) => postReq(relay, raw(BOB, 'ack', bytes('{"ids":[1]}'))),
      },
      {
        name: 'body CBOR but not canonical (signed as is)',
        code: 'malformed',
        status: 400,
        // {ids: [1]} with the array length in a needless 1-byte extension.
        send: ({ relay }) =>
          postReq(relay, raw(BOB, 'ack', Uint8Array.of(0xa1, 0x63, 0x69, 0x64, 0x73, 0x98, 0x01, 0x01))),
      },
      {
        name: 'ack with too many ids',
        code: 'malformed',
        status: 400,
        send: ({ relay }) =>
          postReq(relay, signed(BOB, 'ack', { ids: Array.from({ length: MAX_ACK_IDS + 1 }, (_, i) => i + 1) })),
      },
      {
        name: 'fetch with limit 0',
        code: 'malformed',
        status: 400,
        send: ({ relay }) => postReq(relay, signed(BOB, 'fetch', { after: 0, limit: 0 })),
      },
      {
        name: 'fetch with limit 501',
        code: 'malformed',
        status: 400,
        send: ({ relay }) => postReq(relay, signed(BOB, 'fetch', { after: 0, limit: 501 })),
      },
      {
        name: 'send with a 31-byte recipient',
        code: 'malformed',
        status: 400,
        send: ({ relay }) => postReq(relay, signed(ALICE, 'send', { to: BOB.id.subarray(0, 31), body: bytes('x') })),
      },
      {
        name: 'wrong content type',
        code: 'malformed',
        status: 415,
        send: ({ relay, frameId }) => {
          const r = ackAsBob(frameId);
          return post(relay, r.path, r.body, { ...r.headers, 'Content-Type': 'application/json' });
        },
      },
      {
        name: 'GET instead of POST',
        code: 'malformed',
        status: 405,
        send: async ({ relay }) => {
          const res = await fetch(`${relay.url}${MAILBOX_ROUTES.fetch}`);
          return { status: res.status, body: new Uint8Array(await res.arrayBuffer()) };
        },
      },
      {
        name: 'unknown route',
        code: 'malformed',
        status: 404,
        send: ({ relay, frameId }) => {
          const r = ackAsBob(frameId);
          return post(relay, '/api/v1/mailbox/delete', r.body, r.headers);
        },
      },
      {
        name: 'mailbox at its bound',
        code: 'mailbox-full',
        status: 409,
        options: { mailboxLimits: { maxFrames: 1, maxBytes: 1024 } },
        send: ({ relay }) => postReq(relay, sendToBob()),
      },
      {
        name: 'requests over the rate',
        code: 'rate-limited',
        status: 429,
        options: { rateLimit: { perSecond: 0.001, burst: 2 } },
        send: async ({ relay }) => {
          await call(relay, ALICE, 'fetch', { after: 0, limit: 1 });
          await call(relay, ALICE, 'fetch', { after: 0, limit: 1 });
          return postReq(relay, sendToBob());
        },
      },
    ];

    for (const c of cases) {
      it(`${c.name} → ${c.status} ${c.code}`, async () => {
        const relay = await start(c.options);
        await members(relay, ALICE, BOB, CAROL);
        const alice = await online(relay, ALICE);
        alice.send({ t: 'send', to: BOB.id, body: bytes('kept') });
        await expect.poll(() => pending(relay, BOB)).toBe(1);
        const before = await call(relay, BOB, 'fetch', { after: 0, limit: 10 });

        expect(refusalOf(await c.send({ relay, frameId: before.frames[0]!.id }))).toEqual({
          status: c.status,
          code: c.code,
        });

        const after = await call(relay, BOB, 'fetch', { after: 0, limit: 10 });
        expect(after.frames.map((f) => [f.id, text(f.body)])).toEqual(before.frames.map((f) => [f.id, text(f.body)]));
        expect(await pending(relay, BOB)).toBe(1);
      });
    }
  });

  it('encodes every request body canonically (what the relay hashes is what the client signed)', () => {
    const body = encodeMailboxBody({ after: 3, limit: 2 });
    expect(bytesEqual(body, encodeCbor({ limit: 2, after: 3 }))).toBe(true);
  });
});

function decodeHeader(value: string | undefined): HttpAuth {
  const decoded = decodeAuthHeader(value);
  if (!decoded.ok) throw new Error(decoded.error.reason);
  return decoded.value;
}
