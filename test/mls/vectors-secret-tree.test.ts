/**
 * The IETF `secret-tree.json` vectors (mls-implementations test-vectors.md, "Secret Tree"; RFC
 * 9420 §9) against ts-mls on the mesh's crypto provider: all three trees (1, 8 and 32 leaves) of
 * all seven cipher suites. The sender-data key and nonce of the sample ciphertext equal the
 * vector's. For every leaf, the handshake and application ratchets of a secret tree built from
 * `encryption_secret` are walked the way a receiver walks them (`ratchetToGeneration`, as when
 * decrypting a PrivateMessage: generation 0, then onward from that state to the next listed
 * generation), and the key and nonce of each listed generation equal the vector's. The reuse
 * guard, XORed into the nonce by that path (§6.3.2), is zero here, so the nonce is the ratchet's.
 */
import type { CiphersuiteImpl } from 'ts-mls';
import { defaultKeyRetentionConfig } from 'ts-mls/keyRetentionConfig.js';
import { createSecretTree, ratchetToGeneration, type SecretTree } from 'ts-mls/secretTree.js';
import { expandSenderDataKey, expandSenderDataNonce, type ReuseGuard } from 'ts-mls/sender.js';
import { expect, it } from 'vitest';
import { toHex } from '../../src/core/bytes.js';
import { ALL_SUITES, bySuite, hex, loadVectors, suiteImpl } from '../helpers/mls-vector-suites.js';
import { describeVectors } from '../helpers/vectors.js';

type SecretTreeVector = {
  cipher_suite: number;
  sender_data: { sender_data_secret: string; ciphertext: string; key: string; nonce: string };
  encryption_secret: string;
  leaves: Generation[][];
};

type Generation = {
  generation: number;
  handshake_key: string;
  handshake_nonce: string;
  application_key: string;
  application_nonce: string;
};

const ZERO_GUARD = new Uint8Array(4) as ReuseGuard;

/** The key and nonce of each listed generation of one leaf's ratchet, walked forward in order. */
async function walk(
  tree: SecretTree,
  leafIndex: number,
  generations: number[],
  kind: 'application' | 'commit',
  cs: CiphersuiteImpl,
): Promise<{ key: string; nonce: string }[]> {
  const out: { key: string; nonce: string }[] = [];
  let state = tree;
  for (const generation of generations) {
    const senderData = { leafIndex, generation, reuseGuard: ZERO_GUARD };
    const r = await ratchetToGeneration(state, senderData, kind, defaultKeyRetentionConfig, cs);
    out.push({ key: toHex(r.key), nonce: toHex(r.nonce) });
    state = r.newTree;
  }
  return out;
}

async function checkTree(v: SecretTreeVector, cs: CiphersuiteImpl): Promise<void> {
  const s = v.sender_data;
  const [secret, sample] = [hex(s.sender_data_secret), hex(s.ciphertext)];
  expect(toHex(await expandSenderDataKey(cs, secret, sample)), 'sender data key').toBe(s.key);
  expect(toHex(await expandSenderDataNonce(cs, secret, sample)), 'sender data nonce').toBe(s.nonce);
  const tree = await createSecretTree(v.leaves.length, hex(v.encryption_secret), cs.kdf);
  for (const [leaf, listed] of v.leaves.entries()) {
    expect(listed.length, `leaf ${leaf}`).toBeGreaterThan(0);
    const generations = listed.map((g) => g.generation);
    const handshake = await walk(tree, leaf, generations, 'commit', cs);
    const application = await walk(tree, leaf, generations, 'application', cs);
    expect(handshake, `leaf ${leaf} handshake`).toEqual(
      listed.map((g) => ({ key: g.handshake_key, nonce: g.handshake_nonce })),
    );
    expect(application, `leaf ${leaf} application`).toEqual(
      listed.map((g) => ({ key: g.application_key, nonce: g.application_nonce })),
    );
  }
}

const PATH = 'mls/secret-tree.json';

describeVectors('ts-mls: secret-tree.json', PATH, () => {
  const vectors = loadVectors<SecretTreeVector>(PATH);

  it('has cases for every cipher suite', () => {
    expect(bySuite(vectors).map(([suite]) => suite)).toEqual(ALL_SUITES);
  });

  for (const [suite, cases] of bySuite(vectors)) {
    const leaves = cases.map((v) => v.leaves.length).join(', ');
    it(`suite ${suite}: ${cases.length} trees (${leaves} leaves)`, async () => {
      const cs = await suiteImpl(suite);
      for (const v of cases) await checkTree(v, cs);
    });
  }
});
