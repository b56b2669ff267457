/**
 * Relay composition root: one HTTP(S) server carrying
 *   GET /ws                  WebSocket upgrade, sov-relay/1 (behaviour in hub.ts)
 *   GET /api/health          {ok, protocol: 'sov-relay/1', relayKey (hex), sessions, refused: {reason: n}, uptimeMs}
 *   GET /api/presence?topic=<hex32>&endpoint=<hex32>   {online, pending}
 *   POST /api/v1/mailbox/{fetch,ack,send}   signed HTTP mailbox API (http-mailbox.ts)
 *   POST /api/v1/objects/{put,status,get,list}   blind object store (http-objects.ts), bytes in
 *                            `<dataDir>/objects/<topic>/` (object-store.ts)
 *   GET anything else        the built PWA from `staticDir` (static.ts), unless `noApp`
 * Durable state lives in `<dataDir>/relay.sqlite` (storage/sqlite-mailbox.ts), the blind MLS
 * sequencer's accepted commits and receipts in `<dataDir>/sequencer.sqlite`; the relay's
 * Ed25519 identity (which endpoints pin) in `<dataDir>/relay-identity.key` (32 secret bytes,
 * mode 0600, created on first start).
 *
 * TLS: `tls.cert` and `tls.key` are PEM *contents* (string or bytes), not paths; the CLI
 * reads the files. Without `tls` the relay speaks plain HTTP/WS (behind a TLS proxy or on
 * loopback).
 *
 * Threats: WebSocket messages are capped at MAX_RELAY_MESSAGE by `ws` itself
 * (permessage-deflate off, so no decompression bombs); WebSocket sessions are capped at
 * `maxConnections` and plain HTTP connections at `maxHttpConnections` more; an HTTP
 * request must arrive whole within `httpRequestTimeoutMs` (headers within a third of it),
 * so a body trickled in a byte at a time holds a connection for seconds, not minutes;
 * sockets that stop answering pings are cut. Web pages may use the relay only from the origin
 * it served them from or from the origins its operator lists (origins.ts): nothing rides on
 * ambient credentials, every session proves its endpoint key by signature, but a page on
 * another site must not use a visitor's browser against the relay.
 * Presence answers only callers on the relay's own machine (loopback) that know both the
 * topic and the endpoint id: an operator's diagnostic.
 */
