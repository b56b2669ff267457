/**
 * The argument checks of object naming and access records (src/core/object/keys.ts, access.ts):
 * a wrong-size secret or digest, or a generation outside 1..2³²−1, is a caller's bug and throws
 * before anything is derived or wrapped; a storage id is exactly 64 lowercase hex digits.
 */
import { describe, expect, it } from 'vitest';
import { toHex } from '../../src/core/bytes.js';
import { unwrapSecret, wrapSecret } from '../../src/core/object/access.js';
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
