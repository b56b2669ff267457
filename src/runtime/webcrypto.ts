/**
 * WebCrypto-backed implementations of the core's ports, identical in browsers,
 * workers and Node 20: non-extractable Ed25519 signing keys, verification with
 * cached public keys, randomness, and AES-GCM wrapping of secrets under a
 * non-extractable machine key (secrets that must be handed on later are kept as
 * wrapped bytes, never as non-extractable keys that could not be re-shared).
 */
import type { Random, Signer, Verifier } from '../core/ports.js';
import { toHex } from '../core/bytes.js';

export const webRandom: Random = {
  bytes: (length) => crypto.getRandomValues(new Uint8Array(length)),
};

/** Copies into a fresh ArrayBuffer-backed array, as WebCrypto's typings require. */
const buf = (bytes: Uint8Array): Uint8Array<ArrayBuffer> => new Uint8Array(bytes);

/** How many times an operation that draws fresh key material is tried (see `retryingKeyGeneration`). */
const KEYGEN_ATTEMPTS = 8;
const DRAW_FAILURES = new Set(['OperationError', 'EncapError', 'NotSupportedError']);

/**
 * Runs `make`, which draws a fresh random key, again when the engine fails it with an
 * `OperationError`. WebKitGTK 2.50 (whose WebCrypto runs on libgcrypt) fails Ed25519 and
 * X25519 key generation for keys whose private seed starts with a zero byte — about 1 in
 * 128 and 1 in 256 tries — and so does every HPKE encapsulation that draws such an
 * ephemeral key (@hpke/core reports that as its `NotSupportedError` or `EncapError`, the
 * engine's error folded into the message). A fresh draw succeeds; eight failures in a row
 * (~2^-56) are a real error, and an algorithm the engine lacks fails all eight at once.
 */
export async function retryingKeyGeneration<T>(make: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await make();
    } catch (e) {
      const drawFailed = e instanceof Error && DRAW_FAILURES.has(e.name);
      if (!drawFailed || attempt >= KEYGEN_ATTEMPTS) throw e;
    }
  }
}

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

export function generateWrappingKey(): Promise<CryptoKey> {
  return crypto.subtle.generateKey({ name: 'AES-GCM', length: 256 }, false, ['encrypt', 'decrypt']);
}

export type WrappedSecret = { readonly iv: Uint8Array; readonly ct: Uint8Array };

/** Wraps secret bytes under the machine key; `label` is bound as associated data. */
export async function wrapSecret(key: CryptoKey, label: string, secret: Uint8Array): Promise<WrappedSecret> {
  const iv = webRandom.bytes(12);
  const additionalData = new TextEncoder().encode(`sov/1/wrap/${label}`);
  const ct = await crypto.subtle.encrypt({ name: 'AES-GCM', iv: buf(iv), additionalData }, key, buf(secret));
  return { iv, ct: new Uint8Array(ct) };
}

export async function unwrapSecret(key: CryptoKey, label: string, wrapped: WrappedSecret): Promise<Uint8Array> {
  const additionalData = new TextEncoder().encode(`sov/1/wrap/${label}`);
  const plain = await crypto.subtle.decrypt(
    { name: 'AES-GCM', iv: buf(wrapped.iv), additionalData },
    key,
    buf(wrapped.ct),
  );
  return new Uint8Array(plain);
}
