/**
 * Relay wire protocol, version 1 (`sov-relay/1`): the messages a relay and an
 * endpoint exchange over one WebSocket, each a single binary message holding one
 * canonical CBOR map with a string field `t`.
 *
 *   relay → endpoint  challenge {t, v:1, nonce: 32B, relay: 32B}     relay = the relay's Ed25519 public key
 *   endpoint → relay  auth      {t, topic: 32B, endpoint: 32B, sig: 64B, cnonce: 32B [, invite: 16B]}
 *                     sig = Ed25519(endpoint key, "sov/1/relay-auth" ‖ nonce ‖ topic ‖ endpoint)
 *                     invite: the invitation id of a pairing ticket, for a joiner not yet admitted
 *   relay → endpoint  ready     {t, endpoint: 32B, proof: 64B [, admission: uint]}
 *                     proof = Ed25519(relay key, "sov/1/relay-proof" ‖ nonce ‖ cnonce ‖ topic ‖ endpoint)
 *                     admission: the version of the topic's admission list in force, if any — an
 *                     admin's next list is numbered one above it (a counter, not a clock)
 *   endpoint → relay  send      {t, to: 32B, body: bytes}          store-and-forward, opaque body
 *   relay → endpoint  frame     {t, id: uint, from: 32B, body: bytes}
 *   endpoint → relay  ack       {t, ids: uint[]}                   drop delivered frames from the mailbox
 *   endpoint → relay  admit     {t, record: bytes}                 an admin-signed admission list (core/admission.ts)
 *   relay → endpoint  admitted  {t, version: uint}                 the list now in force for this topic, to
 *                     every session of the topic whenever a list is taken
 *   relay → endpoint  error     {t, code: string, message: string} the relay closes after a fatal one
 *   relay → endpoint  ping      {t, n: uint}                       liveness, once per heartbeat round
 *   endpoint → relay  pong      {t, n: uint}                       the application's answer (same n)
 *                     A WebSocket pong proves only the browser's network stack
 *                     is alive; a frozen tab, or a socket whose page went
 *                     offline with data queued (Chromium then holds the close
 *                     frame back yet keeps answering protocol pings), still
 *                     sends those. The relay cuts a session that misses one
 *                     application pong, so it stores frames instead of
 *                     forwarding them into a session nobody reads.
 *
 * The blind sequencer (core/mls/sequencer.ts), for admitted members only:
 *   endpoint → relay  commit    {t, rid: uint, bundle: bytes}      a commit bundle (core/mls/bundle.ts)
 *   relay → endpoint  sequenced {t, rid, receipt: bytes}           accepted; the signed receipt
 *   relay → endpoint  refused   {t, rid, code: string, reason: string, receipt: bytes, bundle: bytes}
 *                     code = a SequencerRejection type; for EpochTaken, receipt and bundle are the winner's
 *                     (empty otherwise)
 *   endpoint → relay  commits   {t, rid, group: bytes, from: uint} accepted commits of a group from an epoch on
 *   relay → endpoint  commit-log {t, rid, items: [[receipt, bundle]]} at most MAX_COMMIT_PAGE, ascending
 *   relay → endpoint  accepted  {t, receipt: bytes, bundle: bytes}  pushed to the topic's other live members
 *
 * The relay routes by (topic, endpoint id) only; bodies are end-to-end sealed by
 * the endpoints and never interpreted here. An endpoint pins the relay's key (the
 * founder on first contact, a joiner from its ticket) and refuses a relay whose
 * proof does not verify. Every length is bounded before use.
 */
import { isBytes, utf8, concat } from './bytes.js';
import { decodeCbor, encodeCbor, isRecord } from './cbor.js';
import { MAX_ADMISSION_BYTES } from './admission.js';
import { err, ok, type Result } from './result.js';

export const RELAY_PROTOCOL_VERSION = 1;
/** Largest opaque body a relay accepts in one frame. */
export const MAX_FRAME_BODY = 1024 * 1024;
/** Largest whole relay message (body plus envelope). */
export const MAX_RELAY_MESSAGE = MAX_FRAME_BODY + 1024;
export const MAX_ACK_IDS = 4096;
const AUTH_LABEL = utf8('sov/1/relay-auth');
const PROOF_LABEL = utf8('sov/1/relay-proof');
/**
 * A signed admission list as the relay takes it: the list's own bound (admission.ts
 * MAX_ADMISSION_BYTES), so a list of the most machines a mesh may admit can be pushed.
 */
