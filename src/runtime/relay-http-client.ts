/**
 * Client of the relay's HTTP mailbox API (core/relay-http.ts) for the service worker and,
 * later, the page: signs each request with the endpoint key (a `Signer`, so the key can stay
 * a non-extractable WebCrypto key or live in the crypto worker), posts canonical CBOR and
 * decodes the answer with the same bounds the relay applies. Every failure is a value:
 * `Network` (no answer), `HttpRefused` (the relay's typed refusal) or `BadResponse`.
 */
import {
  AUTH_HEADER,
  CBOR_CONTENT_TYPE,
  MAILBOX_ROUTES,
  MAX_FETCH_RESPONSE,
  decodeErrorBody,
  decodeMailboxResponse,
  encodeAuthHeader,
  encodeMailboxBody,
  httpSigningPayload,
  type MailboxRequest,
  type MailboxResponse,
  type MailboxRoute,
  type RelayHttpErrorCode,
} from '../core/relay-http.js';
import type { Clock, Random, Signer } from '../core/ports.js';
import { err, ok, type Result } from '../core/result.js';

export type RelayHttpClientError =
  | { readonly type: 'Network'; readonly reason: string }
  | {
      readonly type: 'HttpRefused';
      readonly status: number;
      readonly code: RelayHttpErrorCode | 'unknown';
      readonly message: string;
    }
  | { readonly type: 'BadResponse'; readonly reason: string };

export interface RelayHttpClientOptions {
  /** http(s)://host[:port][/prefix], see `httpBaseOf`. */
  readonly baseUrl: string;
  readonly topic: Uint8Array;
  /** The endpoint key; its public key is the endpoint id. */
  readonly signer: Signer;
  readonly clock: Clock;
  readonly random: Random;
  readonly fetch?: typeof fetch | undefined;
}

/** The HTTP origin of a relay named by its WebSocket URL: ws://host/ws → http://host. */
export function httpBaseOf(relayUrl: string): string | undefined {
  let url: URL;
  try {
    url = new URL(relayUrl);
  } catch {
    return undefined;
  }
  const scheme = { 'ws:': 'http:', 'wss:': 'https:', 'http:': 'http:', 'https:': 'https:' }[url.protocol];
  if (scheme === undefined) return undefined;
  const path = url.pathname.replace(/\/ws$/, '').replace(/\/+$/, '');
  return `${scheme}//${url.host}${path}`;
}

/** The `sov-auth` header value for one request; the signature covers route, time, nonce and body. */
export function signRelayRequest(route: MailboxRoute, body: Uint8Array, auth: RelayAuth): Promise<string> {
  return signRelayPath(MAILBOX_ROUTES[route], body, auth);
}

export type RelayAuth = {
  readonly topic: Uint8Array;
  readonly signer: Signer;
  readonly clock: Clock;
  readonly random: Random;
};

/** The `sov-auth` header for a POST to any signed relay route (mailbox or object store). */
export async function signRelayPath(path: string, body: Uint8Array, auth: RelayAuth): Promise<string> {
  const { topic, signer } = auth;
  const ts = auth.clock.now();
  const nonce = auth.random.bytes(16);
  const payload = httpSigningPayload('POST', path, ts, nonce, body, topic, signer.publicKey);
  const sig = await signer.sign(payload);
  return encodeAuthHeader({ topic, endpoint: signer.publicKey, ts, nonce, sig });
}

/** Reads a response body, refusing more than `max` bytes without buffering them. */
export async function readBounded(response: Response, max: number): Promise<Uint8Array | undefined> {
  if (Number(response.headers.get('content-length') ?? 0) > max) return undefined;
  if (!response.body) return new Uint8Array(0);
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let length = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    length += value.length;
    if (length > max) {
      await reader.cancel();
      return undefined;
    }
    chunks.push(value);
  }
  const out = new Uint8Array(length);
  let offset = 0;
  for (const c of chunks) {
    out.set(c, offset);
    offset += c.length;
  }
  return out;
}

/**
 * POSTs a signed CBOR body to one relay route and returns the answer's bytes, or the relay's
 * typed refusal; responses over `maxResponse` bytes are refused without buffering them.
 */
export async function postSigned(
  opts: RelayAuth & { readonly baseUrl: string; readonly fetch?: typeof fetch | undefined },
  path: string,
  body: Uint8Array,
  maxResponse: number,
): Promise<Result<Uint8Array, RelayHttpClientError>> {
  const header = await signRelayPath(path, body, opts);
  const doFetch = opts.fetch ?? ((input, init) => fetch(input, init));
  let response: Response;
  let bytes: Uint8Array | undefined;
  try {
    response = await doFetch(`${opts.baseUrl}${path}`, {
      method: 'POST',
      headers: { 'Content-Type': CBOR_CONTENT_TYPE, [AUTH_HEADER]: header },
      body: new Uint8Array(body),
      cache: 'no-store',
    });
    bytes = await readBounded(response, maxResponse);
  } catch (e) {
    return err({ type: 'Network', reason: `relay-http: ${(e as Error).message}` });
  }
  if (bytes === undefined) return err({ type: 'BadResponse', reason: 'relay-http: response too large' });
  if (!response.ok) {
    const refusal = decodeErrorBody(bytes);
    const { code, message } = refusal.ok ? refusal.value : { code: 'unknown' as const, message: response.statusText };
    return err({ type: 'HttpRefused', status: response.status, code, message });
  }
  return ok(bytes);
}

export class RelayHttpClient {
  readonly #opts: RelayHttpClientOptions;

  constructor(options: RelayHttpClientOptions) {
    this.#opts = options;
  }

  fetchFrames(after: number, limit: number): Promise<Result<MailboxResponse['fetch'], RelayHttpClientError>> {
    return this.#call('fetch', { after, limit });
  }

  ack(ids: readonly number[]): Promise<Result<MailboxResponse['ack'], RelayHttpClientError>> {
    return this.#call('ack', { ids });
  }

  send(to: Uint8Array, body: Uint8Array): Promise<Result<MailboxResponse['send'], RelayHttpClientError>> {
    return this.#call('send', { to, body });
  }

  async #call<R extends MailboxRoute>(
    route: R,
    request: MailboxRequest[R],
  ): Promise<Result<MailboxResponse[R], RelayHttpClientError>> {
    const answer = await postSigned(this.#opts, MAILBOX_ROUTES[route], encodeMailboxBody(request), MAX_FETCH_RESPONSE);
    if (!answer.ok) return answer;
    const decoded = decodeMailboxResponse(route, answer.value);
    return decoded.ok ? decoded : err({ type: 'BadResponse', reason: decoded.error.reason });
  }
}
