/**
 * AES-256-GCM through node:crypto (OpenSSL) for headless Node peers: the same
 * algorithm, nonce layout, associated data and checks as core/seal.ts (noble,
 * pure JavaScript), so the bytes on the wire are identical either way — only
 * faster (on the benchmark machine ~6x for an envelope). Frames use WebCrypto
 * AES-GCM (runtime/frame-channel.ts), which is native in Node too. Synchronous, so it also runs inside the
 * worker threads of node-open-pool.ts. Browsers keep the core's implementation.
 */
import { createCipheriv, createDecipheriv } from 'node:crypto';
import { concat } from '../core/bytes.js';
import type { DomainKeyring } from '../core/domain-keys.js';
import { blake3 } from '../core/hash.js';
import type { Random } from '../core/ports.js';
import type { EnvelopeCrypto } from '../core/replica.js';
import { err, ok, type Result } from '../core/result.js';
import {
  NONCE_BYTES,
  sealAad,
  TAG_BYTES,
  type DomainKeyLookup,
  type SealedEvent,
  type SealError,
} from '../core/seal.js';

const bytesOf = (buffer: Buffer): Uint8Array => new Uint8Array(buffer.buffer, buffer.byteOffset, buffer.byteLength);

/** nonce ‖ ciphertext ‖ tag, as noble's `gcm(key, nonce, aad).encrypt` lays it out after the nonce. */
function encrypt(key: Uint8Array, nonce: Uint8Array, aad: Uint8Array, plain: Uint8Array): Uint8Array {
  const cipher = createCipheriv('aes-256-gcm', key, nonce);
  cipher.setAAD(aad);
  const body = cipher.update(plain);
  const tail = cipher.final();
  return concat(nonce, body, tail, cipher.getAuthTag());
}

/** Opens nonce ‖ ciphertext ‖ tag; undefined when the tag does not verify. */
function decrypt(key: Uint8Array, aad: Uint8Array, sealed: Uint8Array): Uint8Array | undefined {
  if (sealed.length < NONCE_BYTES + TAG_BYTES) return undefined;
  try {
    const decipher = createDecipheriv('aes-256-gcm', key, sealed.subarray(0, NONCE_BYTES));
    decipher.setAAD(aad);
    decipher.setAuthTag(sealed.subarray(sealed.length - TAG_BYTES));
    const body = decipher.update(sealed.subarray(NONCE_BYTES, sealed.length - TAG_BYTES));
    const tail = decipher.final();
    return tail.length === 0 ? bytesOf(body) : concat(body, tail);
  } catch {
    return undefined;
  }
}

/** core/seal.ts `openSealed`, natively. */
export function nodeOpenSealed(sealed: SealedEvent, keys: DomainKeyLookup): Result<Uint8Array, SealError> {
  const key = keys(sealed.domain, sealed.gen);
  if (!key) return err({ type: 'DomainKeyMissing', domain: sealed.domain, gen: sealed.gen });
  const plain = decrypt(key, sealAad(sealed.domain, sealed.gen, sealed.lane), sealed.ct);
  return plain ? ok(plain) : err({ type: 'DecryptFailed', domain: sealed.domain, gen: sealed.gen });
}

/** The envelope port of a DomainKeyring (core/domain-keys.ts), natively. */
export function nodeEnvelopes(keyring: DomainKeyring, random: Random): EnvelopeCrypto {
  return {
    seal: async (domain, signedEvent, lane, gen) => {
      const current = keyring.sealing(domain, gen);
      if (!current) throw new Error(`node-aead: no key for ${domain}`);
      const ct = encrypt(current.key, random.bytes(NONCE_BYTES), sealAad(domain, current.gen, lane), signedEvent);
      return { domain, gen: current.gen, id: blake3(ct), ct, ...(lane ? { lane } : {}) };
    },
    open: async (sealed) => nodeOpenSealed(sealed, (d, g) => keyring.get(d, g)),
    generation: async (domain) => keyring.current(domain)?.gen,
  };
}
