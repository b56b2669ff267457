/**
 * The IETF `treekem.json` vectors (mls-implementations test-vectors.md, "TreeKEM"; RFC 9420
 * §7.4-7.9, §12.4.1-12.4.2) against ts-mls on the mesh's crypto provider: all eleven trees of
 * all seven cipher suites, every UpdatePath of each.
 * - Private state: each listed leaf's `encryption_priv` opens what is sealed to its leaf's HPKE
 *   key (ts-mls's HPKE interface cannot compute a public key from a private one), and each path
 *   secret derives the key pair whose public key the tree holds at that node.
 * - Each vector UpdatePath: it merges into the tree (ts-mls checks the leaf's parent hash, and
 *   here every parent hash of the merged tree verifies too) and its leaf's signature verifies;
 *   the merged tree's hash equals `tree_hash_after`. Every other member with a non-blank leaf
 *   (exactly those for which `path_secrets` holds a value) decrypts `path_secrets[j]` from it,
 *   under the vector's GroupContext with `tree_hash_after`, and derives `commit_secret`.
 *   Rejected: each path with its leaf's parent hash changed; the first path of each tree
 *   decrypted under a GroupContext of another epoch.
 * - A new UpdatePath of ours from the same sender (its `signature_priv`) over `ratchet_tree`:
 *   a receiver merging our path gets our tree hash and verifies every parent hash in it, and
 *   every other member decrypts it and derives our commit secret. ts-mls encrypts a new path under
 *   the provisional GroupContext of the commit (RFC 9420 §12.4.1: epoch + 1, the new tree hash),
 *   so members decrypt under that one. The path secrets are random, so nothing here can equal
 *   vector bytes; the round trip is what test-vectors.md asks.
 * Speed (about 650 member decryptions per suite; X25519 and X448 run in JavaScript): the paths
 * of a tree run concurrently, since the P-curve suites' HPKE runs in WebCrypto's thread pool,
 * and HPKE work that repeats itself is done once per suite (`sharingHpkeWork`). Every distinct
 * import and decryption still runs through the provider.
 */
import type { CiphersuiteImpl } from 'ts-mls';
import { applyUpdatePathSecret } from 'ts-mls/createCommit.js';
import type { PrivateKey } from 'ts-mls/crypto/hpke.js';
import { deriveSecret } from 'ts-mls/crypto/kdf.js';
import type { GroupContext } from 'ts-mls/groupContext.js';
import { verifyLeafNodeSignature } from 'ts-mls/leafNode.js';
import { CryptoError, ValidationError } from 'ts-mls/mlsError.js';
import { verifyParentHashes } from 'ts-mls/parentHash.js';
import { getCommitSecret } from 'ts-mls/pathSecrets.js';
import type { PrivateKeyPath } from 'ts-mls/privateKeyPath.js';
import { decodeRatchetTree, getHpkePublicKey, type RatchetTree } from 'ts-mls/ratchetTree.js';
import { treeHashRoot } from 'ts-mls/treeHash.js';
import { leafToNodeIndex, toLeafIndex, type LeafIndex } from 'ts-mls/treemath.js';
import { applyUpdatePath, createUpdatePath, decodeUpdatePath, type UpdatePath } from 'ts-mls/updatePath.js';
import { expect, it } from 'vitest';
import { toHex } from '../../src/core/bytes.js';
import { ALL_SUITES, bySuite, flipped, hex, loadVectors, suiteImpl } from '../helpers/mls-vector-suites.js';
import { describeVectors } from '../helpers/vectors.js';

type TreeKem = {
  cipher_suite: number;
  group_id: string;
  epoch: number;
  confirmed_transcript_hash: string;
  ratchet_tree: string;
  leaves_private: LeafPrivate[];
  update_paths: UpdatePathVector[];
};

type LeafPrivate = {
  index: number;
  encryption_priv: string;
  signature_priv: string;
  path_secrets: { node: number; path_secret: string }[];
};

