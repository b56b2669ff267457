/**
 * AccessRecord (SOP/1): an object secret wrapped under one KEK generation of
 * its domain — tens of bytes, keyed by (storage_id, generation). Rotation adds
 * or replaces these records and nothing else; several generations may hold a
 * record for one object.
 *
 *   wrapped = nonce(12) ‖ AES-256-GCM(kek, nonce, aad).encrypt(secret) ‖ tag(16)     60 bytes
 *   aad     = "sov/1/access" ‖ storage_id(32) ‖ domain (UTF-8) ‖ generation (u32 BE)
 *
 * The AAD binds the record to its object, domain and generation: a record
 * moved to another object, domain or generation does not open.
 */
import { gcm } from '@noble/ciphers/aes.js';
import { concat, utf8 } from '../bytes.js';
import type { Random } from '../ports.js';
import { err, ok, type Result } from '../result.js';
import type { DomainName } from '../schema.js';
import { OBJECT_SECRET_BYTES, storageIdBytes, type StorageId } from './keys.js';

const LABEL = utf8('sov/1/access');
const NONCE_BYTES = 12;
export const WRAPPED_BYTES = NONCE_BYTES + OBJECT_SECRET_BYTES + 16;

export type AccessRecord = {
  readonly storageId: StorageId;
  readonly domain: DomainName;
  readonly gen: number;
  readonly wrapped: Uint8Array;
};

export type AccessError =
  | { readonly type: 'AccessRecordMalformed' }
  /** The record does not open under this KEK for this object, domain and generation. */
  | {
      readonly type: 'AccessRecordMismatch';
      readonly storageId: StorageId;
      readonly domain: DomainName;
      readonly gen: number;
    };

function aad(storageId: StorageId, domain: DomainName, gen: number): Uint8Array {
  const g = new Uint8Array(4);
  new DataView(g.buffer).setUint32(0, gen);
  return concat(LABEL, storageIdBytes(storageId), utf8(domain), g);
}

export function wrapSecret(
  secret: Uint8Array,
  at: { readonly storageId: StorageId; readonly domain: DomainName; readonly gen: number },
  kek: Uint8Array,
  random: Random,
): AccessRecord {
  if (secret.length !== OBJECT_SECRET_BYTES) throw new Error('access: an object secret is 32 bytes');
  if (!Number.isInteger(at.gen) || at.gen < 1 || at.gen > 0xffffffff)
    throw new Error('access: generation out of range');
  const nonce = random.bytes(NONCE_BYTES);
  const wrapped = concat(nonce, gcm(kek, nonce, aad(at.storageId, at.domain, at.gen)).encrypt(secret));
  return { storageId: at.storageId, domain: at.domain, gen: at.gen, wrapped };
}

/** The object secret, if this KEK opens the record for the object, domain and generation it names. */
export function unwrapSecret(record: AccessRecord, kek: Uint8Array): Result<Uint8Array, AccessError> {
  if (record.wrapped.length !== WRAPPED_BYTES) return err({ type: 'AccessRecordMalformed' });
  const nonce = record.wrapped.subarray(0, NONCE_BYTES);
  try {
    return ok(
      gcm(kek, nonce, aad(record.storageId, record.domain, record.gen)).decrypt(record.wrapped.subarray(NONCE_BYTES)),
    );
  } catch {
    return err({ type: 'AccessRecordMismatch', storageId: record.storageId, domain: record.domain, gen: record.gen });
  }
}
