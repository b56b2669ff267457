/**
 * The service worker's batch cycle in Node: fake-indexeddb for the three databases, Node's
 * WebCrypto Ed25519 for the endpoint key (created and wrapped by the real CryptoService),
 * a real relay on 127.0.0.1:0, and a real WebSocket session that makes the endpoint a member.
 * The fetch seen by the cycle is wrapped so the test can watch the order of requests and
 * look into the inbox at the moment an ack leaves.
 */
import 'fake-indexeddb/auto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ed25519 } from '@noble/curves/ed25519.js';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { bytesEqual, fromHex, toHex } from '../../src/core/bytes.js';
import { MAILBOX_ROUTES } from '../../src/core/relay-http.js';
import { startRelay, type RelayHandle } from '../../src/relay/server.js';
import { fetchIntoInbox, type BatchFetchOptions } from '../../src/runtime/batch-fetch.js';
import { systemClock } from '../../src/runtime/clock.js';
import { CryptoService } from '../../src/runtime/crypto-service.js';
import { httpBaseOf } from '../../src/runtime/relay-http-client.js';
import { webSigner } from '../../src/runtime/webcrypto.js';
import { NodeDatabase } from '../../src/storage/dexie-store.js';
import { InboxDatabase, InboxStore } from '../../src/storage/inbox-store.js';
import { DexieKeyStore, KeyDatabase } from '../../src/storage/key-store.js';
import { joinRelay, type RelayTestClient } from '../helpers/relay-client.js';

const ALICE_SECRET = new Uint8Array(32).fill(1);
const ALICE = ed25519.getPublicKey(ALICE_SECRET);
const bytes = (text: string): Uint8Array => new TextEncoder().encode(text);
const text = (b: Uint8Array): string => new TextDecoder().decode(b);

let serial = 0;

/** One browser machine's databases, with a founded mesh whose relay is `relay`. */
async function machine(relay: RelayHandle, status: 'member' | 'joining' | 'none' = 'member') {
  const name = `t${++serial}`;
  const keys = new KeyDatabase(`${name}-keys`);
  const node = new NodeDatabase(`${name}-node`);
  const inboxDb = new InboxDatabase(`${name}-inbox`);
  const crypto = new CryptoService(keys, systemClock);
  await crypto.init();
  const view = await crypto.createMesh();
  if (!view.ok) throw new Error('createMesh failed');
  if (status !== 'none') await node.meta.put({ key: 'mesh', value: { status, relay: relay.wsUrl, name } });
  const identity = (await new DexieKeyStore(keys).identity())!;
  const topic = fromHex(view.value.topic!)!;
  const endpoint = identity.endpointPublic;
  const sign = webSigner({ keys: identity.endpoint, publicKey: endpoint }).sign;
  return { keys, node, inboxDb, inbox: new InboxStore(inboxDb), topic, endpoint, sign };
}
type Machine = Awaited<ReturnType<typeof machine>>;

type Call = { readonly route: string; readonly inboxCount: number };

/** A fetch that records each request and the inbox size (a separate connection) when it left. */
function watchedFetch(m: Machine, calls: Call[]): typeof fetch {
  return async (input, init) => {
    const url = new URL(input instanceof Request ? input.url : String(input));
    const probe = new InboxDatabase(m.inboxDb.name);
    calls.push({ route: url.pathname, inboxCount: await probe.frames.count() });
    probe.close();
    return fetch(input, init);
  };
}