type UpdatePathVector = {
  sender: number;
  update_path: string;
  path_secrets: (string | null)[];
  commit_secret: string;
  tree_hash_after: string;
};

/** A member's private TreeKEM state: the vector's entry (with its signature key), its HPKE keys by node. */
type Member = { leaf: LeafPrivate; keys: PrivateKeyPath };

const SEALED = new TextEncoder().encode('treekem key check');

/**
 * The suite with HPKE work that repeats itself done once: each private key imported once (its
 * CryptoKey reused), and each ciphertext opened once per key. Members below one copath node
 * decrypt the same ciphertext with the same key, so their `open` calls are identical; each
 * member's own processing (ts-mls finding the node, decrypting, deriving the commit secret)
 * still runs, and every distinct import and decryption runs through the provider.
 */
function sharingHpkeWork(cs: CiphersuiteImpl): CiphersuiteImpl {
  const imported = new Map<string, Promise<PrivateKey>>();
  const opened = new Map<PrivateKey, Map<string, Promise<Uint8Array>>>();
  const importPrivateKey = (bytes: Uint8Array): Promise<PrivateKey> => {
    const id = toHex(bytes);
    let key = imported.get(id);
    if (!key) {
      key = cs.hpke.importPrivateKey(bytes);
      imported.set(id, key);
    }
    return key;
  };
  const open = (key: PrivateKey, enc: Uint8Array, ct: Uint8Array, info: Uint8Array, aad?: Uint8Array) => {
    let byKey = opened.get(key);
    if (!byKey) opened.set(key, (byKey = new Map<string, Promise<Uint8Array>>()));
    const id = [enc, ct, info, aad ?? new Uint8Array()].map(toHex).join('.');
    let plaintext = byKey.get(id);
    if (!plaintext) {
      plaintext = cs.hpke.open(key, enc, ct, info, aad);
      byKey.set(id, plaintext);
    }
    return plaintext;
  };
  return { ...cs, hpke: { ...cs.hpke, importPrivateKey, open } };
}

function leafOf(tree: RatchetTree, leafIndex: number) {
  const node = tree[leafToNodeIndex(toLeafIndex(leafIndex))];
  return node?.nodeType === 'leaf' ? node.leaf : undefined;
}

/** A path secret's node key pair, derived once per case: members share the secrets of common ancestors. */
type NodeKeys = Map<string, Promise<{ publicKey: string; privateKey: Uint8Array }>>;

function nodeKeys(secret: string, cache: NodeKeys, cs: CiphersuiteImpl) {
  let keys = cache.get(secret);
  if (!keys) {
    keys = (async () => {
      const pair = await cs.hpke.deriveKeyPair(await deriveSecret(hex(secret), 'node', cs.kdf));
      const publicKey = toHex(await cs.hpke.exportPublicKey(pair.publicKey));
      return { publicKey, privateKey: await cs.hpke.exportPrivateKey(pair.privateKey) };
    })();
    cache.set(secret, keys);
  }
  return keys;
}

/** Checks a member's private state against the tree and returns it as ts-mls holds it. */
async function member(tree: RatchetTree, leaf: LeafPrivate, cache: NodeKeys, cs: CiphersuiteImpl): Promise<Member> {
  const at = `leaf ${leaf.index}`;
  const node = leafOf(tree, leaf.index);
  if (!node) throw new Error(`vectors: ${at} is blank in ratchet_tree`);
  const sealed = await cs.hpke.seal(await cs.hpke.importPublicKey(node.hpkePublicKey), SEALED, new Uint8Array());
  const key = await cs.hpke.importPrivateKey(hex(leaf.encryption_priv));
  const opened = cs.hpke.open(key, sealed.enc, sealed.ct, new Uint8Array()).then(toHex);
  await expect(opened, `${at} encryption_priv`).resolves.toBe(toHex(SEALED));
  const privateKeys: Record<number, Uint8Array> = {
    [leafToNodeIndex(toLeafIndex(leaf.index))]: hex(leaf.encryption_priv),
  };
  for (const { node: index, path_secret } of leaf.path_secrets) {
    const pathNode = tree[index];
    if (!pathNode) throw new Error(`vectors: ${at} holds a path secret for blank node ${index}`);
    const derived = await nodeKeys(path_secret, cache, cs);
    expect(derived.publicKey, `${at} node ${index} key`).toBe(toHex(getHpkePublicKey(pathNode)));
    privateKeys[index] = derived.privateKey;
  }
  return { leaf, keys: { leafIndex: leaf.index, privateKeys } };
}

