/**
 * End-to-end sealing of frame bodies between machines of one group.
 *
 *   body = nonce(12) ‖ AES-256-GCM(K_frame, PeerMessage bytes,
 *                                  aad = "sov/1/frame" ‖ topic ‖ from ‖ to)
 *   K_frame = HKDF-SHA-256(group_secret, info = "sov/1/frame-key")
 *
 * The relay knows only the topic, which is a hash of the group secret, so it can
 * neither read nor forge a frame; binding sender and recipient into the AAD stops
 * it from re-addressing one. This is the interim channel of the walking skeleton:
 * per-recipient HPKE to endpoint keys (RFC 9180) replaces it with the trust
 * ceremonies, keeping this function's shape.
 */
import { gcm } from '@noble/ciphers/aes.js';
import { concat, isBytes, utf8 } from './bytes.js';
import { deriveKey } from './hash.js';
import type { Random } from './ports.js';
import { err, ok, type Result } from './result.js';

const AAD_LABEL = utf8('sov/1/frame');
const NONCE_BYTES = 12;

export type FrameError = { readonly type: 'FrameUndecryptable' };

export function frameKey(groupSecret: Uint8Array): Uint8Array {
  if (!isBytes(groupSecret, 32)) throw new Error('frame: group secret must be 32 bytes');
  return deriveKey(groupSecret, 'sov/1/frame-key');
}

/** Associated data binding topic, sender and recipient (exported for native AEAD adapters). */
export function frameAad(topic: Uint8Array, from: Uint8Array, to: Uint8Array): Uint8Array {
  return concat(AAD_LABEL, topic, from, to);
}

export function sealFrame(
  key: Uint8Array,
  topic: Uint8Array,
  from: Uint8Array,
  to: Uint8Array,
  message: Uint8Array,
  random: Random,
): Uint8Array {
  const nonce = random.bytes(NONCE_BYTES);
  return concat(nonce, gcm(key, nonce, frameAad(topic, from, to)).encrypt(message));
}

export function openFrame(
  key: Uint8Array,
  topic: Uint8Array,
  from: Uint8Array,
  to: Uint8Array,
  body: Uint8Array,
): Result<Uint8Array, FrameError> {
  if (body.length < NONCE_BYTES + 16) return err({ type: 'FrameUndecryptable' });
  try {
    const nonce = body.subarray(0, NONCE_BYTES);
    return ok(gcm(key, nonce, frameAad(topic, from, to)).decrypt(body.subarray(NONCE_BYTES)));
  } catch {
    return err({ type: 'FrameUndecryptable' });
  }
}
