/**
 * The sealed envelope every event travels in.
 *
 *   SealedEvent = {domain, gen: uint ≥ 1, id: 32B, ct: bytes, lane?}   (canonical CBOR)
 *   ct          = nonce(12) ‖ AES-256-GCM(domain key of `gen`, SignedEvent,
 *                                         aad = "sov/1/seal" ‖ cbor([domain, gen(, lane)]))
 *   id          = outer_id = BLAKE3(ct)
 *   lane        "trusted" | "local", absent for the public lane: the privacy lane
 *               of the event inside (sync-manifest.ts), readable without a key so
 *               a machine that cannot open an envelope still forwards it only to
 *               machines that may hold it
 *
 * A machine outside the domain can store, forward and acknowledge an envelope by
 * its outer id, and verify that id, without being able to read it. Only a member
 * holding the key of that generation opens it. The domain and generation are
 * bound into the AEAD, so an envelope cannot be relabelled; the signed event
 * inside repeats its domain and lane, so a member cannot re-seal it into another
 * domain or lane.
 */
import { gcm } from '@noble/ciphers/aes.js';
import { bytesEqual, concat, hexThen, isBytes, toHex, utf8 } from './bytes.js';
import { decodeCbor, encodeCbor, isRecord } from './cbor.js';
import { MAX_EVENT_BYTES } from './event.js';
import { blake3 } from './hash.js';
import type { Random } from './ports.js';
import { err, ok, type Result } from './result.js';
import { isDomainName, type DomainName } from './schema.js';

/** The lane label of a non-public envelope. */
export type SealLane = 'trusted' | 'local';

export const MAX_SEALED_BYTES = MAX_EVENT_BYTES + 512;
const AAD_LABEL = utf8('sov/1/seal');
export const NONCE_BYTES = 12;
export const TAG_BYTES = 16;

export type SealedEvent = {
  readonly domain: DomainName;
  readonly gen: number;
  readonly id: Uint8Array;
  readonly ct: Uint8Array;
  readonly lane?: SealLane;
};

export type SealError =
  | { readonly type: 'MalformedEnvelope'; readonly reason: string }
  | { readonly type: 'OuterIdMismatch' }
  | { readonly type: 'DomainKeyMissing'; readonly domain: DomainName; readonly gen: number }
  | { readonly type: 'DecryptFailed'; readonly domain: DomainName; readonly gen: number };

/** Looks up the key bytes of one generation of one domain, if this machine holds it. */
export type DomainKeyLookup = (domain: DomainName, gen: number) => Uint8Array | undefined;

/**
 * Associated data binding an envelope's domain and generation (exported for native AEAD adapters).
 * The same few headers recur for every envelope, so each is encoded once; callers only read it.
 */
export function sealAad(domain: DomainName, gen: number, lane?: SealLane): Uint8Array {
  const name = `${domain}.${gen}.${lane ?? ''}`;
  let aad = aads.get(name);
  if (!aad) {
    aad = concat(AAD_LABEL, encodeCbor(lane ? [domain, gen, lane] : [domain, gen]));
    if (aads.size >= MAX_AADS) aads.clear();
    aads.set(name, aad);
  }
  return aad;
}

/** Encoded headers by `domain.gen.lane`; bounded, since envelopes name whatever header they like. */
const aads = new Map<string, Uint8Array>();
const MAX_AADS = 256;

export function sealEvent(
  signedEvent: Uint8Array,
  domain: DomainName,
  gen: number,
  key: Uint8Array,
  random: Random,
  lane?: SealLane,
): SealedEvent {
  if (!isBytes(key, 32)) throw new Error('seal: domain key must be 32 bytes');
  const nonce = random.bytes(NONCE_BYTES);
  const ct = concat(nonce, gcm(key, nonce, sealAad(domain, gen, lane)).encrypt(signedEvent));
  return { domain, gen, id: blake3(ct), ct, ...(lane ? { lane } : {}) };
}

/**
 * The name a replica stores, deduplicates, parks and rejects an envelope by: its
 * outer id together with the header it was labelled with, `outer.domain.gen`
 * (and `.lane` outside the public lane).
 * The wire's outer id covers only the ciphertext, so anyone on the path could
 * relabel a genuine envelope's domain or generation without changing it; keyed
 * by the outer id alone, a relabelled copy seen first would shadow the genuine
 * one for good. (The envelope has no other fields, so this names it as fully as
 * a hash of its canonical bytes would, without hashing them again.)
 */
export function envelopeId(sealed: SealedEvent): string {
  // One flat string, not a concatenation: a replica keeps millions of these names.
  return hexThen(sealed.id, `.${sealed.domain}.${sealed.gen}${sealed.lane ? `.${sealed.lane}` : ''}`);
}

/** The name of bytes that do not even decode as an envelope. */
export function undecodableId(bytes: Uint8Array): string {
  return toHex(blake3(bytes));
}

export function encodeSealed(sealed: SealedEvent): Uint8Array {
  const { domain, gen, id, ct, lane } = sealed;
  return encodeCbor(lane ? { domain, gen, id, ct, lane } : { domain, gen, id, ct });
}

/** Decodes an envelope and checks its outer id; needs no key. */
export function decodeSealed(bytes: Uint8Array): Result<SealedEvent, SealError> {
  // Views: the id and ciphertext are read (hashed, decrypted), never kept apart from the envelope bytes.
  const decoded = decodeCbor(bytes, MAX_SEALED_BYTES, { views: true });
  if (!decoded.ok) return err({ type: 'MalformedEnvelope', reason: decoded.error.reason });
  const m = decoded.value;
  const fields = isRecord(m) ? Object.keys(m).length : 0;
  if (!isRecord(m) || (fields !== 4 && !(fields === 5 && 'lane' in m))) {
    return err({ type: 'MalformedEnvelope', reason: 'fields' });
  }
  const { domain, gen, id, ct, lane } = m;
  if (fields === 5 && lane !== 'trusted' && lane !== 'local') return err({ type: 'MalformedEnvelope', reason: 'lane' });
  if (!isDomainName(domain) || typeof gen !== 'number' || !Number.isSafeInteger(gen) || gen < 1) {
    return err({ type: 'MalformedEnvelope', reason: 'domain or generation' });
  }
  if (!isBytes(id, 32) || !isBytes(ct) || ct.length < NONCE_BYTES + TAG_BYTES) {
    return err({ type: 'MalformedEnvelope', reason: 'id or ciphertext' });
  }
  if (!bytesEqual(blake3(ct), id)) return err({ type: 'OuterIdMismatch' });
  return ok({ domain, gen, id, ct, ...(fields === 5 ? { lane: lane as SealLane } : {}) });
}

/** Opens an envelope with the key of its generation; returns the signed event bytes. */
export function openSealed(sealed: SealedEvent, keys: DomainKeyLookup): Result<Uint8Array, SealError> {
  const key = keys(sealed.domain, sealed.gen);
  if (!key) return err({ type: 'DomainKeyMissing', domain: sealed.domain, gen: sealed.gen });
  const nonce = sealed.ct.subarray(0, NONCE_BYTES);
  try {
    const aad = sealAad(sealed.domain, sealed.gen, sealed.lane);
    return ok(gcm(key, nonce, aad).decrypt(sealed.ct.subarray(NONCE_BYTES)));
  } catch {
    return err({ type: 'DecryptFailed', domain: sealed.domain, gen: sealed.gen });
  }
}
