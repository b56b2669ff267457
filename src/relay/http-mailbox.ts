/**
 * The relay's HTTP mailbox API (wire format in core/relay-http.ts): fetch, ack and send over
 * plain signed POSTs, against the same MailboxStore and through the same hub `submit` path as
 * the WebSocket protocol, so a frame sent either way is fetched or delivered either way.
 *
 * Each request, in order (the first failure answers, and nothing in the mailbox changes):
 *   route and method        unknown path 404, anything but POST 405 (code `malformed`)
 *   content type            application/cbor
 *   body                    Content-Length over the route's bound → 413 before reading; a
 *                           streamed body is cut off at the bound (413, connection closed)
 *   sov-auth header         bounded base64url CBOR                          `malformed`
 *   timestamp               within ±CLOCK_WINDOW_MS of the relay clock      `stale`
 *   membership              endpoint authenticated over WS under the topic  `unknown-endpoint`
 *   signature               strict Ed25519 over httpSigningPayload          `auth-failed`
 *   rate                    token bucket per (topic, endpoint)              `rate-limited`
 *   nonce                   unseen for this endpoint within the window      `replayed`
 *   request body            route decoder                                   `malformed`, `frame-too-large`
 *
 * Threats: the signature covers method, route, timestamp, nonce and the body's BLAKE3, so a
 * captured request can be neither redirected to another route nor altered, and replay is
 * refused by the nonce cache (replay-guard.ts) for as long as the timestamp is fresh. Rate
 * limiting counts verified requests only, so nobody can spend another endpoint's budget;
 * unauthenticated work per request is bounded by the body bound and one signature check.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { ed25519 } from '@noble/curves/ed25519.js';
import { toHex } from '../core/bytes.js';
import {
  AUTH_HEADER,
  CBOR_CONTENT_TYPE,
  CLOCK_WINDOW_MS,
  HTTP_STATUS,
  MAILBOX_ROUTES,
  MAX_FETCH_PAGE_BYTES,
  MAX_REQUEST_BODY,
  decodeAuthHeader,
  decodeMailboxRequest,
  encodeMailboxBody,
  httpSigningPayload,
  isFresh,
  type FetchedFrame,
  type FetchRequest,
  type FetchResponse,
  type HttpAuth,
  type MailboxResponse,
  type MailboxRoute,
  type RelayHttpError,
  type RelayHttpErrorCode,
} from '../core/relay-http.js';
import { err, ok, type Result } from '../core/result.js';
import type { RelayHub, WireTap } from './hub.js';
import type { MailboxStore } from './mailbox.js';
import { RateLimiter, type RateLimitOptions } from './rate-limit.js';
import { DEFAULT_REPLAY_GUARD, ReplayGuard, type ReplayGuardOptions } from './replay-guard.js';

export const MAILBOX_PREFIX = '/api/v1/mailbox/';

export interface HttpMailboxOptions {
  readonly hub: RelayHub;
  readonly store: MailboxStore;
  readonly now: () => number;
  readonly log: (line: string) => void;
  readonly rateLimit: RateLimitOptions;
  readonly replay?: ReplayGuardOptions | undefined;
  readonly tap?: WireTap | undefined;
}

/** Endpoints whose rate buckets are kept; the least recently seen is forgotten first. */
const MAX_LIMITERS = 10_000;

const ROUTES = new Map<string, MailboxRoute>(
  Object.entries(MAILBOX_ROUTES).map(([route, path]) => [path, route as MailboxRoute]),
);

const refusal = (code: RelayHttpErrorCode, reason: string): Result<never, RelayHttpError> =>
  err({ type: 'RelayHttpError', code, reason: `relay: ${reason}` });

type Body = Result<Uint8Array, RelayHttpError>;
type Answer = Result<Uint8Array, RelayHttpError>;

const encoded = (value: MailboxResponse[MailboxRoute]): Answer => ok(encodeMailboxBody(value));

/** Reads at most `max` bytes; refuses a larger declared or streamed body without buffering it. */
function readBody(req: IncomingMessage, max: number): Promise<Body> {
  const tooLarge = refusal('frame-too-large', `request body exceeds ${max} bytes`);
  const declared = Number(req.headers['content-length'] ?? 0);
  if (!Number.isSafeInteger(declared) || declared > max) return Promise.resolve(tooLarge);
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let length = 0;
    const onData = (chunk: Buffer): void => {
      length += chunk.length;
      if (length <= max) return void chunks.push(chunk);
      req.off('data', onData);
      req.pause();
      resolve(tooLarge);
    };
    req.on('data', onData);
    req.once('end', () => resolve(ok(new Uint8Array(Buffer.concat(chunks, length)))));
    const aborted = (): void => resolve(refusal('malformed', 'request body aborted'));
    req.once('error', aborted);
    req.once('close', aborted);
  });
}

function verify(auth: HttpAuth, method: string, route: MailboxRoute, body: Uint8Array): boolean {
  const payload = httpSigningPayload(
    method,
    MAILBOX_ROUTES[route],
    auth.ts,
    auth.nonce,
    body,
    auth.topic,
    auth.endpoint,
  );
  try {
    return ed25519.verify(auth.sig, payload, auth.endpoint, { zip215: false });
  } catch {
    return false;
  }
}

function reply(res: ServerResponse, status: number, body: Uint8Array, extra: Record<string, string> = {}): void {
  res.writeHead(status, {
    'Content-Type': CBOR_CONTENT_TYPE,
    'Content-Length': String(body.length),
    'Cache-Control': 'no-store',
    ...extra,
  });
  res.end(body);
}

