/**
 * What arrives on a relay session's socket, read before the hub acts on it (hub.ts): the raw
 * message as bytes, whether an auth message's signature holds, and whether undecodable input is
 * an oversize `send` (refused, the session kept) rather than garbage (the session cut).
 */
import { ed25519 } from '@noble/curves/ed25519.js';
import type { RawData } from 'ws';
import { isBytes } from '../core/bytes.js';
import { decodeCbor, isRecord } from '../core/cbor.js';
import { MAX_FRAME_BODY, MAX_RELAY_MESSAGE, relayAuthPayload, type EndpointToRelay } from '../core/relay-wire.js';

type AuthMessage = Extract<EndpointToRelay, { t: 'auth' }>;

export function verifyAuth(nonce: Uint8Array, msg: AuthMessage): boolean {
  try {
    return ed25519.verify(msg.sig, relayAuthPayload(nonce, msg.topic, msg.endpoint), msg.endpoint, { zip215: false });
  } catch {
    return false;
  }
}

export function toBytes(data: RawData): Uint8Array {
  if (Array.isArray(data)) return Buffer.concat(data);
  return data instanceof ArrayBuffer ? new Uint8Array(data) : data;
}

/** Tells an oversize `send` (non-fatal `frame-too-large`) apart from other malformed input. */
export function isOversizeSend(bytes: Uint8Array): boolean {
  const decoded = decodeCbor(bytes, MAX_RELAY_MESSAGE);
  if (!decoded.ok || !isRecord(decoded.value) || decoded.value['t'] !== 'send') return false;
  const body = decoded.value['body'];
  return isBytes(body) && body.length > MAX_FRAME_BODY;
}
