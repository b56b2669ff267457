/**
 * How a machine keeps its private keys at rest, per key type.
 *
 * A browser keeps a non-extractable CryptoKey by handing it to IndexedDB, which
 * structured-clones it. Not every engine can clone every key type: WebKit (Safari,
 * WebKitGTK 2.50) stores an X25519 CryptoKey but reads the whole record back as
 * `null` ("Unable to deserialize data"), while Ed25519, AES-GCM, ECDSA and HMAC keys
 * round-trip. So each key type is probed once (`probeKeyKeeping`): a type whose
 * non-extractable key survives `structuredClone` is kept as the key itself; any
 * other is generated extractable only long enough to export it as PKCS#8, kept as
 * those bytes wrapped (AES-GCM, labelled) under the machine's non-extractable
 * wrapping key, and imported back non-extractable on every read (`unwrapPair`).
 * The SQLite key store of a Node machine wraps every pair this way, since Node
 * cannot store a CryptoKey at all.
 *
 * The wrapping key itself must be clonable: without it there is no non-extractable
 * root, and the store refuses to run rather than keep keys in the clear.
 */
import { retryingKeyGeneration, unwrapSecret, wrapSecret, type WrappedSecret } from './key-wrap.js';

/** The asymmetric key types a machine identity holds. */
export type PairAlgorithm = 'Ed25519' | 'X25519';

/** For each key type: kept as a CryptoKey (`key`) or as wrapped PKCS#8 bytes (`wrapped`). */
export type KeyKeeping = { readonly [A in PairAlgorithm]: 'key' | 'wrapped' };

/** Every pair wrapped: what a store that cannot keep CryptoKeys (SQLite in Node) uses. */
export const WRAP_ALL: KeyKeeping = { Ed25519: 'wrapped', X25519: 'wrapped' };

/** A key pair at rest as bytes: its raw public key and its PKCS#8 private key wrapped under the machine key. */
export type WrappedPair = { readonly pub: Uint8Array; readonly priv: WrappedSecret };

const USAGES: { readonly [A in PairAlgorithm]: { private: KeyUsage[]; public: KeyUsage[] } } = {
  Ed25519: { private: ['sign'], public: ['verify'] },
  X25519: { private: ['deriveBits'], public: [] },
};

const copy = (bytes: Uint8Array): Uint8Array<ArrayBuffer> => new Uint8Array(bytes);

/** The structured clone the store's engine applies to what it keeps (IndexedDB uses the same algorithm). */
export type Clone = <T>(value: T) => T;

/**
 * Decides how each key type is kept in this engine: a freshly generated
 * non-extractable key that comes back from `clone` as a CryptoKey of its type is
 * kept as a key. Throws, with the reason, when the engine lacks a key type entirely
 * or cannot clone an AES-GCM key (no safe root to wrap the others under).
 */
export async function probeKeyKeeping(clone: Clone = structuredClone): Promise<KeyKeeping> {
  const wrapping = await generate('AES-GCM', () =>
    crypto.subtle.generateKey({ name: 'AES-GCM', length: 256 }, false, ['encrypt', 'decrypt']),
  );
  if (!survives(clone, wrapping, 'AES-GCM')) {
    throw new Error(
      'key store: this browser cannot keep a non-extractable AES-GCM key in its storage, so it cannot protect this machine’s keys',
    );
  }
  const keeping = async (algorithm: PairAlgorithm): Promise<'key' | 'wrapped'> => {
    const pair = await generate(
      algorithm,
      () => crypto.subtle.generateKey({ name: algorithm }, false, USAGES[algorithm].private) as Promise<CryptoKeyPair>,
    );
    return survives(clone, pair.privateKey, algorithm) ? 'key' : 'wrapped';
  };
  return { Ed25519: await keeping('Ed25519'), X25519: await keeping('X25519') };
}

/** Runs a key generation, turning "this engine has no such algorithm" into a message that says what is needed. */
async function generate<T>(algorithm: string, make: () => Promise<T>): Promise<T> {
  try {
    return await retryingKeyGeneration(make);
  } catch (e) {
    throw new Error(`${missingAlgorithmMessage(algorithm)} (${(e as Error).name})`, { cause: e });
  }
}

/** What a user is told when WebCrypto lacks an algorithm the machine's keys need. */
export function missingAlgorithmMessage(algorithm: string): string {
  return (
    `this browser's WebCrypto has no ${algorithm} keys, which this machine's identity needs: ` +
    'use Safari 17 or later, Firefox 130 or later, or Chrome/Edge 137 or later'
  );
}

function survives(clone: Clone, key: CryptoKey, algorithm: string): boolean {
  try {
    const back = clone(key) as unknown;
    return back instanceof CryptoKey && back.algorithm.name === algorithm && back.extractable === key.extractable;
  } catch {
    return false;
  }
}

/** Wraps an extractable pair's private key (PKCS#8) under `root`, labelled by its role, and keeps its raw public key. */
export async function wrapPair(root: CryptoKey, label: string, pair: CryptoKeyPair): Promise<WrappedPair> {
  const pkcs8 = new Uint8Array(await crypto.subtle.exportKey('pkcs8', pair.privateKey));
  try {
    const pub = new Uint8Array(await crypto.subtle.exportKey('raw', pair.publicKey));
    return { pub, priv: await wrapSecret(root, `identity/${label}`, pkcs8) };
  } finally {
    pkcs8.fill(0);
  }
}

/**
 * Wraps a pair and proves it opens again; undefined when it does not, so the caller draws
 * another pair. WebKitGTK 2.50 cannot import an Ed25519 or X25519 PKCS#8 key whose seed
 * starts with a zero byte (1 key in 256), which would leave a machine unable to reopen
 * its own identity.
 */
export async function wrapPairReopenable(
  root: CryptoKey,
  label: string,
  algorithm: PairAlgorithm,
  pair: CryptoKeyPair,
): Promise<WrappedPair | undefined> {
  const wrapped = await wrapPair(root, label, pair);
  try {
    await unwrapPair(root, label, algorithm, wrapped);
    return wrapped;
  } catch {
    return undefined;
  }
}

/** The pair back from its wrapped form: the private key imported non-extractable, the public key as it was. */
export async function unwrapPair(
  root: CryptoKey,
  label: string,
  algorithm: PairAlgorithm,
  stored: WrappedPair,
): Promise<CryptoKeyPair> {
  const pkcs8 = await unwrapSecret(root, `identity/${label}`, stored.priv);
  try {
    return {
      privateKey: await crypto.subtle.importKey(
        'pkcs8',
        copy(pkcs8),
        { name: algorithm },
        false,
        USAGES[algorithm].private,
      ),
      publicKey: await crypto.subtle.importKey(
        'raw',
        copy(stored.pub),
        { name: algorithm },
        true,
        USAGES[algorithm].public,
      ),
    };
  } finally {
    pkcs8.fill(0);
  }
}
