/**
 * Durable before acknowledged (storage/durability.ts): every IndexedDB database of a machine
 * asks for strict durability — Dexie's own transactions and the replica's native one. (What
 * a power cut does is not testable here; what each store asks of its engine is. The SQLite
 * stores set `synchronous = FULL` on their connections.)
 */
import 'fake-indexeddb/auto';
import { describe, expect, it } from 'vitest';
import { DexieReplicaStore, NodeDatabase } from '../../src/storage/dexie-store.js';
import { InboxDatabase } from '../../src/storage/inbox-store.js';
import { KeyDatabase } from '../../src/storage/key-store.js';
import { ObjectDatabase } from '../../src/storage/object-db.js';

describe('durability', () => {
  it('every Dexie database of a machine commits strictly', () => {
    for (const db of [
      new NodeDatabase('d1'),
      new InboxDatabase('d2'),
      new KeyDatabase('d3'),
      new ObjectDatabase('d4'),
    ]) {
      expect((db as unknown as { _options: { chromeTransactionDurability?: string } })._options).toMatchObject({
        chromeTransactionDurability: 'strict',
      });
    }
  });

  it("the replica's own IndexedDB transaction asks for strict durability", async () => {
    const db = new NodeDatabase('d5');
    await db.open();
    const backend = db.backendDB();
    const asked: unknown[] = [];
    const transaction = backend.transaction.bind(backend);
    backend.transaction = ((stores: string[], mode: IDBTransactionMode, options?: IDBTransactionOptions) => {
      asked.push(options);
      return transaction(stores, mode, options);
    }) as typeof backend.transaction;
    await new DexieReplicaStore(db).transact((tx) => tx.setHlc({ ms: 1, counter: 0 }));
    expect(asked).toEqual([{ durability: 'strict' }]);
  });
});
