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
 *   authentication          relay/http-auth.ts: fresh timestamp, member, signature, rate, nonce
 *   request body            route decoder                                   `malformed`, `frame-too-large`
 *
 * Threats: the signature covers method, route, timestamp, nonce and the body's BLAKE3, so a
 * captured request can be neither redirected to another route nor altered, and replay is
 * refused by the nonce cache (replay-guard.ts) for as long as the timestamp is fresh. Rate
 * limiting counts verified requests only, so nobody can spend another endpoint's budget;
 * unauthenticated work per request is bounded by the body bound and one signature check.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  AUTH_HEADER,
  CBOR_CONTENT_TYPE,
  HTTP_STATUS,
  MAILBOX_ROUTES,
  MAX_FETCH_PAGE_BYTES,
  MAX_REQUEST_BODY,
  decodeAuthHeader,
  decodeMailboxRequest,
  encodeMailboxBody,
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
import type { RelayHub } from './hub.js';
import type { MailboxStore } from '../core/mailbox.js';
import { HttpAuthenticator, readBody, reply } from './http-auth.js';
import type { RateLimitOptions } from './rate-limit.js';
import type { ReplayGuardOptions } from './replay-guard.js';

export const MAILBOX_PREFIX = '/api/v1/mailbox/';

export interface HttpMailboxOptions {
  readonly hub: RelayHub;
  readonly store: MailboxStore;
  readonly now: () => number;
  readonly log: (line: string) => void;
  readonly rateLimit: RateLimitOptions;
  readonly replay?: ReplayGuardOptions | undefined;
  /** Shared with the other signed HTTP APIs, so one nonce cache and one rate budget cover them all. */
  readonly auth?: HttpAuthenticator | undefined;
}

const ROUTES = new Map<string, MailboxRoute>(
  Object.entries(MAILBOX_ROUTES).map(([route, path]) => [path, route as MailboxRoute]),
);

const refusal = (code: RelayHttpErrorCode, reason: string): Result<never, RelayHttpError> =>
  err({ type: 'RelayHttpError', code, reason: `relay: ${reason}` });

type Answer = Result<Uint8Array, RelayHttpError>;

const encoded = (value: MailboxResponse[MailboxRoute]): Answer => ok(encodeMailboxBody(value));

export class HttpMailbox {
  readonly #opts: HttpMailboxOptions;
  readonly #auth: HttpAuthenticator;

  constructor(options: HttpMailboxOptions) {
    this.#opts = options;
    this.#auth = options.auth ?? new HttpAuthenticator(options);
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
    const answer = this.#process(route, req, body.value);
    if (answer.ok) return reply(res, 200, answer.value);
    this.#opts.log(`relay: http ${route} refused: ${answer.error.code}`);
    this.#refuse(res, HTTP_STATUS[answer.error.code], answer.error.code, answer.error.reason);
  }

  #process(route: MailboxRoute, req: IncomingMessage, body: Uint8Array): Answer {
    const header = req.headers[AUTH_HEADER];
    const auth = decodeAuthHeader(typeof header === 'string' ? header : undefined);
    if (!auth.ok) return auth;
    const checked = this.#auth.check(auth.value, 'POST', MAILBOX_ROUTES[route], body);
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