export const MAX_ADMISSION_RECORD = MAX_ADMISSION_BYTES;
/** A commit bundle's bound (core/mls/bundle.ts MAX_BUNDLE_BYTES). */
export const MAX_WIRE_BUNDLE = 512 * 1024;
export const MAX_COMMIT_PAGE = 64;
const MAX_WIRE_GROUP = 255;

export type RelayToEndpoint =
  | { readonly t: 'challenge'; readonly v: number; readonly nonce: Uint8Array; readonly relay: Uint8Array }
  | { readonly t: 'ready'; readonly endpoint: Uint8Array; readonly proof: Uint8Array; readonly admission?: number }
  | { readonly t: 'admitted'; readonly version: number }
  | { readonly t: 'frame'; readonly id: number; readonly from: Uint8Array; readonly body: Uint8Array }
  | { readonly t: 'error'; readonly code: RelayErrorCode; readonly message: string }
  | { readonly t: 'ping'; readonly n: number }
  | { readonly t: 'sequenced'; readonly rid: number; readonly receipt: Uint8Array }
  | {
      readonly t: 'refused';
      readonly rid: number;
      readonly code: string;
      readonly reason: string;
      readonly receipt: Uint8Array;
      readonly bundle: Uint8Array;
    }
  | { readonly t: 'commit-log'; readonly rid: number; readonly items: readonly [Uint8Array, Uint8Array][] }
  | { readonly t: 'accepted'; readonly receipt: Uint8Array; readonly bundle: Uint8Array };

export type EndpointToRelay =
  | {
      readonly t: 'auth';
      readonly topic: Uint8Array;
      readonly endpoint: Uint8Array;
      readonly sig: Uint8Array;
      readonly cnonce: Uint8Array;
      readonly invite?: Uint8Array;
    }
  | { readonly t: 'admit'; readonly record: Uint8Array }
  | { readonly t: 'send'; readonly to: Uint8Array; readonly body: Uint8Array }
  | { readonly t: 'ack'; readonly ids: readonly number[] }
  | { readonly t: 'pong'; readonly n: number }
  | { readonly t: 'commit'; readonly rid: number; readonly bundle: Uint8Array }
  | { readonly t: 'commits'; readonly rid: number; readonly group: Uint8Array; readonly from: number };

export type RelayErrorCode =
  | 'malformed'
  | 'auth-failed'
  | 'not-authenticated'
  | 'frame-too-large'
  | 'rate-limited'
  | 'mailbox-full'
  | 'unknown-recipient'
  | 'not-admitted'
  | 'admission-refused'
  | 'not-a-member';

export type RelayWireError = { readonly type: 'MalformedFrame'; readonly reason: string };

const malformed = (reason: string): Result<never, RelayWireError> =>
  err({ type: 'MalformedFrame', reason: `relay-wire: ${reason}` });

/** The bytes an endpoint signs to answer a challenge. */
export function relayAuthPayload(nonce: Uint8Array, topic: Uint8Array, endpoint: Uint8Array): Uint8Array {
  return concat(AUTH_LABEL, nonce, topic, endpoint);
}

