/**
 * Relay HTTP mailbox API, version 1: the batch path to the same store-and-forward
 * mailboxes the WebSocket protocol (relay-wire.ts) serves, for contexts that cannot hold a
 * socket open (a service worker woken by Background Sync). Every request and response body
 * is one canonical CBOR map (content-type application/cbor).
 *
 *   POST /api/v1/mailbox/fetch  {after: uint, limit: 1..500}   → {frames: [{id, from: 32B, body}], more: bool}
 *   POST /api/v1/mailbox/ack    {ids: uint[] (≤ MAX_ACK_IDS)}   → {acked: uint}
 *   POST /api/v1/mailbox/send   {to: 32B, body: ≤ MAX_FRAME_BODY} → {id: uint}
 *   refusal                     HTTP 4xx                        {code, message}
 *
 * Authentication: each request carries
 *   sov-auth: base64url(cbor({topic: 32B, endpoint: 32B, ts: uint ms, nonce: 16B, sig: 64B}))
 *   sig = Ed25519(endpoint key, "sov/1/relay-http" ‖ cbor([method, path, ts, nonce, BLAKE3(body)]) ‖ topic ‖ endpoint)
 * `path` is the route path above, not the URL a proxy may have prefixed, so the signature
 * binds the operation itself. The body hash binds the exact bytes; topic and endpoint close
 * the payload as in relay-auth, and the label keeps these signatures apart from every other
 * use of the endpoint key.
 *
 * Threats: a captured request can be replayed only while `ts` lies within ±CLOCK_WINDOW_MS
 * of the relay's clock, and the relay refuses a nonce it has seen from that endpoint within
 * the window. The endpoint must have authenticated over the WebSocket at least once under
 * the topic (the relay's membership record), so HTTP never opens new mailboxes. Every length
 * is bounded before decoding: the header, each body, and a fetched page.
 */
import { concat, fromBase64Url, isBytes, toBase64Url, utf8 } from './bytes.js';
import { decodeCbor, encodeCbor, isRecord } from './cbor.js';
import { blake3 } from './hash.js';
import { MAX_ACK_IDS, MAX_FRAME_BODY, MAX_RELAY_MESSAGE } from './relay-wire.js';
import { err, ok, type Result } from './result.js';

export const AUTH_HEADER = 'sov-auth';
export const CBOR_CONTENT_TYPE = 'application/cbor';
/** A request's `ts` must lie within this distance of the relay's clock. */
export const CLOCK_WINDOW_MS = 120_000;
export const MAX_FETCH_LIMIT = 500;
/** A fetched page stops adding frames past this many body bytes (it always holds one). */
export const MAX_FETCH_PAGE_BYTES = 4 * 1024 * 1024;
/** Largest fetch response: a full page plus the envelope of every frame in it. */
export const MAX_FETCH_RESPONSE = MAX_FETCH_PAGE_BYTES + MAX_FRAME_BODY + MAX_FETCH_LIMIT * 64;
/** Base64url of the header's CBOR map (~190 bytes) fits well inside this. */
const MAX_AUTH_HEADER = 512;
const MAX_SMALL_BODY = 64 * 1024;
const LABEL = utf8('sov/1/relay-http');

export const MAILBOX_ROUTES = {
  fetch: '/api/v1/mailbox/fetch',
  ack: '/api/v1/mailbox/ack',
  send: '/api/v1/mailbox/send',
} as const;
export type MailboxRoute = keyof typeof MAILBOX_ROUTES;

/** Largest request body each route accepts; larger is `frame-too-large` (413) unread. */
export const MAX_REQUEST_BODY: Readonly<Record<MailboxRoute, number>> = {
  fetch: MAX_SMALL_BODY,
  ack: MAX_SMALL_BODY,
  send: MAX_RELAY_MESSAGE,
};

export type RelayHttpErrorCode =
  | 'malformed'
  | 'auth-failed'
  | 'stale'
  | 'replayed'
  | 'unknown-endpoint'
  | 'frame-too-large'
  | 'mailbox-full'
  | 'unknown-recipient'
  | 'not-admitted'
  | 'rate-limited'
  | 'not-found'
  | 'hash-mismatch'
  | 'offset-mismatch'
  | 'object-too-large'
  | 'quota';

export const HTTP_STATUS: Readonly<Record<RelayHttpErrorCode, number>> = {
  malformed: 400,
  'auth-failed': 401,
  stale: 401,
  replayed: 401,
  'unknown-endpoint': 403,
  'unknown-recipient': 404,
  'mailbox-full': 409,
  'not-admitted': 403,
  'frame-too-large': 413,
  'rate-limited': 429,
  'not-found': 404,
  'hash-mismatch': 422,
  'offset-mismatch': 409,
  'object-too-large': 413,
  quota: 507,
};

