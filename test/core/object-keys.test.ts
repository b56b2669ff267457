/**
 * The argument checks of object naming and access records (src/core/object/keys.ts, access.ts):
 * a wrong-size secret or digest, or a generation outside 1..2³²−1, is a caller's bug and throws
 * before anything is derived or wrapped; a storage id is exactly 64 lowercase hex digits.
 */
import { describe, expect, it } from 'vitest';
import { toBase64Url, toHex } from '../../src/core/bytes.js';
import { MAX_VALUE_CHARS } from '../../src/core/event.js';
import {
  BATCH_ENTRY_BYTES,
  BATCH_ID_BYTES,
  decodeAccessBatch,
  encodeAccessBatch,
  MAX_BATCH_ENTRIES,
  unwrapSecret,
  wrapSecret,
} from '../../src/core/object/access.js';
import { isStorageId, objectKeys, storageIdOf, type StorageId } from '../../src/core/object/keys.js';
import type { Random } from '../../src/core/ports.js';

const random: Random = { bytes: (n) => new Uint8Array(n).fill(9) };
const SECRET = new Uint8Array(32).fill(1);
const KEK = new Uint8Array(32).fill(2);
const ID = toHex(new Uint8Array(32).fill(0xab)) as StorageId;

describe('storage ids', () => {
  it('are 64 lowercase hex digits, and nothing else', () => {
    expect(isStorageId(ID)).toBe(true);
    for (const bad of [ID.toUpperCase(), ID.slice(1), `${ID}0`, [ID], 5, undefined, `${ID.slice(2)}zz`]) {
      expect(isStorageId(bad), String(bad)).toBe(false);
    }
  });

  it('are made from a 32-byte digest only', () => {
    expect(storageIdOf(new Uint8Array(32).fill(0xab))).toBe(ID);
    expect(() => storageIdOf(new Uint8Array(31))).toThrow('object: a storage id is 32 bytes');
    expect(() => storageIdOf(new Uint8Array(33))).toThrow('object: a storage id is 32 bytes');
  });
});

describe('object keys', () => {
  it('derive from a 32-byte secret only', () => {
    expect(objectKeys(SECRET).dek).toHaveLength(32);
    expect(() => objectKeys(SECRET.subarray(1))).toThrow('object: an object secret is 32 bytes');
  });
});

describe('access records', () => {
  const at = (gen: number) => ({ storageId: ID, domain: 'GENERAL' as const, gen });

  it('wrap a 32-byte secret under generations 1 to 2³²−1, each opening only as itself', () => {
    for (const gen of [1, 0xffffffff]) {
      const record = wrapSecret(SECRET, at(gen), KEK, random);
      const opened = unwrapSecret(record, KEK);
      expect(opened.ok && toHex(opened.value)).toBe(toHex(SECRET));
    }
  });

  it('refuse a secret of the wrong size', () => {
    expect(() => wrapSecret(SECRET.subarray(1), at(1), KEK, random)).toThrow('access: an object secret is 32 bytes');
    expect(() => wrapSecret(new Uint8Array(33), at(1), KEK, random)).toThrow('access: an object secret is 32 bytes');
  });

  it.each([0, -1, 1.5, 2 ** 32, Number.NaN])('refuse generation %s, which would wrap silently', (gen) => {
    expect(() => wrapSecret(SECRET, at(gen), KEK, random)).toThrow('access: generation out of range');
  });
});

describe('batches of access records', () => {
  const ids = [0xab, 0xcd, 0xef].map((b) => toHex(new Uint8Array(32).fill(b)) as StorageId);
  const records = ids.map((storageId, i) =>
    wrapSecret(
      SECRET.map((x) => x + i),
      { storageId, domain: 'GENERAL', gen: 4 },
      KEK,
      random,
    ),
  );

  it('name each object by the first 8 bytes of its id, and each record still opens only as its object', () => {
    const bytes = encodeAccessBatch(records);
    expect(bytes).toHaveLength(3 * BATCH_ENTRY_BYTES);
    const decoded = decodeAccessBatch(bytes);
    if (!decoded.ok) throw new Error(decoded.error.type);
    expect(decoded.value.map((r) => r.prefix)).toEqual(ids.map((id) => id.slice(0, 2 * BATCH_ID_BYTES)));
    for (const [i, { wrapped }] of decoded.value.entries()) {
      const opened = unwrapSecret({ storageId: ids[i]!, domain: 'GENERAL', gen: 4, wrapped }, KEK);
      expect(opened.ok && opened.value[0]).toBe(1 + i);
      // The same record claimed for another object (a shared prefix), or another generation, does not open.
      expect(unwrapSecret({ storageId: ids[(i + 1) % 3]!, domain: 'GENERAL', gen: 4, wrapped }, KEK).ok).toBe(false);
      expect(unwrapSecret({ storageId: ids[i]!, domain: 'GENERAL', gen: 3, wrapped }, KEK).ok).toBe(false);
    }
  });

  it('hold 1 to MAX_BATCH_ENTRIES records, and anything else is refused whole', () => {
    const full = Array.from({ length: MAX_BATCH_ENTRIES }, () => records[0]!);
    expect(decodeAccessBatch(encodeAccessBatch(full))).toMatchObject({ ok: true });
    // A full batch is one row's column value: the state plane signs nothing longer.
    expect(toBase64Url(encodeAccessBatch(full)).length).toBeLessThanOrEqual(MAX_VALUE_CHARS);
    expect(() => encodeAccessBatch([])).toThrow('access: a batch holds');
    expect(() => encodeAccessBatch([...full, records[0]!])).toThrow('access: a batch holds');
    expect(() => encodeAccessBatch([{ storageId: ID, wrapped: new Uint8Array(59) }])).toThrow('60 bytes');
    const bytes = encodeAccessBatch(records);
    for (const bad of [
      new Uint8Array(0),
      bytes.subarray(1),
      bytes.subarray(0, BATCH_ENTRY_BYTES - 1),
      new Uint8Array((MAX_BATCH_ENTRIES + 1) * BATCH_ENTRY_BYTES),
    ]) {
      expect(decodeAccessBatch(bad), `${bad.length} bytes`).toMatchObject({
        ok: false,
        error: { type: 'AccessBatchMalformed' },
      });
    }
  });
});
