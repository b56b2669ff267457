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
 *
 * A rotation's records go in batches (runtime/rewrap-job.ts): one state-plane row holds
 * up to MAX_BATCH_ENTRIES records of one domain and generation, each named by the first
 * BATCH_ID_BYTES of its object's storage id, so a record costs 68 bytes, not a signed
 * event of its own (~565 bytes sealed):
 *
 *   batch = (storage_id[0..8] ‖ wrapped(60))*                                   68 bytes each
 *
 * The prefix only finds the object; the AAD still binds the whole storage id, so a prefix
 * two objects share (about 1 in 10^10 for 100,000 objects of a domain) costs a reader one
 * failed unwrap, never a wrong secret.
 */
import { gcm } from '@noble/ciphers/aes.js';
import { concat, toHex, utf8 } from '../bytes.js';
import { MAX_VALUE_CHARS } from '../event.js';
import type { Random } from '../ports.js';
import { err, ok, type Result } from '../result.js';
import type { DomainName } from '../schema.js';
import { OBJECT_SECRET_BYTES, storageIdBytes, type StorageId } from './keys.js';

const LABEL = utf8('sov/1/access');
const NONCE_BYTES = 12;
export const WRAPPED_BYTES = NONCE_BYTES + OBJECT_SECRET_BYTES + 16;

/** Leading bytes of the storage id that name an object in a batch of access records. */
export const BATCH_ID_BYTES = 8;
export const BATCH_ENTRY_BYTES = BATCH_ID_BYTES + WRAPPED_BYTES;
/** Records per batch: as many as fit one column value as base64url (180 × 68 bytes: 16,320 characters). */
export const MAX_BATCH_ENTRIES = Math.floor((MAX_VALUE_CHARS * 3) / 4 / BATCH_ENTRY_BYTES);

export type AccessRecord = {
  readonly storageId: StorageId;
  readonly domain: DomainName;
  readonly gen: number;
  readonly wrapped: Uint8Array;
};

export type AccessError =
  | { readonly type: 'AccessRecordMalformed' }
  | { readonly type: 'AccessBatchMalformed'; readonly reason: string }
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

/** One record of a batch: the object's storage-id prefix (hex) and its wrapped secret. */
export type BatchedRecord = { readonly prefix: string; readonly wrapped: Uint8Array };

/** A batch of access records of one domain and generation (the row names both). */
export function encodeAccessBatch(
  records: readonly { readonly storageId: StorageId; readonly wrapped: Uint8Array }[],
): Uint8Array {
  if (records.length === 0 || records.length > MAX_BATCH_ENTRIES) {
    throw new Error(`access: a batch holds 1..${MAX_BATCH_ENTRIES} records`);
  }
  const out = new Uint8Array(records.length * BATCH_ENTRY_BYTES);
  for (const [i, r] of records.entries()) {
    if (r.wrapped.length !== WRAPPED_BYTES) throw new Error('access: a wrapped secret is 60 bytes');
    out.set(storageIdBytes(r.storageId).subarray(0, BATCH_ID_BYTES), i * BATCH_ENTRY_BYTES);
    out.set(r.wrapped, i * BATCH_ENTRY_BYTES + BATCH_ID_BYTES);
  }
  return out;
}

export function decodeAccessBatch(bytes: Uint8Array): Result<BatchedRecord[], AccessError> {
  const n = bytes.length / BATCH_ENTRY_BYTES;
  if (!Number.isInteger(n) || n < 1 || n > MAX_BATCH_ENTRIES) {
    return err({
      type: 'AccessBatchMalformed',
      reason: `${bytes.length} bytes is not 1..${MAX_BATCH_ENTRIES} records of ${BATCH_ENTRY_BYTES}`,
    });
  }
  const out: BatchedRecord[] = [];
  for (let at = 0; at < bytes.length; at += BATCH_ENTRY_BYTES) {
    out.push({
      prefix: toHex(bytes.subarray(at, at + BATCH_ID_BYTES)),
      wrapped: bytes.slice(at + BATCH_ID_BYTES, at + BATCH_ENTRY_BYTES),
    });
  }
  return ok(out);
}
