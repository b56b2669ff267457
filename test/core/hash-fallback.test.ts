/**
 * Where WebAssembly cannot run (a page whose CSP forbids it, an old WebView), BLAKE3 falls back
 * to @noble/hashes: the same digests, whole or in pieces, and `hashReady` says the WASM hasher
 * is not in use. hash-wasm is made to fail here as it fails there.
 */
import { blake3 as nobleBlake3 } from '@noble/hashes/blake3.js';
import { describe, expect, it, vi } from 'vitest';
import { toHex, utf8 } from '../../src/core/bytes.js';

vi.mock('hash-wasm', () => ({
  createBLAKE3: () => Promise.reject(new Error('WebAssembly is not allowed here')),
}));

// Loaded inside each test, so that the hasher's failed start happens while a test runs
// (mutation testing counts only code a test runs as covered).
const load = () => import('../../src/core/hash.js');

describe('BLAKE3 without WebAssembly', () => {
  it('says the WASM hasher is not in use', async () => {
    const { hashReady } = await load();
    expect(await hashReady()).toBe(false);
  });

  it('gives the same digests as @noble/hashes, whole and in pieces', async () => {
    const { blake3, blake3Stream } = await load();
    const data = utf8('sov/1 '.repeat(1000));
    expect(toHex(blake3(data))).toBe(toHex(nobleBlake3(data)));
    const stream = await blake3Stream();
    stream.update(data.subarray(0, 100));
    stream.update(data.subarray(100));
    expect(toHex(stream.digest())).toBe(toHex(nobleBlake3(data)));
  });
});
