/**
 * Hex helpers (core/bytes.ts): `hexThen` builds an id with its suffix in one
 * string, `internedHex` hands back one string object per recently seen value.
 */
import { describe, expect, it } from 'vitest';
import { fromHex, hexThen, internedHex, toHex } from '../../src/core/bytes.js';

const bytesOf = (n: number, fill: number): Uint8Array => new Uint8Array(n).fill(fill);

describe('hex', () => {
  it('toHex round-trips through fromHex, at every length up to past the scratch buffer', () => {
    for (const n of [0, 1, 32, 127, 128, 129, 300]) {
      const bytes = Uint8Array.from({ length: n }, (_, i) => (i * 37) & 255);
      expect(fromHex(toHex(bytes))).toEqual(bytes);
    }
  });

  it('hexThen equals toHex followed by the suffix, ASCII or not', () => {
    const id = Uint8Array.from({ length: 32 }, (_, i) => i);
    for (const suffix of ['', '.GENERAL.1', '.RESTRICTED.12.trusted', '.ümlaut', '😀']) {
      expect(hexThen(id, suffix)).toBe(toHex(id) + suffix);
    }
  });

  it('internedHex returns the same string object for equal bytes, and the right hex after eviction', () => {
    const a = internedHex(bytesOf(32, 1));
    expect(internedHex(bytesOf(32, 1))).toBe(a);
    expect(a).toBe(toHex(bytesOf(32, 1)));
    // Twenty more distinct values push the first out of the ring; its hex is still right.
    for (let v = 2; v < 22; v++) expect(internedHex(bytesOf(32, v))).toBe(toHex(bytesOf(32, v)));
    expect(internedHex(bytesOf(32, 1))).toBe(a);
  });

  it("internedHex keeps its own copy: changing the caller's bytes afterwards changes no answer", () => {
    const key = bytesOf(32, 200);
    const hex = internedHex(key);
    key.fill(201);
    expect(internedHex(bytesOf(32, 200))).toBe(hex);
    expect(internedHex(key)).toBe(toHex(bytesOf(32, 201)));
  });
});
