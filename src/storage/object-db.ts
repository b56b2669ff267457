/**
 * Encrypted objects on this machine (IndexedDB, Dexie), kept apart from the replica's
 * events: object bytes are large, immutable and content-addressed.
 *
 *   blobs    storage id → the object's encrypted bytes, as formed here or fetched (and
 *            verified) from the relay; `domain` only where this machine knows it (it formed
 *            the object, or its catalog row opened here); `uploaded` once the relay holds it
 *   pending  objects formed here and not yet published: their domain, table and sealed
 *            manifest. Their object secrets are in the key store (`object/<id>`), wrapped
 *            under the non-extractable machine key, until publication wraps them under the
 *            domain's then-current generation. `refused` marks one that can never be
 *            published (this machine was removed first).
 */
import Dexie, { type Table } from 'dexie';

export type BlobRecord = {
  readonly id: string;
  readonly bytes: Uint8Array;
  readonly size: number;
  readonly storedAt: number;
  readonly domain?: string;
  readonly uploaded: boolean;
};

export type PendingRecord = {
  readonly id: string;
  readonly domain: string;
  readonly table: string;
  readonly sealedManifest: Uint8Array;
  readonly formedAt: number;
  readonly refused?: string;
};

export class ObjectDatabase extends Dexie {
  blobs!: Table<BlobRecord, string>;
  pending!: Table<PendingRecord, string>;

  constructor(name = 'sov-objects') {
    super(name);
    this.version(1).stores({ blobs: 'id', pending: 'id' });
  }
}

/** The key-store name of a pending object's secret. */
export const objectSecretName = (id: string): string => `object/${id}`;
