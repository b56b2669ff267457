/**
 * The browser's object store: object bytes live apart from their metadata, so listing
 * what is held reads no object; a v1 database (bytes inside the records) is moved over
 * on open, nothing lost.
 */
import 'fake-indexeddb/auto';
import { Dexie } from 'dexie';
import { describe, expect, it } from 'vitest';
import { DexieObjectStore, ObjectDatabase } from '../../src/storage/object-db.js';

const record = (id: string, size: number) => ({
  id,
  bytes: new Uint8Array(size).fill(7),
  size,
  storedAt: 1,
  domain: 'GENERAL',
  uploaded: false,
});

describe('DexieObjectStore', () => {
  it('keeps bytes apart: held() lists without them, blob() joins them', async () => {
    const store = new DexieObjectStore(new ObjectDatabase('object-db-test-1'));
    await store.putBlob(record('a'.repeat(64), 10));
    expect(await store.held()).toEqual([
      { id: 'a'.repeat(64), size: 10, storedAt: 1, domain: 'GENERAL', uploaded: false },
    ]);
    expect((await store.blob('a'.repeat(64)))?.bytes).toEqual(new Uint8Array(10).fill(7));
    expect((await store.notUploaded()).map((b) => b.id)).toEqual(['a'.repeat(64)]);
    await store.markUploaded('a'.repeat(64));
    expect(await store.notUploaded()).toEqual([]);
    expect(await store.hasBlob('a'.repeat(64))).toBe(true);
    expect(await store.blob('b'.repeat(64))).toBeUndefined();
  });

  it('moves a v1 database over on open', async () => {
    const v1 = new Dexie('object-db-test-2');
    v1.version(1).stores({ blobs: 'id', pending: 'id' });
    await v1.table('blobs').put(record('c'.repeat(64), 5));
    v1.close();
    const store = new DexieObjectStore(new ObjectDatabase('object-db-test-2'));
    expect((await store.blob('c'.repeat(64)))?.bytes).toEqual(new Uint8Array(5).fill(7));
    expect((await store.held())[0]).not.toHaveProperty('bytes');
  });
});