export type RelayHttpError = {
  readonly type: 'RelayHttpError';
  readonly code: RelayHttpErrorCode;
  readonly reason: string;
};

export type HttpAuth = {
  readonly topic: Uint8Array;
  readonly endpoint: Uint8Array;
  readonly ts: number;
  readonly nonce: Uint8Array;
  readonly sig: Uint8Array;
};

export type FetchRequest = { readonly after: number; readonly limit: number };
export type AckRequest = { readonly ids: readonly number[] };
export type SendRequest = { readonly to: Uint8Array; readonly body: Uint8Array };
export type MailboxRequest = { fetch: FetchRequest; ack: AckRequest; send: SendRequest };

export type FetchedFrame = { readonly id: number; readonly from: Uint8Array; readonly body: Uint8Array };
export type FetchResponse = { readonly frames: readonly FetchedFrame[]; readonly more: boolean };
export type AckResponse = { readonly acked: number };
export type SendResponse = { readonly id: number };
export type MailboxResponse = { fetch: FetchResponse; ack: AckResponse; send: SendResponse };
export type ErrorBody = { readonly code: RelayHttpErrorCode; readonly message: string };

export const refuse = (code: RelayHttpErrorCode, reason: string): Result<never, RelayHttpError> =>
  err({ type: 'RelayHttpError', code, reason: `relay-http: ${reason}` });
const malformed = (reason: string): Result<never, RelayHttpError> => refuse('malformed', reason);

export function isUint(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;
}

function hasKeys(map: Record<string, unknown>, expected: readonly string[]): boolean {
  const actual = Object.keys(map);
  return actual.length === expected.length && expected.every((k) => k in map);
}

export function decodeMap(
  bytes: Uint8Array,
  max: number,
  fields: readonly string[],
): Result<Record<string, unknown>, RelayHttpError> {
  const decoded = decodeCbor(bytes, max);
  if (!decoded.ok) return malformed(decoded.error.reason);
  if (!isRecord(decoded.value)) return malformed('body is not a map');
  if (!hasKeys(decoded.value, fields)) return malformed(`fields must be ${fields.join(', ')}`);
  return ok(decoded.value);
}

/** The bytes an endpoint signs for one request. */
export function httpSigningPayload(
  method: string,
  path: string,
  ts: number,
  nonce: Uint8Array,
  body: Uint8Array,
  topic: Uint8Array,
  endpoint: Uint8Array,
): Uint8Array {
  return concat(LABEL, encodeCbor([method, path, ts, nonce, blake3(body)]), topic, endpoint);
}

export function encodeAuthHeader(auth: HttpAuth): string {
  const { topic, endpoint, ts, nonce, sig } = auth;
  return toBase64Url(encodeCbor({ topic, endpoint, ts, nonce, sig }));
}

export function decodeAuthHeader(value: string | undefined): Result<HttpAuth, RelayHttpError> {
  if (value === undefined) return malformed(`missing ${AUTH_HEADER} header`);
  if (value.length > MAX_AUTH_HEADER) return malformed(`${AUTH_HEADER} header too long`);
  const bytes = fromBase64Url(value);
  if (!bytes) return malformed(`${AUTH_HEADER} header is not base64url`);
  const decoded = decodeMap(bytes, MAX_AUTH_HEADER, ['topic', 'endpoint', 'ts', 'nonce', 'sig']);
  if (!decoded.ok) return decoded;
  const { topic, endpoint, ts, nonce, sig } = decoded.value;
  if (!isBytes(topic, 32) || !isBytes(endpoint, 32) || !isBytes(nonce, 16) || !isBytes(sig, 64) || !isUint(ts)) {
    return malformed(`${AUTH_HEADER} field types or sizes`);
  }
  return ok({ topic, endpoint, ts, nonce, sig });
}

/** True when `ts` lies within ±CLOCK_WINDOW_MS of `now`. */
export function isFresh(ts: number, now: number, windowMs = CLOCK_WINDOW_MS): boolean {
  return Math.abs(now - ts) <= windowMs;
}

export function encodeMailboxBody(
  value: MailboxRequest[MailboxRoute] | MailboxResponse[MailboxRoute] | ErrorBody,
): Uint8Array {
  return encodeCbor(value);
}

