/**
 * Keys of one object (SOP/1 "Writing an object"): a random 32-byte object
 * secret, and from it, by HKDF-SHA-256 with distinct labels, the DEK (the
 * Parquet footer key) and the manifest key. The secret is what access records
 * wrap; neither derived key is ever stored or sent.
 *
 * storage_id = BLAKE3-256 of the encrypted bytes: any replica recomputes it on
 * receipt and refuses a mismatch.
 */
import { fromHex, toHex } from '../bytes.js';
import { deriveKey } from '../hash.js';
import type { Random } from '../ports.js';

export const OBJECT_SECRET_BYTES = 32;
export const STORAGE_ID_BYTES = 32;

declare const storageIdBrand: unique symbol;
/** 64 lowercase hex digits: BLAKE3 of an object's encrypted bytes. */
export type StorageId = string & { readonly [storageIdBrand]: true };

const STORAGE_ID = /^[0-9a-f]{64}$/;

export function isStorageId(value: unknown): value is StorageId {
  return typeof value === 'string' && STORAGE_ID.test(value);
}

export function storageIdOf(digest: Uint8Array): StorageId {
  if (digest.length !== STORAGE_ID_BYTES) throw new Error('object: a storage id is 32 bytes');
  return toHex(digest) as StorageId;
}

export function storageIdBytes(id: StorageId): Uint8Array {
  return fromHex(id)!;
}

export type ObjectKeys = { readonly dek: Uint8Array; readonly manifestKey: Uint8Array };

export function newObjectSecret(random: Random): Uint8Array {
  return random.bytes(OBJECT_SECRET_BYTES);
}

export function objectKeys(secret: Uint8Array): ObjectKeys {
  if (secret.length !== OBJECT_SECRET_BYTES) throw new Error('object: an object secret is 32 bytes');
  return { dek: deriveKey(secret, 'sov/1/object/dek'), manifestKey: deriveKey(secret, 'sov/1/object/manifest') };
}
