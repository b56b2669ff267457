/**
 * The IETF MLS interop vectors. The three passive-client scenarios (welcome,
 * handling-commit and random: join from a Welcome, then process every epoch's
 * proposals and commit, comparing epoch authenticators) run through the mesh's own
 * `MlsProvider` (runtime/mls/ts-mls-provider.ts), which takes the vectors' private
 * keys, external PSKs and external ratchet trees. `welcome.json` checks Welcome
 * decryption and the GroupInfo's confirmation tag and signature, a step inside a join
 * that a provider does not expose (its Welcomes name no tree, so a provider cannot
 * complete the join): it calls ts-mls, the library behind the provider, directly.
 * All seven cipher suites run (3, 4 and 6 need ChaCha20-Poly1305 and X448/Ed448:
 * @hpke/chacha20poly1305, @hpke/dhkem-x448 and noble's Ed448, which ts-mls loads
 * when present); suite 1 is the one the mesh runs.
 */
import { decodeMlsMessage, getCiphersuiteImpl, type CiphersuiteImpl } from 'ts-mls';
import { getCiphersuiteFromId, type CiphersuiteId } from 'ts-mls/crypto/ciphersuite.js';
import { verifyGroupInfoConfirmationTag, verifyGroupInfoSignature } from 'ts-mls/groupInfo.js';
import { makeKeyPackageRef } from 'ts-mls/keyPackage.js';
import { decryptGroupInfo, decryptGroupSecrets } from 'ts-mls/welcome.js';
import { expect, it } from 'vitest';
import { fromHex, toHex } from '../../src/core/bytes.js';
import { meshCryptoProvider } from '../../src/runtime/mls/crypto-provider.js';
import { TsMlsProvider } from '../../src/runtime/mls/ts-mls-provider.js';
import { describeVectors, hasVector, readJsonVector } from '../helpers/vectors.js';

const hex = (s: string): Uint8Array => fromHex(s)!;

type Passive = {
  cipher_suite: number;
  external_psks: { psk_id: string; psk: string }[];
  key_package: string;
  signature_priv: string;
  encryption_priv: string;
  init_priv: string;
  welcome: string;
  ratchet_tree: string | null;
  initial_epoch_authenticator: string;
  epochs: { proposals: string[]; commit: string; epoch_authenticator: string }[];
};

type WelcomeVector = {
  cipher_suite: number;
  init_priv: string;
  key_package: string;
  signer_pub: string;
  welcome: string;
};

const impls = new Map<number, Promise<CiphersuiteImpl>>();
const implFor = (suite: number) => {
  let impl = impls.get(suite);
  if (!impl)
    impls.set(suite, (impl = getCiphersuiteImpl(getCiphersuiteFromId(suite as CiphersuiteId), meshCryptoProvider)));
  return impl;
};

function decoded(bytes: string) {
  const m = decodeMlsMessage(hex(bytes), 0)?.[0];
  if (!m) throw new Error('vector message does not decode');
  return m;
}

/** Providers by cipher suite, each accepting every credential (the vectors' are not mesh leaf bindings). */
const providers = new Map<number, Promise<TsMlsProvider>>();
const providerFor = (suite: number) => {
  let provider = providers.get(suite);
  if (!provider) providers.set(suite, (provider = TsMlsProvider.create(async () => true, suite)));
  return provider;
};

const value = <T>(r: { ok: true; value: T } | { ok: false; error: { reason: string } }, what: string): T => {
  if (!r.ok) throw new Error(`${what}: ${r.error.reason}`);
  return r.value;
};

/**
 * A passive client through our MlsProvider: its key package imported with the vector's private
 * keys, joined from the Welcome (with the vector's tree when the Welcome carries none, and its
 * external PSKs), then every epoch's proposals and commit processed, comparing the epoch
 * authenticator after the join and after each commit.
 */
async function runPassive(v: Passive): Promise<void> {
  const provider = await providerFor(v.cipher_suite);
  const psks = v.external_psks.map((p) => ({ id: hex(p.psk_id), secret: hex(p.psk) }));
  const own = value(
    provider.importKeyPackage(hex(v.key_package), {
      init: hex(v.init_priv),
      encryption: hex(v.encryption_priv),
      signature: hex(v.signature_priv),
    }),
    'import',
  );
  let state = value(
    await provider.join(hex(v.welcome), own, {
      psks,
      ...(v.ratchet_tree !== null ? { ratchetTree: hex(v.ratchet_tree) } : {}),
    }),
    'join',
  );
  const authenticator = () => toHex(value(provider.summary(state), 'summary').epochAuthenticator);
  expect(authenticator()).toBe(v.initial_epoch_authenticator);
  for (const [i, epoch] of v.epochs.entries()) {
    for (const proposal of epoch.proposals) {
      const processed = value(await provider.process(state, hex(proposal), { psks }), `epoch ${i} proposal`);
      expect(processed.kind, `epoch ${i}`).toBe('proposal');
      state = processed.state;
    }
    const committed = value(await provider.process(state, hex(epoch.commit), { psks }), `epoch ${i} commit`);
    expect(committed.kind, `epoch ${i}`).toBe('commit');
    state = committed.state;
    expect(authenticator(), `epoch ${i}`).toBe(epoch.epoch_authenticator);
  }
}

for (const file of [
  'passive-client-welcome.json',
  'passive-client-handling-commit.json',
  'passive-client-random.json',
]) {
  const path = `mls/${file}`;
  describeVectors(`MlsProvider as a passive client: ${file}`, path, () => {
    const vectors = hasVector(path) ? (readJsonVector(path) as Passive[]) : [];
    for (const suite of [...new Set(vectors.map((v) => v.cipher_suite))].sort()) {
      const ofSuite = vectors.filter((v) => v.cipher_suite === suite);
      it(`suite ${suite}: ${ofSuite.length} vectors`, async () => {
        for (const v of ofSuite) await runPassive(v);
      }, 120_000);
    }
  });
}

describeVectors('ts-mls: welcome.json', 'mls/welcome.json', () => {
  it('decrypts every Welcome, of every suite, and verifies its GroupInfo', async () => {
    const vectors = readJsonVector('mls/welcome.json') as WelcomeVector[];
    let checked = 0;
    for (const v of vectors) {
      const cs = await implFor(v.cipher_suite);
      const welcome = decoded(v.welcome);
      const keyPackage = decoded(v.key_package);
      if (welcome.wireformat !== 'mls_welcome' || keyPackage.wireformat !== 'mls_key_package')
        throw new Error('fixture');
      const ref = await makeKeyPackageRef(keyPackage.keyPackage, cs.hash);
      const secrets = await decryptGroupSecrets(
        await cs.hpke.importPrivateKey(hex(v.init_priv)),
        ref,
        welcome.welcome,
        cs.hpke,
      );
      if (!secrets) throw new Error('group secrets did not decrypt');
      const psk = new Uint8Array(cs.kdf.size);
      const info = await decryptGroupInfo(welcome.welcome, secrets.joinerSecret, psk, cs);
      if (!info) throw new Error('group info did not decrypt');
      expect(await verifyGroupInfoConfirmationTag(info, secrets.joinerSecret, psk, cs)).toBe(true);
      expect(await verifyGroupInfoSignature(info, hex(v.signer_pub), cs.signature)).toBe(true);
      checked++;
    }
    expect(checked).toBeGreaterThan(0);
  });
});
