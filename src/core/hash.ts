/**
 * The one place the core hashes and derives keys. BLAKE3 names events, sealed
 * envelopes and (later) object bytes; HKDF-SHA-256 derives purpose-bound keys
 * from shared secrets.
 *
 * `blake3()` runs hash-wasm's WASM BLAKE3 once it has been instantiated (about
 * 20× faster here than the pure-JS one for bulk bytes, and 5–10× for the
 * ~300-byte events of the state plane) and @noble/hashes' BLAKE3 until then, or
 * where WASM is not allowed. Both are the same function — the test suite
 * cross-checks them on the official vectors — so which one ran never changes a
 * byte. Callers that hash in bulk `await hashReady()` first.
 */
import { blake3 as nobleBlake3 } from '@noble/hashes/blake3.js';
import { hkdf } from '@noble/hashes/hkdf.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { createBLAKE3, type IHasher } from 'hash-wasm';
import { utf8 } from './bytes.js';

let wasm: IHasher | undefined;

const ready: Promise<boolean> = createBLAKE3().then(
  (hasher) => {
    wasm = hasher;
    return true;
  },
  () => false,
);

/** Resolves once the WASM hasher is in use (true) or known to be unavailable here (false). */
export function hashReady(): Promise<boolean> {
  return ready;
}

export function blake3(data: Uint8Array): Uint8Array {
  if (!wasm) return nobleBlake3(data);
  wasm.init();
  wasm.update(data);
  return wasm.digest('binary');
}

/** An incremental BLAKE3-256, for bytes that arrive in pieces (object files as they are written). */
export interface Blake3Stream {
  update(data: Uint8Array): void;
  digest(): Uint8Array;
}

/** A fresh incremental hasher: its own WASM instance where WASM runs, else @noble/hashes. */
export async function blake3Stream(): Promise<Blake3Stream> {
  const hasher = await createBLAKE3().catch(() => undefined);
  if (!hasher) {
    const noble = nobleBlake3.create();
    return { update: (d) => void noble.update(d), digest: () => noble.digest() };
  }
  hasher.init();
  return { update: (d) => void hasher.update(d), digest: () => hasher.digest('binary') };
}

/** The pure-JS BLAKE3, for cross-checks and for measuring the WASM one against it. */
export function blake3Reference(data: Uint8Array): Uint8Array {
  return nobleBlake3(data);
}

/** HKDF-SHA-256 with a label as `info`; `salt` is empty unless given. */
export function deriveKey(secret: Uint8Array, label: string, length = 32, salt?: Uint8Array): Uint8Array {
  return hkdf(sha256, secret, salt, utf8(label), length);
}