function decodeFetchRequest(bytes: Uint8Array): Result<FetchRequest, RelayHttpError> {
  const m = decodeMap(bytes, MAX_SMALL_BODY, ['after', 'limit']);
  if (!m.ok) return m;
  const { after, limit } = m.value;
  if (!isUint(after)) return malformed('fetch: after must be a uint');
  if (!isUint(limit) || limit < 1 || limit > MAX_FETCH_LIMIT)
    return malformed(`fetch: limit must be 1..${MAX_FETCH_LIMIT}`);
  return ok({ after, limit });
}

function decodeAckRequest(bytes: Uint8Array): Result<AckRequest, RelayHttpError> {
  const m = decodeMap(bytes, MAX_SMALL_BODY, ['ids']);
  if (!m.ok) return m;
  const { ids } = m.value;
  if (!Array.isArray(ids) || ids.length > MAX_ACK_IDS || !ids.every(isUint)) {
    return malformed(`ack: ids must be at most ${MAX_ACK_IDS} uints`);
  }
  return ok({ ids });
}

function decodeSendRequest(bytes: Uint8Array): Result<SendRequest, RelayHttpError> {
  const m = decodeMap(bytes, MAX_REQUEST_BODY.send, ['to', 'body']);
  if (!m.ok) return m;
  const { to, body } = m.value;
  if (!isBytes(to, 32) || !isBytes(body)) return malformed('send: to must be 32 bytes, body bytes');
  if (body.length > MAX_FRAME_BODY) return refuse('frame-too-large', `send: body exceeds ${MAX_FRAME_BODY} bytes`);
  return ok({ to, body });
}

const REQUEST_DECODERS: { [R in MailboxRoute]: (bytes: Uint8Array) => Result<MailboxRequest[R], RelayHttpError> } = {
  fetch: decodeFetchRequest,
  ack: decodeAckRequest,
  send: decodeSendRequest,
};

export function decodeMailboxRequest<R extends MailboxRoute>(
  route: R,
  bytes: Uint8Array,
): Result<MailboxRequest[R], RelayHttpError> {
  return REQUEST_DECODERS[route](bytes);
}

function decodeFrame(value: unknown): FetchedFrame | undefined {
  if (!isRecord(value) || !hasKeys(value, ['id', 'from', 'body'])) return undefined;
  const { id, from, body } = value;
  if (!isUint(id) || !isBytes(from, 32) || !isBytes(body) || body.length > MAX_FRAME_BODY) return undefined;
  return { id, from, body };
}

function decodeFetchResponse(bytes: Uint8Array): Result<FetchResponse, RelayHttpError> {
  const m = decodeMap(bytes, MAX_FETCH_RESPONSE, ['frames', 'more']);
  if (!m.ok) return m;
  const { frames, more } = m.value;
  if (!Array.isArray(frames) || frames.length > MAX_FETCH_LIMIT || typeof more !== 'boolean') {
    return malformed('fetch response: fields');
  }
  const decoded: FetchedFrame[] = [];
  for (const f of frames) {
    const frame = decodeFrame(f);
    if (!frame) return malformed('fetch response: frame');
    if (decoded.length > 0 && frame.id <= decoded[decoded.length - 1]!.id)
      return malformed('fetch response: ids not ascending');
    decoded.push(frame);
  }
  return ok({ frames: decoded, more });
}

function decodeCount<K extends string>(bytes: Uint8Array, field: K): Result<Record<K, number>, RelayHttpError> {
  const m = decodeMap(bytes, MAX_SMALL_BODY, [field]);
  if (!m.ok) return m;
  const value = m.value[field];
  if (!isUint(value)) return malformed(`response: ${field} must be a uint`);
  return ok({ [field]: value } as Record<K, number>);
}

const RESPONSE_DECODERS: { [R in MailboxRoute]: (bytes: Uint8Array) => Result<MailboxResponse[R], RelayHttpError> } = {
  fetch: decodeFetchResponse,
  ack: (bytes) => decodeCount(bytes, 'acked'),
  send: (bytes) => decodeCount(bytes, 'id'),
};

export function decodeMailboxResponse<R extends MailboxRoute>(
  route: R,
  bytes: Uint8Array,
): Result<MailboxResponse[R], RelayHttpError> {
  return RESPONSE_DECODERS[route](bytes);
}

const CODES = new Set<string>(Object.keys(HTTP_STATUS));

export function decodeErrorBody(bytes: Uint8Array): Result<ErrorBody, RelayHttpError> {
  const m = decodeMap(bytes, MAX_SMALL_BODY, ['code', 'message']);
  if (!m.ok) return m;
  const { code, message } = m.value;
  if (typeof code !== 'string' || !CODES.has(code) || typeof message !== 'string')
    return malformed('error body: fields');
  return ok({ code: code as RelayHttpErrorCode, message: message.slice(0, 512) });
}
