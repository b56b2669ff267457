/**
 * Relay wire protocol, version 1 (`sov-relay/1`): the messages a relay and an
 * endpoint exchange over one WebSocket, each a single binary message holding one
 * canonical CBOR map with a string field `t`.
 *
 *   relay → endpoint  challenge {t, v:1, nonce: 32B}
 *   endpoint → relay  auth      {t, topic: 32B, endpoint: 32B, sig: 64B}
 *                     sig = Ed25519(endpoint key, "sov/1/relay-auth" ‖ nonce ‖ topic ‖ endpoint)
 *   relay → endpoint  ready     {t, endpoint: 32B}
 *   endpoint → relay  send      {t, to: 32B, body: bytes}          store-and-forward, opaque body
 *   relay → endpoint  frame     {t, id: uint, from: 32B, body: bytes}
 *   endpoint → relay  ack       {t, ids: uint[]}                   drop delivered frames from the mailbox
 *   relay → endpoint  error     {t, code: string, message: string} the relay closes after a fatal one
 *
 * The relay routes by (topic, endpoint id) only; bodies are end-to-end sealed by
 * the endpoints and never interpreted here. Every length is bounded before use.
 */
import { isBytes, utf8, concat } from './bytes.js';
import { decodeCbor, encodeCbor, isRecord } from './cbor.js';
import { err, ok, type Result } from './result.js';

export const RELAY_PROTOCOL_VERSION = 1;
/** Largest opaque body a relay accepts in one frame. */
export const MAX_FRAME_BODY = 1024 * 1024;
/** Largest whole relay message (body plus envelope). */
export const MAX_RELAY_MESSAGE = MAX_FRAME_BODY + 1024;
export const MAX_ACK_IDS = 4096;
const AUTH_LABEL = utf8('sov/1/relay-auth');

export type RelayToEndpoint =
  | { readonly t: 'challenge'; readonly v: number; readonly nonce: Uint8Array }
  | { readonly t: 'ready'; readonly endpoint: Uint8Array }
  | { readonly t: 'frame'; readonly id: number; readonly from: Uint8Array; readonly body: Uint8Array }
  | { readonly t: 'error'; readonly code: RelayErrorCode; readonly message: string };

export type EndpointToRelay =
  | { readonly t: 'auth'; readonly topic: Uint8Array; readonly endpoint: Uint8Array; readonly sig: Uint8Array }
  | { readonly t: 'send'; readonly to: Uint8Array; readonly body: Uint8Array }
  | { readonly t: 'ack'; readonly ids: readonly number[] };

export type RelayErrorCode =
  | 'malformed'
  | 'auth-failed'
  | 'not-authenticated'
  | 'frame-too-large'
  | 'rate-limited'
  | 'mailbox-full'
  | 'unknown-recipient';

export type RelayWireError = { readonly type: 'MalformedFrame'; readonly reason: string };

const malformed = (reason: string): Result<never, RelayWireError> =>
  err({ type: 'MalformedFrame', reason: `relay-wire: ${reason}` });

/** The bytes an endpoint signs to answer a challenge. */
export function relayAuthPayload(nonce: Uint8Array, topic: Uint8Array, endpoint: Uint8Array): Uint8Array {
  return concat(AUTH_LABEL, nonce, topic, endpoint);
}

export function encodeRelayMessage(message: RelayToEndpoint | EndpointToRelay): Uint8Array {
  return encodeCbor(message);
}

function isUint(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;
}

function keys(map: Record<string, unknown>, expected: readonly string[]): boolean {
  const actual = Object.keys(map);
  return actual.length === expected.length && expected.every((k) => k in map);
}

function decodeMap(bytes: Uint8Array): Result<Record<string, unknown>, RelayWireError> {
  const decoded = decodeCbor(bytes, MAX_RELAY_MESSAGE);
  if (!decoded.ok) return malformed(decoded.error.reason);
  if (!isRecord(decoded.value) || typeof decoded.value['t'] !== 'string') return malformed('not a tagged map');
  return ok(decoded.value);
}

export function decodeEndpointMessage(bytes: Uint8Array): Result<EndpointToRelay, RelayWireError> {
  const decoded = decodeMap(bytes);
  if (!decoded.ok) return decoded;
  const m = decoded.value;
  switch (m['t']) {
    case 'auth':
      if (!keys(m, ['t', 'topic', 'endpoint', 'sig'])) return malformed('auth: fields');
      if (!isBytes(m['topic'], 32) || !isBytes(m['endpoint'], 32) || !isBytes(m['sig'], 64)) {
        return malformed('auth: field sizes');
      }
      return ok({ t: 'auth', topic: m['topic'], endpoint: m['endpoint'], sig: m['sig'] });
    case 'send':
      if (!keys(m, ['t', 'to', 'body'])) return malformed('send: fields');
      if (!isBytes(m['to'], 32) || !isBytes(m['body'])) return malformed('send: field types');
      if (m['body'].length > MAX_FRAME_BODY) return malformed('send: body exceeds limit');
      return ok({ t: 'send', to: m['to'], body: m['body'] });
    case 'ack': {
      if (!keys(m, ['t', 'ids'])) return malformed('ack: fields');
      const ids = m['ids'];
      if (!Array.isArray(ids) || ids.length > MAX_ACK_IDS || !ids.every(isUint)) return malformed('ack: ids');
      return ok({ t: 'ack', ids });
    }
    default:
      return malformed(`unknown message type`);
  }
}

export function decodeRelayMessage(bytes: Uint8Array): Result<RelayToEndpoint, RelayWireError> {
  const decoded = decodeMap(bytes);
  if (!decoded.ok) return decoded;
  const m = decoded.value;
  switch (m['t']) {
    case 'challenge':
      if (!keys(m, ['t', 'v', 'nonce']) || !isUint(m['v']) || !isBytes(m['nonce'], 32)) {
        return malformed('challenge: fields');
      }
      return ok({ t: 'challenge', v: m['v'], nonce: m['nonce'] });
    case 'ready':
      if (!keys(m, ['t', 'endpoint']) || !isBytes(m['endpoint'], 32)) return malformed('ready: fields');
      return ok({ t: 'ready', endpoint: m['endpoint'] });
    case 'frame':
      if (!keys(m, ['t', 'id', 'from', 'body']) || !isUint(m['id']) || !isBytes(m['from'], 32) || !isBytes(m['body'])) {
        return malformed('frame: fields');
      }
      return ok({ t: 'frame', id: m['id'], from: m['from'], body: m['body'] });
    case 'error':
      if (!keys(m, ['t', 'code', 'message']) || typeof m['code'] !== 'string' || typeof m['message'] !== 'string') {
        return malformed('error: fields');
      }
      return ok({ t: 'error', code: m['code'] as RelayErrorCode, message: m['message'].slice(0, 512) });
    default:
      return malformed(`unknown message type`);
  }
}