/** What member `m` decrypts from `path` (sent by `sender`), and the commit secret it derives. */
async function received(
  tree: RatchetTree,
  merged: RatchetTree,
  m: Member,
  sender: LeafIndex,
  context: GroupContext,
  path: UpdatePath,
  cs: CiphersuiteImpl,
): Promise<{ pathSecret: string; commitSecret: string }> {
  const { nodeIndex, pathSecret } = await applyUpdatePathSecret(tree, m.keys, sender, context, path, [], cs);
  const commitSecret = await getCommitSecret(merged, nodeIndex, pathSecret, cs.kdf);
  return { pathSecret: toHex(pathSecret), commitSecret: toHex(commitSecret) };
}

/** Merges `path` as a receiver does: ts-mls checks the leaf's parent hash; here all of them too. */
async function merge(
  tree: RatchetTree,
  sender: LeafIndex,
  path: UpdatePath,
  cs: CiphersuiteImpl,
): Promise<RatchetTree> {
  const merged = await applyUpdatePath(tree, sender, path, cs.hash);
  expect(await verifyParentHashes(merged, cs.hash), 'parent hashes after merge').toBe(true);
  return merged;
}

/** The other members, and the leaves `path_secrets` names: every non-blank one but the sender's. */
function receiversOf(u: UpdatePathVector, tree: RatchetTree, members: Member[]): Member[] {
  const receivers = members.filter((m) => m.leaf.index !== u.sender);
  const named = u.path_secrets.flatMap((s, j) => (s === null ? [] : [j]));
  const nonBlank = u.path_secrets.flatMap((_, j) => (j !== u.sender && leafOf(tree, j) ? [j] : []));
  expect(named, 'path_secrets name every other non-blank leaf').toEqual(nonBlank);
  expect(
    receivers.map((m) => m.leaf.index).sort((a, b) => a - b),
    'members with private state',
  ).toEqual(nonBlank);
  return receivers;
}

async function checkVectorPath(
  u: UpdatePathVector,
  tree: RatchetTree,
  members: Member[],
  base: GroupContext,
  cs: CiphersuiteImpl,
): Promise<{ path: UpdatePath; merged: RatchetTree; context: GroupContext; receivers: Member[] }> {
  const sender = toLeafIndex(u.sender);
  const path = decodeUpdatePath(hex(u.update_path), 0)?.[0];
  if (!path) throw new Error('vectors: update_path does not decode');
  const merged = await merge(tree, sender, path, cs);
  expect(await verifyLeafNodeSignature(path.leafNode, base.groupId, sender, cs.signature), 'leaf signature').toBe(true);
  expect(toHex(await treeHashRoot(merged, cs.hash)), 'tree_hash_after').toBe(u.tree_hash_after);
  const badLeaf = { ...path.leafNode, parentHash: flipped(path.leafNode.parentHash) };
  await expect(
    applyUpdatePath(tree, sender, { ...path, leafNode: badLeaf }, cs.hash),
    'changed parent hash',
  ).rejects.toThrow(ValidationError);

  const receivers = receiversOf(u, tree, members);
  const context = { ...base, treeHash: hex(u.tree_hash_after) };
  const got = await Promise.all(receivers.map((m) => received(tree, merged, m, sender, context, path, cs)));
  expect(got, 'path secrets and commit secrets').toEqual(
    receivers.map((m) => ({ pathSecret: u.path_secrets[m.leaf.index], commitSecret: u.commit_secret })),
  );
  return { path, merged, context, receivers };
}