describe('fetchIntoInbox (service worker batch cycle)', () => {
  let dir: string;
  let relay: RelayHandle;
  const clients: RelayTestClient[] = [];

  const online = async (
    topic: Uint8Array,
    endpoint: Uint8Array,
    sign: (p: Uint8Array) => Promise<Uint8Array> | Uint8Array,
  ) => {
    const client = await joinRelay(relay.wsUrl, topic, endpoint, sign);
    clients.push(client);
    return client;
  };
  const pending = async (m: Machine): Promise<number> => {
    const res = await fetch(`${relay.url}/api/presence?topic=${toHex(m.topic)}&endpoint=${toHex(m.endpoint)}`);
    return ((await res.json()) as { pending: number }).pending;
  };
  /** Makes `m` a member (one WS auth), then has Alice send it `bodies` while it is offline. */
  const deliver = async (m: Machine, bodies: readonly string[]): Promise<void> => {
    await (await online(m.topic, m.endpoint, m.sign)).close();
    const alice = await online(m.topic, ALICE, (p) => ed25519.sign(p, ALICE_SECRET));
    for (const b of bodies) alice.send({ t: 'send', to: m.endpoint, body: bytes(b) });
    await expect.poll(() => pending(m)).toBe(bodies.length);
  };
  const run = (m: Machine, extra: Partial<BatchFetchOptions> = {}) =>
    fetchIntoInbox({ keys: m.keys, node: m.node, inbox: m.inbox, ...extra });

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'sov-batch-'));
    relay = await startRelay({ port: 0, dataDir: join(dir, 'data'), log: () => undefined, admission: 'open' });
  });
  afterEach(async () => {
    for (const c of clients.splice(0)) c.ws.terminate();
    await relay.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('moves every frame into the inbox and acks each page only after its inbox commit', async () => {
    const m = await machine(relay);
    await deliver(m, ['one', 'two', 'three', 'four', 'five']);
    const calls: Call[] = [];

    const result = await run(m, { pageSize: 2, fetch: watchedFetch(m, calls) });

    expect(result).toEqual({ ok: true, value: { fetched: 5, acked: 5 } });
    expect(calls).toEqual([
      { route: MAILBOX_ROUTES.fetch, inboxCount: 0 },
      { route: MAILBOX_ROUTES.ack, inboxCount: 2 },
      { route: MAILBOX_ROUTES.fetch, inboxCount: 2 },
      { route: MAILBOX_ROUTES.ack, inboxCount: 4 },
      { route: MAILBOX_ROUTES.fetch, inboxCount: 4 },
      { route: MAILBOX_ROUTES.ack, inboxCount: 5 },
    ]);
    const frames = await m.inbox.list(10);
    expect(frames.map((f) => text(f.body))).toEqual(['one', 'two', 'three', 'four', 'five']);
    expect(frames.every((f) => bytesEqual(f.from, ALICE) && f.topic === toHex(m.topic))).toBe(true);
    expect(await pending(m)).toBe(0);
  });

  it('acks nothing when the inbox write fails, and leaves every frame at the relay', async () => {
    const m = await machine(relay);
    await deliver(m, ['a', 'b', 'c']);
    let writes = 0;
    m.inboxDb.frames.hook('creating', () => {
      if (++writes === 2) throw new Error('QuotaExceededError (simulated)');
    });
    const calls: Call[] = [];

    const result = await run(m, { fetch: watchedFetch(m, calls) });

    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.error.type).toBe('InboxWriteFailed');
    expect(calls.map((c) => c.route)).toEqual([MAILBOX_ROUTES.fetch]);
    expect(await m.inbox.count()).toBe(0);
    expect(await pending(m)).toBe(3);
  });

  it('fetches nothing new on a second run, and overwrites a frame fetched twice in place', async () => {
    const m = await machine(relay);
    await deliver(m, ['x', 'y']);
    expect(await run(m)).toEqual({ ok: true, value: { fetched: 2, acked: 2 } });
    expect(await run(m)).toEqual({ ok: true, value: { fetched: 0, acked: 0 } });
    expect(await m.inbox.count()).toBe(2);

    const [first] = await m.inbox.list(1);
    await m.inbox.putAll([{ ...first!, fetchedAt: 1 }]);
    expect(await m.inbox.count()).toBe(2);
    await m.inbox.remove([[first!.topic, first!.id]]);
    expect((await m.inbox.list(10)).map((f) => text(f.body))).toEqual(['y']);
  });

  it('is NotMember without a mesh record, or while still joining', async () => {
    for (const status of ['none', 'joining'] as const) {
      const m = await machine(relay, status);
      expect(await run(m)).toEqual({ ok: false, error: { type: 'NotMember' } });
    }
  });

  it("returns the relay's typed refusal when the endpoint never authenticated over WebSocket", async () => {
    const m = await machine(relay);
    const result = await run(m);
    expect(result).toMatchObject({ ok: false, error: { type: 'HttpRefused', status: 403, code: 'unknown-endpoint' } });
  });

  it('returns a Network error when the relay cannot be reached', async () => {
    const m = await machine(relay);
    await deliver(m, ['kept']);
    const url = relay.wsUrl;
    await m.node.meta.put({ key: 'mesh', value: { status: 'member', relay: url.replace(/:\d+\//, ':1/') } });
    const result = await run(m);
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.error.type).toBe('Network');
    expect(await pending(m)).toBe(1);
  });

  it('derives the HTTP base from the relay WebSocket URL', () => {
    expect(httpBaseOf('ws://127.0.0.1:8787/ws')).toBe('http://127.0.0.1:8787');
    expect(httpBaseOf('wss://relay.example/ws')).toBe('https://relay.example');
    expect(httpBaseOf('wss://relay.example/mesh/ws')).toBe('https://relay.example/mesh');
    expect(httpBaseOf('ftp://relay.example/ws')).toBeUndefined();
    expect(httpBaseOf('not a url')).toBeUndefined();
  });
});
