/**
 * WebCrypto helpers of the key stores, shared with the workers that keep secrets through
 * them: the machine's non-extractable AES-GCM wrapping key, secrets wrapped under it with
 * their purpose bound as associated data (secrets that must be handed on later are kept as
 * wrapped bytes, never as non-extractable keys that could not be re-shared), and key
 * generation that survives an engine's failed draws.
 */

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

export function generateWrappingKey(): Promise<CryptoKey> {
  return crypto.subtle.generateKey({ name: 'AES-GCM', length: 256 }, false, ['encrypt', 'decrypt']);
}

export type WrappedSecret = { readonly iv: Uint8Array; readonly ct: Uint8Array };

/** Wraps secret bytes under the machine key; `label` is bound as associated data. */
export async function wrapSecret(key: CryptoKey, label: string, secret: Uint8Array): Promise<WrappedSecret> {
  const iv = crypto.getRandomValues(new Uint8Array(12));
  const additionalData = new TextEncoder().encode(`sov/1/wrap/${label}`);
  const ct = await crypto.subtle.encrypt({ name: 'AES-GCM', iv: buf(iv), additionalData }, key, buf(secret));
  return { iv, ct: new Uint8Array(ct) };
}

/**
 * The secret wrapped under `label`. A record that does not open (another machine key,
 * another label, damaged bytes) is an error naming the label and the engine's reason,
 * never the bare DOMException, so the step that met it can be told apart.
 */
export async function unwrapSecret(key: CryptoKey, label: string, wrapped: WrappedSecret): Promise<Uint8Array> {
  const additionalData = new TextEncoder().encode(`sov/1/wrap/${label}`);
  try {
    const plain = await crypto.subtle.decrypt(
      { name: 'AES-GCM', iv: buf(wrapped.iv), additionalData },
      key,
      buf(wrapped.ct),
    );
    return new Uint8Array(plain);
  } catch (e) {
    throw new Error(`key store: the kept secret "${label}" does not open under this machine's key (${errorName(e)})`, {
      cause: e,
    });
  }
}

/** An error's name for a message (`OperationError`, `TypeError`…), whatever was thrown. */
export function errorName(e: unknown): string {
  return e instanceof Error ? e.name : typeof e;
}
