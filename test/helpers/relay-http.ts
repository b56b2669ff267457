/**
 * Signed HTTP requests to the relay for tests (core/relay-http.ts): the
 * endpoints, topics and the auth header of the mailbox and object routes, with
 * knobs to get one part of the signature wrong on purpose.
 */
import { randomBytes } from 'node:crypto';
import { ed25519 } from '@noble/curves/ed25519.js';
import { encodeAuthHeader, httpSigningPayload } from '../../src/core/relay-http.js';
import { key, type Key } from './relay-client.js';

export const ALICE = key(1);
export const BOB = key(2);
export const CAROL = key(3);
export const DAVE = key(4);
export const TOPIC = new Uint8Array(32).fill(0xa1);
export const OTHER_TOPIC = new Uint8Array(32).fill(0xb2);

/** Ways to get a request wrong on purpose; the defaults sign it correctly. */
export interface Signing {
  readonly topic?: Uint8Array;
  readonly signedTopic?: Uint8Array;
  readonly ts?: number;
  readonly nonce?: Uint8Array;
  readonly signer?: Key;
  readonly signedMethod?: string;
  readonly signedPath?: string;
  readonly signedBody?: Uint8Array;
}

/** The auth header of a POST of `body` to `path` by `who`, signed as `s` says. */
export function authHeader(who: Key, path: string, body: Uint8Array, s: Signing = {}): string {
  const topic = s.topic ?? TOPIC;
  const ts = s.ts ?? Date.now();
  const nonce = s.nonce ?? new Uint8Array(randomBytes(16));
  const payload = httpSigningPayload(
    s.signedMethod ?? 'POST',
    s.signedPath ?? path,
    ts,
    nonce,
    s.signedBody ?? body,
    s.signedTopic ?? topic,
    who.id,
  );
  const sig = ed25519.sign(payload, (s.signer ?? who).secret);
  return encodeAuthHeader({ topic, endpoint: who.id, ts, nonce, sig });
}
