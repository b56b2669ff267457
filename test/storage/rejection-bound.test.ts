/** A flood of rejected input cannot grow the rejection records without bound. */
import { describe, expect, it } from 'vitest';
import { MAX_REJECTION_RECORDS } from '../../src/core/store.js';
import { MemoryReplicaStore } from '../../src/storage/memory-store.js';

describe('rejection records', () => {
  it(`keep the newest ${MAX_REJECTION_RECORDS} and forget the oldest`, async () => {
    const store = new MemoryReplicaStore();
    const extra = 25;
    await store.transact(async (tx) => {
      for (let i = 0; i < MAX_REJECTION_RECORDS + extra; i++) {
        await tx.recordRejection({ outerId: `id-${i}`, reason: 'SignatureInvalid', detail: '', at: i, peer: 'p' });
      }
    });
    const kept = await store.rejections(MAX_REJECTION_RECORDS * 2);
    expect(kept).toHaveLength(MAX_REJECTION_RECORDS);
    await store.transact(async (tx) => {
      expect(await tx.isRejected('id-0')).toBe(false);
      expect(await tx.isRejected(`id-${extra}`)).toBe(true);
      expect(await tx.isRejected(`id-${MAX_REJECTION_RECORDS + extra - 1}`)).toBe(true);
    });
  });
});
