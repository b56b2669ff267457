/**
 * The crypto ts-mls runs on: its default provider (WebCrypto hashes and AEAD, noble
 * signatures), except that DHKEM(X25519) is @hpke/dhkem-x25519, the same HPKE KEM
 * implemented on noble's X25519 in JavaScript, instead of the engine's WebCrypto X25519.
 *
 * Why: WebKitGTK 2.50 cannot import an X25519 private key whose 32-byte seed starts with a
 * zero byte (its WebCrypto runs on libgcrypt). MLS derives its HPKE key pairs from path
 * secrets (RFC 9420 §7.4), so 1 derived key in 256 fails there — the same key on every
 * member, so no retry helps, and a WebKit member cannot process that commit or found a
 * group. MLS private keys already live in the group state as bytes (wrapped at rest by the
 * MLS worker), so a JavaScript implementation gives up no non-extractability.
 * Interoperability is unchanged: the KEM is the same RFC 9180 DHKEM; the IETF vectors
 * (test/mls) run through this provider.
 *
 * ts-mls's Ed25519 signatures run on WebCrypto where it exists, and WebKitGTK fails about
 * one Ed25519 key generation in 128 the same way (a seed starting with a zero byte). Only
 * *generation* fails there — importing, signing and verifying any key works, measured with
 * 20,000 keys — so a fresh draw is the fix: `keygen` goes through `retryingKeyGeneration`
 * (CI met it making a standing key package, an offer to join).
 */
import { CipherSuite } from '@hpke/core';
import { DhkemX25519HkdfSha256 } from '@hpke/dhkem-x25519';
import type { CiphersuiteImpl } from 'ts-mls';
import type { CryptoProvider } from 'ts-mls/crypto/provider.js';
import { defaultCryptoProvider } from 'ts-mls/crypto/implementation/default/provider.js';
import { makeAead } from 'ts-mls/crypto/implementation/default/makeAead.js';
import { makeKdf } from 'ts-mls/crypto/implementation/default/makeKdfImpl.js';
import { makeGenericHpke } from 'ts-mls/crypto/implementation/hpke.js';
import { retryingKeyGeneration } from '../../storage/key-wrap.js';

export const meshCryptoProvider: CryptoProvider = {
  async getCiphersuiteImpl(cs): Promise<CiphersuiteImpl> {
    const base = await defaultCryptoProvider.getCiphersuiteImpl(cs);
    const { signature } = base;
    const impl = {
      ...base,
      signature: { ...signature, keygen: () => retryingKeyGeneration(() => signature.keygen()) },
    };
    if (cs.hpke.kem !== 'DHKEM-X25519-HKDF-SHA256') return impl;
    const [aead, aeadInterface] = await makeAead(cs.hpke.aead);
    const suite = new CipherSuite({ kem: new DhkemX25519HkdfSha256(), kdf: makeKdf(cs.hpke.kdf), aead: aeadInterface });
    return { ...impl, hpke: await makeGenericHpke(cs.hpke, aead, suite) };
  },
};
