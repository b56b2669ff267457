/**
 * Names derived from public keys: fingerprints people compare, and the group
 * topic relays route by. `topic = BLAKE3(group_secret ‖ "sovereign-sync-v1")`
 * exactly (seed 004), so a relay learns a routing label and nothing that would
 * let it derive the secret or any key made from it.
 */
import { concat, toHex, utf8 } from './bytes.js';
import { blake3 } from './hash.js';

const TOPIC_LABEL = utf8('sovereign-sync-v1');

export function topicOf(groupSecret: Uint8Array): Uint8Array {
  return blake3(concat(groupSecret, TOPIC_LABEL));
}

/** 16-byte fingerprint of a signing public key. */
export function fingerprint(publicKey: Uint8Array): Uint8Array {
  return blake3(concat(utf8('sov/1/fingerprint'), publicKey)).subarray(0, 16);
}

/** Short human form, e.g. `3f2a-91c0-77de-0b14`: 64 bits, enough to tell machines apart on screen. */
export function shortFingerprint(publicKey: Uint8Array): string {
  const hex = toHex(fingerprint(publicKey)).slice(0, 16);
  return hex.match(/.{4}/g)!.join('-');
}