export class HttpMailbox {
  readonly #opts: HttpMailboxOptions;
  readonly #replay: ReplayGuard;
  readonly #limiters = new Map<string, RateLimiter>();

  constructor(options: HttpMailboxOptions) {
    this.#opts = options;
    this.#replay = new ReplayGuard(options.replay ?? DEFAULT_REPLAY_GUARD, options.now);
  }

  async handle(req: IncomingMessage, res: ServerResponse, pathname: string): Promise<void> {
    const route = ROUTES.get(pathname);
    if (route === undefined) return this.#refuse(res, 404, 'malformed', 'relay: no such mailbox route');
    if (req.method !== 'POST') return this.#refuse(res, 405, 'malformed', 'relay: use POST', { Allow: 'POST' });
    if (req.headers['content-type']?.split(';')[0]?.trim().toLowerCase() !== CBOR_CONTENT_TYPE) {
      return this.#refuse(res, 415, 'malformed', `relay: content-type must be ${CBOR_CONTENT_TYPE}`);
    }
    const body = await readBody(req, MAX_REQUEST_BODY[route]);
    if (!body.ok) return this.#refuse(res, 413, body.error.code, body.error.reason, { Connection: 'close' });
    this.#opts.tap?.('in', body.value);
    const answer = this.#process(route, req, body.value);
    if (answer.ok) {
      this.#opts.tap?.('out', answer.value);
      return reply(res, 200, answer.value);
    }
    this.#opts.log(`relay: http ${route} refused: ${answer.error.code}`);
    this.#refuse(res, HTTP_STATUS[answer.error.code], answer.error.code, answer.error.reason);
  }

  #process(route: MailboxRoute, req: IncomingMessage, body: Uint8Array): Answer {
    const header = req.headers[AUTH_HEADER];
    const auth = decodeAuthHeader(typeof header === 'string' ? header : undefined);
    if (!auth.ok) return auth;
    const checked = this.#authenticate(auth.value, route, body);
    if (!checked.ok) return checked;
    return this.#routes[route](auth.value, body);
  }

  /** Per route: decode the request, act on the mailbox, encode the answer. */
  readonly #routes: Readonly<Record<MailboxRoute, (auth: HttpAuth, body: Uint8Array) => Answer>> = {
    fetch: (auth, body) => {
      const request = decodeMailboxRequest('fetch', body);
      return request.ok ? encoded(this.#fetch(auth.topic, auth.endpoint, request.value)) : request;
    },
    ack: (auth, body) => {
      const request = decodeMailboxRequest('ack', body);
      return request.ok
        ? encoded({ acked: this.#opts.store.ack(auth.topic, auth.endpoint, request.value.ids) })
        : request;
    },
    send: (auth, body) => {
      const request = decodeMailboxRequest('send', body);
      if (!request.ok) return request;
      const sent = this.#opts.hub.submit(auth.topic, auth.endpoint, request.value.to, request.value.body);
      return sent.ok ? encoded({ id: sent.value }) : refusal(sent.error.code, sent.error.message);
    },
  };

  #authenticate(auth: HttpAuth, route: MailboxRoute, body: Uint8Array): Result<true, RelayHttpError> {
    const { now, hub } = this.#opts;
    if (!isFresh(auth.ts, now())) return refusal('stale', `timestamp outside ±${CLOCK_WINDOW_MS / 1000} s`);
    if (!hub.serves(auth.topic, auth.endpoint)) {
      return refusal('unknown-endpoint', 'endpoint is not a member admitted under this topic');
    }
    if (!verify(auth, 'POST', route, body)) return refusal('auth-failed', 'signature does not verify');
    const key = `${toHex(auth.topic)}:${toHex(auth.endpoint)}`;
    if (this.#limiter(key).check() !== 'accept') return refusal('rate-limited', 'rate limit exceeded');
    const seen = this.#replay.admit(key, toHex(auth.nonce), auth.ts);
    if (seen === 'replayed') return refusal('replayed', 'nonce already used');
    if (seen === 'full') return refusal('rate-limited', 'too many requests in the freshness window');
    return ok(true);
  }

  /** Frames after `after`, ascending, cut at MAX_FETCH_PAGE_BYTES (one frame at least). */
  #fetch(topic: Uint8Array, endpoint: Uint8Array, request: FetchRequest): FetchResponse {
    const pending = this.#opts.store.pending(topic, endpoint, request.after, request.limit + 1);
    const frames: FetchedFrame[] = [];
    let bytes = 0;
    for (const f of pending.slice(0, request.limit)) {
      if (frames.length > 0 && bytes + f.body.length > MAX_FETCH_PAGE_BYTES) break;
      frames.push({ id: f.id, from: f.sender, body: f.body });
      bytes += f.body.length;
    }
    return { frames, more: frames.length < pending.length };
  }

  #limiter(key: string): RateLimiter {
    let limiter = this.#limiters.get(key);
    if (limiter) this.#limiters.delete(key);
    else limiter = new RateLimiter(this.#opts.rateLimit, this.#opts.now);
    this.#limiters.set(key, limiter);
    if (this.#limiters.size > MAX_LIMITERS) this.#limiters.delete(this.#limiters.keys().next().value!);
    return limiter;
  }

  #refuse(
    res: ServerResponse,
    status: number,
    code: RelayHttpErrorCode,
    message: string,
    extra: Record<string, string> = {},
  ): void {
    reply(res, status, encodeMailboxBody({ code, message }), extra);
  }
}
