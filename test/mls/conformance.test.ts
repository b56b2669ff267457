/**
 * The installed MLS library (ts-mls 1.6.4) against the IETF interop vectors:
 * `welcome.json` (Welcome decryption, GroupInfo confirmation tag and signature)
 * and the three passive-client scenarios (welcome, handling-commit, and random:
 * join from a Welcome, then process every epoch's proposals and commit, comparing
 * epoch authenticators). They run through the mesh's crypto provider, but need the
 * vectors' private keys injected and external PSKs, which the bytes-only MlsProvider
 * cannot take, so they call the library directly; the provider suite covers ours.
 * All seven cipher suites run (3, 4 and 6 need ChaCha20-Poly1305 and X448/Ed448:
 * @hpke/chacha20poly1305, @hpke/dhkem-x448 and noble's Ed448, which ts-mls loads
 * when present); suite 1 is the one the mesh runs.
 */
import {
  bytesToBase64,
  decodeMlsMessage,
  getCiphersuiteImpl,
  joinGroup,
  makePskIndex,
  processPrivateMessage,
  processPublicMessage,
  type CiphersuiteImpl,
  type ClientState,
  type PrivateKeyPackage,
} from 'ts-mls';
import { getCiphersuiteFromId, type CiphersuiteId } from 'ts-mls/crypto/ciphersuite.js';
import { verifyGroupInfoConfirmationTag, verifyGroupInfoSignature } from 'ts-mls/groupInfo.js';
import { makeKeyPackageRef } from 'ts-mls/keyPackage.js';
import { decodeRatchetTree } from 'ts-mls/ratchetTree.js';
import { decryptGroupInfo, decryptGroupSecrets } from 'ts-mls/welcome.js';
import { expect, it } from 'vitest';
import { fromHex, toHex } from '../../src/core/bytes.js';
import { meshCryptoProvider } from '../../src/runtime/mls/crypto-provider.js';
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

async function runPassive(v: Passive): Promise<void> {
  const cs = await implFor(v.cipher_suite);
  const welcome = decoded(v.welcome);
  const keyPackage = decoded(v.key_package);
  if (welcome.wireformat !== 'mls_welcome' || keyPackage.wireformat !== 'mls_key_package') throw new Error('fixture');
  const priv: PrivateKeyPackage = {
    initPrivateKey: hex(v.init_priv),
    hpkePrivateKey: hex(v.encryption_priv),
    signaturePrivateKey: hex(v.signature_priv),
  };
  const tree = v.ratchet_tree !== null ? decodeRatchetTree(hex(v.ratchet_tree), 0)?.[0] : undefined;
  const psks = Object.fromEntries(v.external_psks.map((p) => [bytesToBase64(hex(p.psk_id)), hex(p.psk)]));
  let state: ClientState = await joinGroup(
    welcome.welcome,
    keyPackage.keyPackage,
    priv,
    makePskIndex(undefined, psks),
    cs,
    tree,
  );
  expect(toHex(state.keySchedule.epochAuthenticator)).toBe(v.initial_epoch_authenticator);
  for (const [i, epoch] of v.epochs.entries()) {
    for (const m of [...epoch.proposals, epoch.commit].map(decoded)) {
      // processPrivateMessage directly: ts-mls 1.6.4's processMessage drops the PSK index.
      if (m.wireformat === 'mls_private_message') {
        state = (await processPrivateMessage(state, m.privateMessage, makePskIndex(state, psks), cs)).newState;
      } else if (m.wireformat === 'mls_public_message') {
        state = (await processPublicMessage(state, m.publicMessage, makePskIndex(state, psks), cs)).newState;
      } else throw new Error(`epoch ${i}: unexpected ${m.wireformat}`);
    }
    expect(toHex(state.keySchedule.epochAuthenticator), `epoch ${i}`).toBe(epoch.epoch_authenticator);
  }
}

for (const file of [
  'passive-client-welcome.json',
  'passive-client-handling-commit.json',
  'passive-client-random.json',
]) {
  const path = `mls/${file}`;
  describeVectors(`ts-mls passive client: ${file}`, path, () => {
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
