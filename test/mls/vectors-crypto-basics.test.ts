/**
 * The IETF `crypto-basics.json` vectors (mls-implementations test-vectors.md, "Crypto Basics";
 * RFC 9420 §5) against ts-mls's labelled helpers on the mesh's crypto provider, one case per
 * cipher suite, all seven suites:
 * - RefHash, ExpandWithLabel, DeriveSecret and DeriveTreeSecret equal `out` exactly;
 * - SignWithLabel: the vector's signature verifies, and so does ours; with Ed25519 and Ed448
 *   (suites 1, 3, 4, 6), which sign deterministically (RFC 8032), ours equals the vector's byte
 *   for byte. ECDSA (suites 2, 5, 7) draws a fresh nonce per signature, so there only
 *   verification can be compared. Rejected: another label, a changed content, a changed signature;
 * - EncryptWithLabel: the vector's ciphertext decrypts to `plaintext`, and so does our own
 *   encryption of it (HPKE encapsulation is randomised, so our ciphertext cannot equal the
 *   vector's). Rejected: another label, a changed context, a changed ciphertext or KEM output.
 */
import type { CiphersuiteImpl } from 'ts-mls';
import { getCiphersuiteFromId, type CiphersuiteId } from 'ts-mls/crypto/ciphersuite.js';
import { refhash } from 'ts-mls/crypto/hash.js';
import { decryptWithLabel, encryptWithLabel } from 'ts-mls/crypto/hpke.js';
import { deriveSecret, deriveTreeSecret, expandWithLabel } from 'ts-mls/crypto/kdf.js';
import { signWithLabel, verifyWithLabel } from 'ts-mls/crypto/signature.js';
import { CryptoError } from 'ts-mls/mlsError.js';
import { expect, it } from 'vitest';
import { toHex } from '../../src/core/bytes.js';
import { ALL_SUITES, bySuite, flipped, hex, loadVectors, suiteImpl } from '../helpers/mls-vector-suites.js';
import { describeVectors } from '../helpers/vectors.js';

type CryptoBasics = {
  cipher_suite: number;
  ref_hash: { label: string; value: string; out: string };
  expand_with_label: { secret: string; label: string; context: string; length: number; out: string };
  derive_secret: { secret: string; label: string; out: string };
  derive_tree_secret: { secret: string; label: string; generation: number; length: number; out: string };
  sign_with_label: { priv: string; pub: string; content: string; label: string; signature: string };
  encrypt_with_label: {
    priv: string;
    pub: string;
    label: string;
    context: string;
    plaintext: string;
    kem_output: string;
    ciphertext: string;
  };
};

/** Signature schemes whose signatures are a function of key and message (RFC 8032). */
const DETERMINISTIC_SIGNATURES = new Set(['Ed25519', 'Ed448']);

async function checkDerivations(v: CryptoBasics, cs: CiphersuiteImpl): Promise<void> {
  const { ref_hash: r, expand_with_label: e, derive_secret: d, derive_tree_secret: t } = v;
  expect(toHex(await refhash(r.label, hex(r.value), cs.hash)), 'RefHash').toBe(r.out);
  expect(
    toHex(await expandWithLabel(hex(e.secret), e.label, hex(e.context), e.length, cs.kdf)),
    'ExpandWithLabel',
  ).toBe(e.out);
  expect(toHex(await deriveSecret(hex(d.secret), d.label, cs.kdf)), 'DeriveSecret').toBe(d.out);
  expect(
    toHex(await deriveTreeSecret(hex(t.secret), t.label, t.generation, t.length, cs.kdf)),
    'DeriveTreeSecret',
  ).toBe(t.out);
}

async function checkSignature(v: CryptoBasics, cs: CiphersuiteImpl, algorithm: string): Promise<void> {
  const s = v.sign_with_label;
  const [pub, content, signature] = [hex(s.pub), hex(s.content), hex(s.signature)];
  const verify = (label: string, c: Uint8Array, sig: Uint8Array) => verifyWithLabel(pub, label, c, sig, cs.signature);
  expect(await verify(s.label, content, signature), "the vector's signature").toBe(true);
  const ours = await signWithLabel(hex(s.priv), s.label, content, cs.signature);
  expect(await verify(s.label, content, ours), 'our signature').toBe(true);
  if (DETERMINISTIC_SIGNATURES.has(algorithm)) expect(toHex(ours), 'our EdDSA signature').toBe(s.signature);
  expect(await verify(`${s.label}!`, content, signature), 'another label').toBe(false);
  expect(await verify(s.label, flipped(content), signature), 'a changed content').toBe(false);
  expect(await verify(s.label, content, flipped(signature, -1)), 'a changed signature').toBe(false);
}

async function checkEncryption(v: CryptoBasics, cs: CiphersuiteImpl): Promise<void> {
  const e = v.encrypt_with_label;
  const key = await cs.hpke.importPrivateKey(hex(e.priv));
  const [context, kemOutput, ciphertext] = [hex(e.context), hex(e.kem_output), hex(e.ciphertext)];
  const decrypt = (label: string, ctx: Uint8Array, enc: Uint8Array, ct: Uint8Array) =>
    decryptWithLabel(key, label, ctx, enc, ct, cs.hpke);
  expect(toHex(await decrypt(e.label, context, kemOutput, ciphertext)), "the vector's ciphertext").toBe(e.plaintext);
  const ours = await encryptWithLabel(
    await cs.hpke.importPublicKey(hex(e.pub)),
    e.label,
    context,
    hex(e.plaintext),
    cs.hpke,
  );
  expect(toHex(await decrypt(e.label, context, ours.enc, ours.ct)), 'our ciphertext').toBe(e.plaintext);
  await expect(decrypt(`${e.label}!`, context, kemOutput, ciphertext), 'another label').rejects.toThrow(CryptoError);
  await expect(decrypt(e.label, flipped(context), kemOutput, ciphertext), 'a changed context').rejects.toThrow(
    CryptoError,
  );
  await expect(decrypt(e.label, context, kemOutput, flipped(ciphertext, -1)), 'a changed ciphertext').rejects.toThrow(
    CryptoError,
  );
  await expect(decrypt(e.label, context, flipped(kemOutput, -1), ciphertext), 'a changed KEM output').rejects.toThrow(
    CryptoError,
  );
}

const PATH = 'mls/crypto-basics.json';

describeVectors('ts-mls: crypto-basics.json', PATH, () => {
  const vectors = loadVectors<CryptoBasics>(PATH);

  it('has a case for every cipher suite', () => {
    expect(bySuite(vectors).map(([suite]) => suite)).toEqual(ALL_SUITES);
  });

  for (const [suite, cases] of bySuite(vectors)) {
    it(`suite ${suite}: ${cases.length} case(s)`, async () => {
      const cs = await suiteImpl(suite);
      const algorithm = getCiphersuiteFromId(suite as CiphersuiteId).signature;
      for (const v of cases) {
        await checkDerivations(v, cs);
        await checkSignature(v, cs, algorithm);
        await checkEncryption(v, cs);
      }
    });
  }
});