async function checkNewPath(
  u: UpdatePathVector,
  tree: RatchetTree,
  members: Member[],
  base: GroupContext,
  cs: CiphersuiteImpl,
): Promise<void> {
  const sender = toLeafIndex(u.sender);
  const own = members.find((m) => m.leaf.index === u.sender);
  if (!own) throw new Error(`vectors: no private state for sender ${u.sender}`);
  const [ours, path, secrets] = await createUpdatePath(tree, sender, base, hex(own.leaf.signature_priv), cs);
  const rootSecret = secrets.at(-1);
  if (!rootSecret) throw new Error('ts-mls: a new UpdatePath without path secrets');
  const commitSecret = toHex(await deriveSecret(rootSecret.secret, 'path', cs.kdf));
  const treeHash = await treeHashRoot(ours, cs.hash);
  const merged = await merge(tree, sender, path, cs);
  expect(toHex(await treeHashRoot(merged, cs.hash)), 'our path merged').toBe(toHex(treeHash));
  const context = { ...base, treeHash, epoch: base.epoch + 1n };
  const receivers = members.filter((m) => m.leaf.index !== u.sender);
  const got = await Promise.all(receivers.map((m) => received(tree, merged, m, sender, context, path, cs)));
  expect(
    got.map((r) => r.commitSecret),
    'commit secrets of our path',
  ).toEqual(receivers.map(() => commitSecret));
}

async function checkCase(v: TreeKem, cs: CiphersuiteImpl): Promise<void> {
  const tree = decodeRatchetTree(hex(v.ratchet_tree), 0)?.[0];
  if (!tree) throw new Error('vectors: ratchet_tree does not decode');
  const cache: NodeKeys = new Map();
  const members = await Promise.all(v.leaves_private.map((leaf) => member(tree, leaf, cache, cs)));
  const base: GroupContext = {
    version: 'mls10',
    cipherSuite: cs.name,
    groupId: hex(v.group_id),
    epoch: BigInt(v.epoch),
    treeHash: await treeHashRoot(tree, cs.hash),
    confirmedTranscriptHash: hex(v.confirmed_transcript_hash),
    extensions: [],
  };
  expect(v.update_paths.length).toBeGreaterThan(0);
  // Concurrently: the P-curve suites' HPKE runs in WebCrypto's thread pool, so paths overlap there.
  await Promise.all(
    v.update_paths.map(async (u, i) => {
      const { path, merged, context, receivers } = await checkVectorPath(u, tree, members, base, cs);
      if (i === 0) {
        const otherEpoch = { ...context, epoch: context.epoch + 1n };
        const sender = toLeafIndex(u.sender);
        const decrypting = received(tree, merged, receivers[0]!, sender, otherEpoch, path, cs);
        await expect(decrypting, 'another epoch').rejects.toThrow(CryptoError);
      }
      await checkNewPath(u, tree, members, base, cs);
    }),
  );
}

const PATH = 'mls/treekem.json';

describeVectors('ts-mls: treekem.json', PATH, () => {
  const vectors = loadVectors<TreeKem>(PATH);

  it('has cases for every cipher suite', () => {
    expect(bySuite(vectors).map(([suite]) => suite)).toEqual(ALL_SUITES);
  });

  for (const [suite, cases] of bySuite(vectors)) {
    const paths = cases.reduce((n, v) => n + v.update_paths.length, 0);
    it(`suite ${suite}: ${cases.length} trees, ${paths} update paths`, async () => {
      const cs = sharingHpkeWork(await suiteImpl(suite));
      for (const v of cases) await checkCase(v, cs);
    }, 60_000);
  }
});
