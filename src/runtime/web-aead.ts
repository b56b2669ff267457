/**
 * AES-256-GCM through WebCrypto for the envelope port of a crypto worker: the same
 * algorithm, nonce layout, associated data and checks as core/seal.ts (noble, pure
 * JavaScript), so the bytes on the wire are identical either way — only native. In a
 * catch-up the worker opened every envelope with noble, about a tenth of its busy time;
 * WebCrypto runs it off the worker's thread. Keys are imported once per generation, as
 * non-extractable CryptoKeys, and remembered by the key bytes the keyring holds (so a
 * generation the keyring forgets is forgotten here too).
 */
import { concat } from '../core/bytes.js';
import type { DomainKeyring } from '../core/domain-keys.js';
import { blake3 } from '../core/hash.js';
import type { Random } from '../core/ports.js';
import type { EnvelopeCrypto } from '../core/replica.js';
import { err, ok, type Result } from '../core/result.js';
import { NONCE_BYTES, sealAad, TAG_BYTES, type SealedEvent, type SealError } from '../core/seal.js';

const imported = new WeakMap<Uint8Array, Promise<CryptoKey>>();

function cryptoKeyOf(key: Uint8Array): Promise<CryptoKey> {
  let found = imported.get(key);
  if (!found) {
    found = crypto.subtle.importKey('raw', key as Uint8Array<ArrayBuffer>, 'AES-GCM', false, ['encrypt', 'decrypt']);
    imported.set(key, found);
  }
  return found;
}

const params = (nonce: Uint8Array, aad: Uint8Array): AesGcmParams => ({
  name: 'AES-GCM',
  iv: nonce as Uint8Array<ArrayBuffer>,
  additionalData: aad as Uint8Array<ArrayBuffer>,
});

/** core/seal.ts `openSealed`, with WebCrypto. */
export async function webOpenSealed(
  sealed: SealedEvent,
  keys: (domain: string, gen: number) => Uint8Array | undefined,
): Promise<Result<Uint8Array, SealError>> {
  const key = keys(sealed.domain, sealed.gen);
  if (!key) return err({ type: 'DomainKeyMissing', domain: sealed.domain, gen: sealed.gen });
  const failed = err({ type: 'DecryptFailed', domain: sealed.domain, gen: sealed.gen } as const);
  if (sealed.ct.length < NONCE_BYTES + TAG_BYTES) return failed;
  try {
    const aad = sealAad(sealed.domain, sealed.gen, sealed.lane);
    const nonce = sealed.ct.subarray(0, NONCE_BYTES);
    const body = sealed.ct.subarray(NONCE_BYTES) as Uint8Array<ArrayBuffer>;
    return ok(new Uint8Array(await crypto.subtle.decrypt(params(nonce, aad), await cryptoKeyOf(key), body)));
  } catch {
    return failed;
  }
}

/** The envelope port of a DomainKeyring (core/domain-keys.ts), with WebCrypto. */
export function webEnvelopes(keyring: DomainKeyring, random: Random): EnvelopeCrypto {
  return {
    seal: async (domain, signedEvent, lane, gen) => {
      const current = keyring.sealing(domain, gen);
      if (!current) throw new Error(`web-aead: no key for ${domain}`);
      const nonce = random.bytes(NONCE_BYTES);
      const aad = sealAad(domain, current.gen, lane);
      const body = await crypto.subtle.encrypt(
        params(nonce, aad),
        await cryptoKeyOf(current.key),
        signedEvent as Uint8Array<ArrayBuffer>,
      );
      const ct = concat(nonce, new Uint8Array(body));
      return { domain, gen: current.gen, id: blake3(ct), ct, ...(lane ? { lane } : {}) };
    },
    open: (sealed) => webOpenSealed(sealed, (d, g) => keyring.get(d, g)),
    generation: async (domain) => keyring.current(domain)?.gen,
  };
}
