/**
 * WebCrypto-backed implementations of the core's ports, identical in browsers,
 * workers and Node 20: non-extractable Ed25519 signing keys, verification with
 * cached public keys, and randomness. Keeping secrets at rest (wrapping under the
 * machine key) is the key stores' business: storage/key-wrap.ts.
 */
import type { Random, Signer, Verifier } from '../core/ports.js';
import { toHex } from '../core/bytes.js';
import { retryingKeyGeneration } from '../storage/key-wrap.js';

export const webRandom: Random = {
  bytes: (length) => crypto.getRandomValues(new Uint8Array(length)),
};

/** Copies into a fresh ArrayBuffer-backed array, as WebCrypto's typings require. */
const buf = (bytes: Uint8Array): Uint8Array<ArrayBuffer> => new Uint8Array(bytes);

export type SigningIdentity = { readonly keys: CryptoKeyPair; readonly publicKey: Uint8Array };

/** Non-extractable unless a key store must wrap the private key to keep it (Node: sqlite-key-store.ts). */
export async function generateSigningIdentity(extractable = false): Promise<SigningIdentity> {
  const keys = await retryingKeyGeneration(() =>
    crypto.subtle.generateKey({ name: 'Ed25519' }, extractable, ['sign', 'verify']),
  );
  const publicKey = new Uint8Array(await crypto.subtle.exportKey('raw', keys.publicKey));
  return { keys, publicKey };
}

export function webSigner(identity: SigningIdentity): Signer {
  return {
    publicKey: identity.publicKey,
    sign: async (message) =>
      new Uint8Array(await crypto.subtle.sign({ name: 'Ed25519' }, identity.keys.privateKey, buf(message))),
  };
}

export function webVerifier(cacheSize = 1024): Verifier {
  const cache = new Map<string, Promise<CryptoKey | undefined>>();
  const importKey = (publicKey: Uint8Array): Promise<CryptoKey | undefined> => {
    const id = toHex(publicKey);
    let key = cache.get(id);
    if (!key) {
      if (cache.size >= cacheSize) cache.delete(cache.keys().next().value!);
      key = crypto.subtle
        .importKey('raw', buf(publicKey), { name: 'Ed25519' }, false, ['verify'])
        .catch(() => undefined);
      cache.set(id, key);
    }
    return key;
  };
  return {
    async verify(publicKey, message, signature) {
      if (publicKey.length !== 32 || signature.length !== 64) return false;
      const key = await importKey(publicKey);
      if (!key) return false;
      try {
        return await crypto.subtle.verify({ name: 'Ed25519' }, key, buf(signature), buf(message));
      } catch {
        return false;
      }
    },
  };
}
