/**
 * The one place the core hashes and derives keys. BLAKE3 names events and
 * sealed envelopes; HKDF-SHA-256 derives purpose-bound keys from shared secrets.
 * (Bulk object bytes will get a WASM BLAKE3 behind this same `blake3()`.)
 */
import { blake3 as nobleBlake3 } from '@noble/hashes/blake3.js';
import { hkdf } from '@noble/hashes/hkdf.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { utf8 } from './bytes.js';

export function blake3(data: Uint8Array): Uint8Array {
  return nobleBlake3(data);
}

/** HKDF-SHA-256 with a label as `info`; `salt` is empty unless given. */
export function deriveKey(secret: Uint8Array, label: string, length = 32, salt?: Uint8Array): Uint8Array {
  return hkdf(sha256, secret, salt, utf8(label), length);
}
