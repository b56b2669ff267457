/**
 * MLS's HPKE runs on JavaScript X25519 (runtime/mls/crypto-provider.ts), so an engine whose
 * WebCrypto cannot import some X25519 keys (WebKitGTK: seeds that start with a zero byte)
 * still derives, seals and opens every key; the IETF vectors run through the same provider
 * (conformance.test.ts).
 */
import { getCiphersuiteImpl } from 'ts-mls';
import { getCiphersuiteFromName } from 'ts-mls/crypto/ciphersuite.js';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { meshCryptoProvider } from '../../src/runtime/mls/crypto-provider.js';

afterEach(() => vi.restoreAllMocks());

describe('MLS crypto provider', () => {
  it('seals and opens with a private key whose seed starts with a zero byte, using no WebCrypto X25519', async () => {
    const cs = await getCiphersuiteImpl(
      getCiphersuiteFromName('MLS_128_DHKEMX25519_AES128GCM_SHA256_Ed25519'),
      meshCryptoProvider,
    );
    const x25519 = (algorithm: unknown): boolean =>
      (typeof algorithm === 'string' ? algorithm : (algorithm as { name?: string }).name) === 'X25519';
    const calls = [
      vi.spyOn(crypto.subtle, 'importKey'),
      vi.spyOn(crypto.subtle, 'generateKey'),
      vi.spyOn(crypto.subtle, 'deriveBits'),
    ];
    // Derive node keys (RFC 9420 §7.4) until one's private key starts with a zero byte (1 in 256).
    let pair = await cs.hpke.deriveKeyPair(new Uint8Array(32));
    for (let i = 1; (await cs.hpke.exportPrivateKey(pair.privateKey))[0] !== 0; i++) {
      expect(i).toBeLessThan(5000);
      pair = await cs.hpke.deriveKeyPair(new Uint8Array(32).fill(i % 256).map((b, j) => (j === 0 ? i >> 8 : b)));
    }
    const { privateKey, publicKey } = pair;
    // A key that travels as bytes in a group state is imported again before use.
    const reimported = await cs.hpke.importPrivateKey(await cs.hpke.exportPrivateKey(privateKey));
    const info = new TextEncoder().encode('sov/test');
    const sealed = await cs.hpke.seal(publicKey, new TextEncoder().encode('path secret'), info);
    const opened = await cs.hpke.open(reimported, sealed.enc, sealed.ct, info);
    expect(new TextDecoder().decode(opened)).toBe('path secret');
    for (const spy of calls) expect(spy.mock.calls.filter((args) => x25519(args[1]) || x25519(args[0]))).toEqual([]);
  });

  it('draws a signature key again when the engine fails a generation (WebKitGTK: 1 in 128)', async () => {
    const cs = await getCiphersuiteImpl(
      getCiphersuiteFromName('MLS_128_DHKEMX25519_AES128GCM_SHA256_Ed25519'),
      meshCryptoProvider,
    );
    const generate = crypto.subtle.generateKey.bind(crypto.subtle);
    const spy = vi
      .spyOn(crypto.subtle, 'generateKey')
      .mockRejectedValueOnce(
        new DOMException('The operation failed for an operation-specific reason', 'OperationError'),
      )
      .mockImplementation(generate);
    const pair = await cs.signature.keygen();
    expect(spy).toHaveBeenCalledTimes(2);
    const message = new TextEncoder().encode('sov/test');
    expect(await cs.signature.verify(pair.publicKey, message, await cs.signature.sign(pair.signKey, message))).toBe(
      true,
    );
  });

  it('reports a signature key generation that fails every time', async () => {
    const cs = await getCiphersuiteImpl(
      getCiphersuiteFromName('MLS_128_DHKEMX25519_AES128GCM_SHA256_Ed25519'),
      meshCryptoProvider,
    );
    vi.spyOn(crypto.subtle, 'generateKey').mockRejectedValue(new DOMException('always', 'OperationError'));
    await expect(cs.signature.keygen()).rejects.toThrow('always');
  });
});