import { ed25519 } from '@noble/curves/ed25519.js';
import { randomBytes as nodeRandomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { Duplex } from 'node:stream';
import { WebSocketServer } from 'ws';
import { fromHex, toHex } from '../core/bytes.js';
import { MAX_RELAY_MESSAGE } from '../core/relay-wire.js';
import { BlindSequencer } from '../core/mls/sequencer.js';
import { SqliteMailboxStore } from '../storage/sqlite-mailbox.js';
import { SqliteSequencerStore } from '../storage/sqlite-sequencer.js';
import { HttpAuthenticator } from './http-auth.js';
import { HttpMailbox, MAILBOX_PREFIX } from './http-mailbox.js';
import { HttpObjects } from './http-objects.js';
import { BlindObjectStore, type ObjectStoreLimits } from './object-store.js';
import { OBJECTS_PREFIX } from '../core/relay-objects.js';
import { RelayHub } from './hub.js';
import { exchangeOf, requestHead, TapExchange, tapExchange, type WireTap } from './tap.js';
import { DEFAULT_MAILBOX_LIMITS, type MailboxLimits, type MailboxStore } from '../core/mailbox.js';
import { DEFAULT_RATE_LIMIT, type RateLimitOptions } from './rate-limit.js';
import { applySecurityHeaders, resolveStaticRoot, sendText, serveStatic } from './static.js';
import { answerOrigin, judgeOrigin, parseOrigin } from './origins.js';

export const RELAY_PROTOCOL = 'sov-relay/1';
export const DEFAULT_RELAY_PORT = 8787;

export interface RelayOptions {
  readonly host?: string | undefined;
  /** 0 picks an ephemeral port. */
  readonly port?: number | undefined;
  readonly dataDir: string;
  /** The built PWA (usually dist/); omitted or missing → 404 with a hint. */
  readonly staticDir?: string | undefined;
  /** Serve no code at all, only the WebSocket and the API (`sov relay --no-app`; staticDir is ignored). */
  readonly noApp?: boolean | undefined;
  /** Origins (as `parseOrigin` writes them) whose pages may use the relay besides its own (origins.ts). */
  readonly origins?: readonly string[] | undefined;
  /** PEM contents, not file paths. */
  readonly tls?: { readonly cert: string | Buffer; readonly key: string | Buffer } | undefined;
  readonly now?: (() => number) | undefined;
  readonly randomBytes?: ((length: number) => Uint8Array) | undefined;
  readonly log?: ((line: string) => void) | undefined;
  readonly rateLimit?: Partial<RateLimitOptions> | undefined;
  readonly mailboxLimits?: MailboxLimits | undefined;
  readonly authTimeoutMs?: number | undefined;
  /** Ping interval; a socket that misses one full interval is terminated. 0 disables. */
  readonly heartbeatMs?: number | undefined;
  readonly maxConnections?: number | undefined;
  /** Plain HTTP connections open at once, besides the WebSocket sessions (default 512). */
  readonly maxHttpConnections?: number | undefined;
  /** How long one HTTP request may take to arrive, headers and body (default 30 s). */
  readonly httpRequestTimeoutMs?: number | undefined;
  /** Accept sends to endpoints that never authenticated under the topic (default false; open admission only). */
  readonly allowUnknownRecipients?: boolean | undefined;
  /** `enforce` (default): serve only endpoints on each group's signed admission list (relay/hub.ts). */
  readonly admission?: 'enforce' | 'open' | undefined;
  /** Whether anyone may found a new mesh here (relay/hub.ts; default true: `sov relay` decides by its host). */
  readonly founding?: boolean | undefined;
  /** Receives a copy of every message in and out (privacy audits; relay/tap.ts). */
  readonly tap?: WireTap | undefined;
  /** Per-mesh quota of the blind object store (relay/object-store.ts). */
  readonly objectLimits?: ObjectStoreLimits | undefined;
}

export interface RelayHandle {
  /** http(s)://host:port */
  readonly url: string;
  /** ws(s)://host:port/ws */
  readonly wsUrl: string;
  readonly port: number;
  close(): Promise<void>;
  sessionCount(): number;
}

interface Context {
  readonly hub: RelayHub;
  readonly mailbox: HttpMailbox;
  readonly objects: HttpObjects;
  readonly store: MailboxStore;
  readonly staticRoot: string | undefined;
  readonly noApp: boolean;
  readonly origins: ReadonlySet<string>;
  readonly now: () => number;
  readonly startedAt: number;
  readonly identity: { readonly publicKey: Uint8Array };
}

function sendJson(res: ServerResponse, status: number, value: unknown): void {
  const headers = { 'Content-Type': 'application/json; charset=utf-8', 'Cache-Control': 'no-store' };
  const body = Buffer.from(JSON.stringify(value), 'utf8');
  exchangeOf(res)?.response(status, headers, body);
  res.writeHead(status, headers);
  res.end(body);
}

function hexId(value: string | null): Uint8Array | undefined {
  if (value === null || value.length !== 64) return undefined;
  return fromHex(value);
}

/** Loopback addresses: the relay's own machine (other 127/8 addresses are refused too: fail closed). */
export const isLoopback = (address: string | undefined): boolean =>
  address === '127.0.0.1' || address === '::1' || address === '::ffff:127.0.0.1';

function handleApi(ctx: Context, url: URL, req: IncomingMessage, res: ServerResponse): void {
  if (url.pathname === '/api/health') {
    const body = {
      ok: true,
      protocol: RELAY_PROTOCOL,
      relayKey: toHex(ctx.identity.publicKey),
      sessions: ctx.hub.sessionCount(),
      refused: ctx.hub.refusals(),
      uptimeMs: ctx.now() - ctx.startedAt,
    };
    return sendJson(res, 200, body);
  }
  if (url.pathname === '/api/presence') {
    // Who is online and what waits for whom is the operator's diagnostic, not the network's.
    if (!isLoopback(req.socket.remoteAddress))
      return sendJson(res, 403, { error: 'presence answers the relay host only' });
    const topic = hexId(url.searchParams.get('topic'));
    const endpoint = hexId(url.searchParams.get('endpoint'));
    if (!topic || !endpoint) return sendJson(res, 400, { error: 'topic and endpoint must be 64 hex digits' });
    return sendJson(res, 200, {
      online: ctx.hub.isOnline(topic, endpoint),
      pending: ctx.store.countFor(topic, endpoint),
    });
  }
  sendJson(res, 404, { error: 'not found' });
}

async function handleHttp(ctx: Context, req: IncomingMessage, res: ServerResponse): Promise<void> {
  applySecurityHeaders(res);
  if (answerOrigin(req, res, ctx.origins)) return;
  const url = requestUrl(req);
  if (url?.pathname.startsWith(MAILBOX_PREFIX)) return ctx.mailbox.handle(req, res, url.pathname);
  if (url?.pathname.startsWith(OBJECTS_PREFIX)) return ctx.objects.handle(req, res, url.pathname);
  if (req.method !== 'GET' && req.method !== 'HEAD')
    return sendText(res, 405, 'sov relay: method not allowed\n', { Allow: 'GET, HEAD' });
  if (url === undefined) return sendText(res, 400, 'sov relay: bad request\n');
  if (url.pathname === '/api' || url.pathname.startsWith('/api/')) return handleApi(ctx, url, req, res);
  if (url.pathname === '/ws')
    return sendText(res, 426, 'sov relay: WebSocket upgrade required\n', { Upgrade: 'websocket' });
  if (ctx.noApp) return sendText(res, 404, NO_APP);
  await serveStatic(ctx.staticRoot, url.pathname, req, res);
}

const NO_APP =
  'sov relay: this relay serves no app (--no-app): it only stores and forwards ciphertext. Open the app where your mesh serves it.\n';

function requestUrl(req: IncomingMessage): URL | undefined {
  try {
    return new URL(req.url ?? '/', 'http://relay.invalid');
  } catch {
    return undefined;
  }
}

function refuseUpgrade(socket: Duplex, status: string): void {
  socket.end(`HTTP/1.1 ${status}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`);
}

function listen(server: Server, host: string, port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve((server.address() as AddressInfo).port);
    });
  });
}

