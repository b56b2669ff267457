/**
 * The IETF `tree-validation.json` vectors (mls-implementations test-vectors.md, "Tree
 * Validation"; RFC 9420 §7.8-7.9, §12.4.3.1) against ts-mls on the mesh's crypto provider: all
 * fourteen trees of all seven cipher suites (full trees, internal and trailing blanks, parent-hash
 * links that skip blanks, unmerged leaves). Each tree re-encodes to the same bytes; every node's
 * resolution and tree hash equal the vector's; the parent hashes verify as when joining; every
 * leaf's signature verifies with `group_id` and its leaf index as context.
 * Rejected, to show those checks can fail: a leaf with one bit of its signature flipped; a leaf
 * from a commit verified as a member of another group (its signature covers the group id and its
 * leaf index); the tree with the encryption key of its first, and of its last, parent node
 * changed (the parent-hash chain into that node breaks).
 */
import type { CiphersuiteImpl } from 'ts-mls';
import { verifyLeafNodeSignature, type LeafNode } from 'ts-mls/leafNode.js';
import { verifyParentHashes } from 'ts-mls/parentHash.js';
import { decodeRatchetTree, encodeRatchetTree, resolution, type RatchetTree } from 'ts-mls/ratchetTree.js';
import { treeHash } from 'ts-mls/treeHash.js';
import { nodeToLeafIndex, toNodeIndex } from 'ts-mls/treemath.js';
import { expect, it } from 'vitest';
import { toHex } from '../../src/core/bytes.js';
import { ALL_SUITES, bySuite, flipped, hex, loadVectors, suiteImpl } from '../helpers/mls-vector-suites.js';
import { describeVectors } from '../helpers/vectors.js';

type TreeValidation = {
  cipher_suite: number;
  tree: string;
  group_id: string;
  resolutions: number[][];
  tree_hashes: string[];
};

/** The tree with the encryption key of the parent node at `index` changed. */
function withParentKeyChanged(tree: RatchetTree, index: number): RatchetTree {
  const node = tree[index];
  if (node?.nodeType !== 'parent') throw new Error(`vectors: node ${index} is not a parent`);
  const copy = tree.slice();
  copy[index] = {
    nodeType: 'parent',
    parent: { ...node.parent, hpkePublicKey: flipped(node.parent.hpkePublicKey, -1) },
  };
  return copy;
}

/** Verifies every leaf's signature; returns the leaves, by leaf index. */
async function checkLeaves(
  tree: RatchetTree,
  groupId: Uint8Array,
  cs: CiphersuiteImpl,
  at: string,
): Promise<Map<number, LeafNode>> {
  const leaves = new Map<number, LeafNode>();
  for (const [i, node] of tree.entries()) {
    if (node?.nodeType !== 'leaf') continue;
    const leafIndex = nodeToLeafIndex(toNodeIndex(i));
    const verified = await verifyLeafNodeSignature(node.leaf, groupId, leafIndex, cs.signature);
    expect(verified, `${at} leaf ${leafIndex} signature`).toBe(true);
    leaves.set(leafIndex, node.leaf);
  }
  return leaves;
}

/** A changed signature fails; a leaf from a commit fails in another group (RFC 9420 §7.2). */
async function checkLeafRejections(
  leaves: Map<number, LeafNode>,
  groupId: Uint8Array,
  cs: CiphersuiteImpl,
  at: string,
) {
  const [first, leaf] = [...leaves][0]!;
  const changed = { ...leaf, signature: flipped(leaf.signature, -1) };
  expect(await verifyLeafNodeSignature(changed, groupId, first, cs.signature), `${at} changed signature`).toBe(false);
  const committed = [...leaves].find(([, l]) => l.leafNodeSource === 'commit');
  if (!committed) throw new Error(`vectors: ${at} has no leaf from a commit`);
  const [index, commitLeaf] = committed;
  const otherGroup = flipped(groupId);
  expect(await verifyLeafNodeSignature(commitLeaf, otherGroup, index, cs.signature), `${at} other group`).toBe(false);
}

async function checkTree(v: TreeValidation, cs: CiphersuiteImpl, at: string): Promise<void> {
  const tree = decodeRatchetTree(hex(v.tree), 0)?.[0];
  if (!tree) throw new Error('vectors: ratchet tree does not decode');
  expect(toHex(encodeRatchetTree(tree)), `${at} re-encoded`).toBe(v.tree);
  expect(tree.length, `${at} node count`).toBe(v.tree_hashes.length);
  const nodes = tree.map((_, i) => toNodeIndex(i));
  expect(
    nodes.map((i) => resolution(tree, i)),
    `${at} resolutions`,
  ).toEqual(v.resolutions);
  const hashes = await Promise.all(nodes.map(async (i) => toHex(await treeHash(tree, i, cs.hash))));
  expect(hashes, `${at} tree hashes`).toEqual(v.tree_hashes);
  expect(await verifyParentHashes(tree, cs.hash), `${at} parent hashes`).toBe(true);
  const leaves = await checkLeaves(tree, hex(v.group_id), cs, at);
  expect(leaves.size, `${at} leaves`).toBeGreaterThan(1);
  await checkLeafRejections(leaves, hex(v.group_id), cs, at);

  const parents = nodes.filter((i) => tree[i]?.nodeType === 'parent');
  expect(parents.length, `${at} parent nodes`).toBeGreaterThan(0);
  for (const index of new Set([parents[0]!, parents.at(-1)!])) {
    const tampered = withParentKeyChanged(tree, index);
    expect(await verifyParentHashes(tampered, cs.hash), `${at} parent ${index} key changed`).toBe(false);
  }
}

const PATH = 'mls/tree-validation.json';

describeVectors('ts-mls: tree-validation.json', PATH, () => {
  const vectors = loadVectors<TreeValidation>(PATH);

  it('has cases for every cipher suite', () => {
    expect(bySuite(vectors).map(([suite]) => suite)).toEqual(ALL_SUITES);
  });

  for (const [suite, cases] of bySuite(vectors)) {
    it(`suite ${suite}: ${cases.length} trees`, async () => {
      const cs = await suiteImpl(suite);
      for (const [i, v] of cases.entries()) {
        await checkTree(v, cs, `tree ${i}`);
      }
    });
  }
});
