/**
 * Leaf bindings refused field by field (src/core/mls/leaf-binding.ts): only a well-formed binding
 * whose signature verifies strictly under the machine key ties a leaf to a machine, and the
 * authenticator also wants the leaf key MLS reports and an admitted machine.
 */
import { ed25519 } from '@noble/curves/ed25519.js';
import { describe, expect, it } from 'vitest';
import { concat, toHex, utf8 } from '../../src/core/bytes.js';
import { encodeCbor } from '../../src/core/cbor.js';
import { bindLeaf, leafAuthenticator, readLeafBinding } from '../../src/core/mls/leaf-binding.js';

const secret = new Uint8Array(32).fill(7);
const machine = ed25519.getPublicKey(secret);
const signer = { publicKey: machine, sign: async (m: Uint8Array) => ed25519.sign(m, secret) };
const leaf = new Uint8Array(32).fill(9);
const sig = ed25519.sign(concat(utf8('sov/1/mls-leaf'), leaf), secret);
const BINDING = { v: 1, machine, leaf, sig };

describe('leaf bindings', () => {
  it('bind a leaf key to the machine that signed it', async () => {
    const read = readLeafBinding(await bindLeaf(signer, leaf));
    expect(read && [toHex(read.machine), toHex(read.leaf)]).toEqual([toHex(machine), toHex(leaf)]);
  });

  const identity = new Uint8Array(32);
  identity[0] = 1;
  const forged = new Uint8Array(64);
  forged[0] = 1;
  it.each<[string, unknown]>([
    ['a list', [BINDING]],
    ['version 2', { ...BINDING, v: 2 }],
    ['a field more', { ...BINDING, x: 1 }],
    ['a field less', { v: 1, machine, leaf }],
    ['a short machine key', { ...BINDING, machine: machine.subarray(1) }],
    ['a short leaf key', { ...BINDING, leaf: leaf.subarray(1) }],
    ['a short signature', { ...BINDING, sig: sig.subarray(1) }],
    ['another leaf under the signature', { ...BINDING, leaf: new Uint8Array(32).fill(8) }],
    ['a signature without its label', { ...BINDING, sig: ed25519.sign(leaf, secret) }],
    ['a machine key that is no curve point', { ...BINDING, machine: new Uint8Array(32).fill(0xff) }],
    ['a small-order machine key with a forged signature', { v: 1, machine: identity, leaf, sig: forged }],
  ])('refuse %s', (_name, value) => {
    expect(readLeafBinding(encodeCbor(value))).toBeUndefined();
  });

  it('refuse bytes that are not CBOR, or too many of them', () => {
    expect(readLeafBinding(Uint8Array.of(0xff))).toBeUndefined();
    expect(readLeafBinding(encodeCbor({ ...BINDING, pad: new Uint8Array(300) }))).toBeUndefined();
  });

  it('authenticate a leaf only with the key MLS reports and a machine still admitted', async () => {
    const bound = await bindLeaf(signer, leaf);
    const admitted = leafAuthenticator(async (m) => toHex(m) === toHex(machine));
    const nobody = leafAuthenticator(async () => false);
    expect(await admitted(bound, leaf)).toBe(true);
    expect(await admitted(bound, new Uint8Array(32).fill(8))).toBe(false);
    expect(await nobody(bound, leaf)).toBe(false);
    expect(await admitted(Uint8Array.of(0xff), leaf)).toBe(false);
  });
});
