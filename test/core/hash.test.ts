/**
 * `blake3()` (core/hash.ts) runs WASM BLAKE3 once instantiated and the pure-JS
 * @noble/hashes BLAKE3 before; both must be the same function. Checked on the
 * input pattern of the official BLAKE3 test vectors (byte i = i mod 251) at
 * their lengths, and on two published digests.
 */
import { describe, expect, it } from 'vitest';
import { toHex, utf8 } from '../../src/core/bytes.js';
import { blake3, blake3Reference, blake3Stream, deriveKey, hashReady } from '../../src/core/hash.js';

/** The lengths of the official BLAKE3 test_vectors.json cases. */
const VECTOR_LENGTHS = [
  0, 1, 2, 3, 4, 5, 6, 7, 8, 63, 64, 65, 127, 128, 129, 1023, 1024, 1025, 2048, 2049, 3072, 3073, 4096, 4097, 5120,
  5121, 6144, 6145, 7168, 7169, 8192, 8193, 16384, 31744, 102400,
];

const vectorInput = (length: number): Uint8Array => Uint8Array.from({ length }, (_, i) => i % 251);

describe('blake3', () => {
  it('uses the WASM hasher in Node', async () => {
    expect(await hashReady()).toBe(true);
  });

  it('matches the published digests', async () => {
    await hashReady();
    expect(toHex(blake3(new Uint8Array()))).toBe('af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262');
    expect(toHex(blake3(utf8('abc')))).toBe('6437b3ac38465133ffb63b75273a8db548c558465d79db03fd359c6cd5bd9d85');
  });

  it('agrees with @noble/hashes on every official vector length', async () => {
    await hashReady();
    for (const length of VECTOR_LENGTHS) {
      const input = vectorInput(length);
      expect(toHex(blake3(input)), `length ${length}`).toBe(toHex(blake3Reference(input)));
    }
  });

  it('agrees on subarrays (offset views of a larger buffer)', async () => {
    await hashReady();
    const big = vectorInput(5000);
    const view = big.subarray(17, 4017);
    expect(toHex(blake3(view))).toBe(toHex(blake3Reference(view.slice())));
  });

  it('hashes in pieces as it hashes whole, with a WASM instance of its own', async () => {
    const input = vectorInput(102400);
    const stream = await blake3Stream();
    for (let at = 0; at < input.length; at += 7000) stream.update(input.subarray(at, at + 7000));
    // Another hash in between does not disturb the stream's own state.
    expect(toHex(blake3(utf8('abc')))).toBe('6437b3ac38465133ffb63b75273a8db548c558465d79db03fd359c6cd5bd9d85');
    expect(toHex(stream.digest())).toBe(toHex(blake3Reference(input)));
  });
});

describe('deriveKey', () => {
  it('is HKDF-SHA-256: RFC 5869 test case 3 (no salt, empty info)', () => {
    const okm = deriveKey(new Uint8Array(22).fill(0x0b), '', 42);
    expect(toHex(okm)).toBe('8da4e775a563c18f715f802a063c5a31b8a11f5c5ee1879ec3454e5f3c738d2d9d201395faa4b61a96c8');
  });
});