/** The bytes the relay signs in `ready`, proving it holds the key the endpoint pinned. */
export function relayProofPayload(
  nonce: Uint8Array,
  cnonce: Uint8Array,
  topic: Uint8Array,
  endpoint: Uint8Array,
): Uint8Array {
  return concat(PROOF_LABEL, nonce, cnonce, topic, endpoint);
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
    case 'auth': {
      const invited = 'invite' in m;
      const fields = ['t', 'topic', 'endpoint', 'sig', 'cnonce', ...(invited ? ['invite'] : [])];
      if (!keys(m, fields)) return malformed('auth: fields');
      const { topic, endpoint, sig, cnonce, invite } = m;
      if (!isBytes(topic, 32) || !isBytes(endpoint, 32) || !isBytes(sig, 64) || !isBytes(cnonce, 32)) {
        return malformed('auth: field sizes');
      }
      if (invited && !isBytes(invite, 16)) return malformed('auth: invite size');
      return ok({ t: 'auth', topic, endpoint, sig, cnonce, ...(invited ? { invite: invite as Uint8Array } : {}) });
    }
    case 'admit':
      if (!keys(m, ['t', 'record']) || !isBytes(m['record']) || m['record'].length > MAX_ADMISSION_RECORD) {
        return malformed('admit: fields');
      }
      return ok({ t: 'admit', record: m['record'] });
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
    case 'pong':
      if (!keys(m, ['t', 'n']) || !isUint(m['n'])) return malformed('pong: fields');
      return ok({ t: 'pong', n: m['n'] });
    case 'commit':
      if (!keys(m, ['t', 'rid', 'bundle']) || !isUint(m['rid']) || !isBytes(m['bundle'])) {
        return malformed('commit: fields');
      }
      if (m['bundle'].length > MAX_WIRE_BUNDLE) return malformed('commit: bundle exceeds limit');
      return ok({ t: 'commit', rid: m['rid'], bundle: m['bundle'] });
    case 'commits': {
      if (!keys(m, ['t', 'rid', 'group', 'from']) || !isUint(m['rid']) || !isUint(m['from'])) {
        return malformed('commits: fields');
      }
      const group = m['group'];
      if (!isBytes(group) || group.length === 0 || group.length > MAX_WIRE_GROUP) return malformed('commits: group');
      return ok({ t: 'commits', rid: m['rid'], group, from: m['from'] });
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
      if (!keys(m, ['t', 'v', 'nonce', 'relay']) || !isUint(m['v']) || !isBytes(m['nonce'], 32)) {
        return malformed('challenge: fields');
      }
      if (!isBytes(m['relay'], 32)) return malformed('challenge: relay key');
      return ok({ t: 'challenge', v: m['v'], nonce: m['nonce'], relay: m['relay'] });
    case 'ready': {
      const inForce = m['admission'];
      const fields = inForce === undefined ? ['t', 'endpoint', 'proof'] : ['t', 'endpoint', 'proof', 'admission'];
      if (!keys(m, fields) || !isBytes(m['endpoint'], 32) || !isBytes(m['proof'], 64)) {
        return malformed('ready: fields');
      }
      if (inForce !== undefined && !isUint(inForce)) return malformed('ready: admission version');
      const ready = { t: 'ready' as const, endpoint: m['endpoint'], proof: m['proof'] };
      return ok(inForce === undefined ? ready : { ...ready, admission: inForce });
    }
    case 'admitted':
      if (!keys(m, ['t', 'version']) || !isUint(m['version'])) return malformed('admitted: fields');
      return ok({ t: 'admitted', version: m['version'] });
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
    case 'ping':
      if (!keys(m, ['t', 'n']) || !isUint(m['n'])) return malformed('ping: fields');
      return ok({ t: 'ping', n: m['n'] });
    case 'sequenced':
      if (!keys(m, ['t', 'rid', 'receipt']) || !isUint(m['rid']) || !isBytes(m['receipt'])) {
        return malformed('sequenced: fields');
      }
      return ok({ t: 'sequenced', rid: m['rid'], receipt: m['receipt'] });
    case 'refused': {
      const { rid, code, reason, receipt, bundle } = m;
      if (!keys(m, ['t', 'rid', 'code', 'reason', 'receipt', 'bundle']) || !isUint(rid)) return malformed('refused');
      if (typeof code !== 'string' || typeof reason !== 'string' || !isBytes(receipt) || !isBytes(bundle)) {
        return malformed('refused: field types');
      }
      return ok({ t: 'refused', rid, code: code.slice(0, 64), reason: reason.slice(0, 512), receipt, bundle });
    }
    case 'commit-log': {
      const { rid, items } = m;
      if (!keys(m, ['t', 'rid', 'items']) || !isUint(rid) || !Array.isArray(items)) return malformed('commit-log');
      if (items.length > MAX_COMMIT_PAGE) return malformed('commit-log: too many items');
      const pairs = items.filter(
        (i): i is [Uint8Array, Uint8Array] => Array.isArray(i) && i.length === 2 && isBytes(i[0]) && isBytes(i[1]),
      );
      if (pairs.length !== items.length) return malformed('commit-log: items');
      return ok({ t: 'commit-log', rid, items: pairs });
    }
    case 'accepted':
      if (!keys(m, ['t', 'receipt', 'bundle']) || !isBytes(m['receipt']) || !isBytes(m['bundle'])) {
        return malformed('accepted: fields');
      }
      return ok({ t: 'accepted', receipt: m['receipt'], bundle: m['bundle'] });
    default:
      return malformed(`unknown message type`);
  }
}
