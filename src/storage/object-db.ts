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
import { STRICT } from './durability.js';

export type BlobRecord = {
  readonly id: string;
  readonly bytes: Uint8Array;
  readonly size: number;
  readonly storedAt: number;
  readonly domain?: string;
  /** The placement tag (hex) the relay listed it under, for an object a storage machine copied. */
  readonly tag?: string;
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

type BlobMeta = Omit<BlobRecord, 'bytes'>;

export class ObjectDatabase extends Dexie {
  /** What is held, without the bytes: listing it (every snapshot of the page) reads no object. */
  blobs!: Table<BlobMeta, string>;
  bytes!: Table<{ readonly id: string; readonly bytes: Uint8Array }, string>;
  pending!: Table<PendingRecord, string>;

  constructor(name = 'sov-objects') {
    super(name, STRICT);
    this.version(1).stores({ blobs: 'id', pending: 'id' });
    // v2: bytes apart from their metadata.
    this.version(2)
      .stores({ blobs: 'id', bytes: 'id', pending: 'id' })
      .upgrade(async (tx) => {
        const blobs = tx.table<{ id: string; bytes?: Uint8Array }, string>('blobs');
        const held = await blobs.toArray();
        await tx
          .table<{ id: string; bytes: Uint8Array }, string>('bytes')
          .bulkPut(held.flatMap((r) => (r.bytes ? [{ id: r.id, bytes: r.bytes }] : [])));
        await blobs.toCollection().modify((r) => {
          delete r.bytes;
        });
      });
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
  /** Forgets an object's bytes here (a superseded copy past its grace period). */
  dropBlob(id: string): Promise<void>;
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

  async blob(id: string): Promise<BlobRecord | undefined> {
    const [meta, bytes] = await Promise.all([this.db.blobs.get(id), this.db.bytes.get(id)]);
    return meta && bytes && { ...meta, bytes: bytes.bytes };
  }

  async hasBlob(id: string): Promise<boolean> {
    return (await this.db.blobs.where('id').equals(id).count()) > 0;
  }

  async putBlob(record: BlobRecord): Promise<void> {
    await this.db.transaction('rw', this.db.blobs, this.db.bytes, () => this.#putBlob(record));
  }

  async #putBlob({ bytes, ...meta }: BlobRecord): Promise<void> {
    await this.db.bytes.put({ id: meta.id, bytes });
    await this.db.blobs.put(meta);
  }

  async markUploaded(id: string): Promise<void> {
    await this.db.blobs.update(id, { uploaded: true });
  }

  async dropBlob(id: string): Promise<void> {
    await this.db.transaction('rw', this.db.blobs, this.db.bytes, async () => {
      await this.db.blobs.delete(id);
      await this.db.bytes.delete(id);
    });
  }

  held(): Promise<BlobMeta[]> {
    return this.db.blobs.toArray();
  }

  async notUploaded(): Promise<BlobRecord[]> {
    const waiting = await this.db.blobs.filter((b) => !b.uploaded && b.domain !== undefined).toArray();
    const out: BlobRecord[] = [];
    for (const meta of waiting) {
      const bytes = await this.db.bytes.get(meta.id);
      if (bytes) out.push({ ...meta, bytes: bytes.bytes });
    }
    return out;
  }

  async keepFormed(blob: BlobRecord, pending: PendingRecord): Promise<void> {
    await this.db.transaction('rw', this.db.blobs, this.db.bytes, this.db.pending, async () => {
      await this.#putBlob(blob);
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
