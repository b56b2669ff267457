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

/** What the Parquet worker needs of an object store (IndexedDB here, SQLite in Node). */
export interface ObjectStore {
  blob(id: string): Promise<BlobRecord | undefined>;
  hasBlob(id: string): Promise<boolean>;
  putBlob(record: BlobRecord): Promise<void>;
  markUploaded(id: string): Promise<void>;
  /** Every object held, without its bytes. */
  held(): Promise<Omit<BlobRecord, 'bytes'>[]>;
  /** Objects this machine formed (their domain is known) that the relay does not hold yet. */
  notUploaded(): Promise<BlobRecord[]>;
  /** A formed object and its pending record, together or not at all. */
  keepFormed(blob: BlobRecord, pending: PendingRecord): Promise<void>;
  pendingAll(): Promise<PendingRecord[]>;
  pending(id: string): Promise<PendingRecord | undefined>;
  putPending(record: PendingRecord): Promise<void>;
  deletePending(id: string): Promise<void>;
}

export class DexieObjectStore implements ObjectStore {
  readonly db: ObjectDatabase;

  constructor(db: ObjectDatabase = new ObjectDatabase()) {
    this.db = db;
  }

  blob(id: string): Promise<BlobRecord | undefined> {
    return this.db.blobs.get(id);
  }

  async hasBlob(id: string): Promise<boolean> {
    return (await this.db.blobs.where('id').equals(id).count()) > 0;
  }

  async putBlob(record: BlobRecord): Promise<void> {
    await this.db.blobs.put(record);
  }

  async markUploaded(id: string): Promise<void> {
    await this.db.blobs.update(id, { uploaded: true });
  }

  async held(): Promise<Omit<BlobRecord, 'bytes'>[]> {
    const out: Omit<BlobRecord, 'bytes'>[] = [];
    await this.db.blobs.each((b) =>
      out.push({
        id: b.id,
        size: b.size,
        storedAt: b.storedAt,
        uploaded: b.uploaded,
        ...(b.domain ? { domain: b.domain } : {}),
      }),
    );
    return out;
  }

  notUploaded(): Promise<BlobRecord[]> {
    return this.db.blobs.filter((b) => !b.uploaded && b.domain !== undefined).toArray();
  }

  async keepFormed(blob: BlobRecord, pending: PendingRecord): Promise<void> {
    await this.db.transaction('rw', this.db.blobs, this.db.pending, async () => {
      await this.db.blobs.put(blob);
      await this.db.pending.put(pending);
    });
  }

  pendingAll(): Promise<PendingRecord[]> {
    return this.db.pending.toArray();
  }

  pending(id: string): Promise<PendingRecord | undefined> {
    return this.db.pending.get(id);
  }

  async putPending(record: PendingRecord): Promise<void> {
    await this.db.pending.put(record);
  }

  deletePending(id: string): Promise<void> {
    return this.db.pending.delete(id);
  }
}

export function objectStoreOf(store: ObjectStore | ObjectDatabase): ObjectStore {
  return store instanceof ObjectDatabase ? new DexieObjectStore(store) : store;
}