function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
}

function formatHost(host: string): string {
  return host.includes(':') ? `[${host}]` : host;
}

function checkPort(port: number): number {
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new RangeError(`relay: bad port ${port}`);
  return port;
}

const IDENTITY_FILE = 'relay-identity.key';

/** The relay's Ed25519 identity from `<dataDir>/relay-identity.key`, created (0600) on first start. */
export function loadRelayIdentity(dataDir: string): { secretKey: Uint8Array; publicKey: Uint8Array } {
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const path = join(dataDir, IDENTITY_FILE);
  let secretKey: Uint8Array;
  if (existsSync(path)) {
    secretKey = new Uint8Array(readFileSync(path));
    if (secretKey.length !== 32) throw new Error(`relay: ${IDENTITY_FILE} must hold 32 bytes`);
  } else {
    secretKey = ed25519.utils.randomSecretKey();
    writeFileSync(path, secretKey, { mode: 0o600, flag: 'wx' });
  }
  return { secretKey, publicKey: ed25519.getPublicKey(secretKey) };
}

export async function startRelay(options: RelayOptions): Promise<RelayHandle> {
  const host = options.host ?? '127.0.0.1';
  const port = checkPort(options.port ?? DEFAULT_RELAY_PORT);
  const now = options.now ?? Date.now;
  const log = options.log ?? ((line: string) => console.log(line));
  const store = SqliteMailboxStore.open(options.dataDir, options.mailboxLimits ?? DEFAULT_MAILBOX_LIMITS);
  const identity = loadRelayIdentity(options.dataDir);
  const sequencerStore = SqliteSequencerStore.open(options.dataDir);
  const sequencer = new BlindSequencer({ store: sequencerStore, secretKey: identity.secretKey, now });
  const hub = new RelayHub({
    store,
    now,
    log,
    randomBytes: options.randomBytes ?? ((n) => new Uint8Array(nodeRandomBytes(n))),
    rateLimit: { ...DEFAULT_RATE_LIMIT, ...options.rateLimit },
    authTimeoutMs: options.authTimeoutMs ?? 10_000,
    allowUnknownRecipients: options.allowUnknownRecipients ?? false,
    identity,
    admission: options.admission ?? 'enforce',
    founding: options.founding ?? true,
    tap: options.tap,
    sequencer: { sequencer, store: sequencerStore },
  });
  const rateLimit = { ...DEFAULT_RATE_LIMIT, ...options.rateLimit };
  const auth = new HttpAuthenticator({ hub, now, rateLimit });
  const mailbox = new HttpMailbox({ hub, store, now, log, rateLimit, auth });
  const objectStore = await BlindObjectStore.open(options.dataDir, options.objectLimits);
  const objects = new HttpObjects({ auth, store: objectStore, log });
  const staticRoot = resolveStaticRoot(options.staticDir);
  const origins = new Set((options.origins ?? []).map(parseOrigin));
  const ctx: Context = {
    hub,
    store,
    mailbox,
    objects,
    staticRoot: options.noApp ? undefined : staticRoot,
    noApp: options.noApp ?? false,
    origins,
    now,
    startedAt: now(),
    identity,
  };
  const { tap } = options;
  // HTTP connections numbered for the tap (WebSocket sessions have the hub's serials).
  const httpConns = new WeakMap<object, number>();
  let httpSerial = 0;
  const connOf = (socket: object): number => {
    let conn = httpConns.get(socket);
    if (conn === undefined) httpConns.set(socket, (conn = ++httpSerial));
    return conn;
  };
  const onRequest = (req: IncomingMessage, res: ServerResponse): void => {
    if (tap) {
      const exchange = new TapExchange(tap, connOf(req.socket), requestHead(req.method, req.url, req.rawHeaders));
      tapExchange(req, res, exchange);
      res.once('close', () => exchange.finished(res.statusCode, res.getHeaders()));
    }
    handleHttp(ctx, req, res).catch((e: unknown) => {
      log(`relay: http error: ${(e as Error).message}`);
      if (!res.headersSent) sendText(res, 500, 'sov relay: internal error\n');
      else res.destroy();
    });
  };
  const requestTimeout = options.httpRequestTimeoutMs ?? 30_000;
  const timeouts = {
    requestTimeout,
    headersTimeout: Math.max(1, Math.floor(requestTimeout / 3)),
    // How often Node looks for requests past their deadline (its default, 30 s, would double the bound).
    connectionsCheckingInterval: Math.max(100, Math.min(5_000, Math.floor(requestTimeout / 4))),
  };
  const server = options.tls
    ? createHttpsServer({ cert: options.tls.cert, key: options.tls.key, ...timeouts }, onRequest)
    : createHttpServer(timeouts, onRequest);
  const wss = new WebSocketServer({
    noServer: true,
    maxPayload: MAX_RELAY_MESSAGE,
    perMessageDeflate: false,
    clientTracking: false,
  });
  const maxConnections = options.maxConnections ?? 4096;
  // Upgraded sockets stay the server's connections: the cap is the sessions' plus the HTTP ones'.
  server.maxConnections = maxConnections + (options.maxHttpConnections ?? 512);
  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    socket.on('error', () => socket.destroy());
    tap?.({
      direction: 'in',
      channel: 'http',
      conn: connOf(socket),
      head: requestHead(req.method, req.url, req.rawHeaders),
      bytes: new Uint8Array(0),
    });
    if (requestUrl(req)?.pathname !== '/ws') return refuseUpgrade(socket, '404 Not Found');
    if (judgeOrigin(req, origins) === 'refused') return refuseUpgrade(socket, '403 Forbidden');
    if (hub.connectionCount() >= maxConnections) return refuseUpgrade(socket, '503 Service Unavailable');
    wss.handleUpgrade(req, socket, head, (ws) => hub.accept(ws));
  });
  let bound: number;
  try {
    bound = await listen(server, host, port);
  } catch (e) {
    store.close();
    sequencerStore.close();
    throw e;
  }
  const heartbeatMs = options.heartbeatMs ?? 30_000;
  const heartbeat = heartbeatMs > 0 ? setInterval(() => hub.heartbeat(), heartbeatMs) : undefined;
  heartbeat?.unref();
  let closing: Promise<void> | undefined;
  const close = async (): Promise<void> => {
    clearInterval(heartbeat);
    await hub.closeAll();
    wss.close();
    await closeServer(server);
    store.close();
    sequencerStore.close();
  };
  const scheme = options.tls ? 'https' : 'http';
  const authority = `${formatHost(host)}:${bound}`;
  return {
    url: `${scheme}://${authority}`,
    wsUrl: `${options.tls ? 'wss' : 'ws'}://${authority}/ws`,
    port: bound,
    close: () => (closing ??= close()),
    sessionCount: () => hub.sessionCount(),
  };
}
