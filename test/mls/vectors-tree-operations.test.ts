/**
 * The IETF `tree-operations.json` vectors (mls-implementations test-vectors.md, "Tree
 * Operations"; RFC 9420 §7.8, §12.1) against ts-mls's ratchet tree on the mesh's crypto provider:
 * all five cases (the file has them for cipher suite 1 only: two Adds, an Update, two Removes).
 * `tree_before` re-encodes to the same bytes and its tree hash equals `tree_hash_before`; the
 * proposal applied as sent by `proposal_sender` gives a tree that encodes to `tree_after` exactly
 * and whose tree hash equals `tree_hash_after`.
 */
import { decodeProposal, type Proposal } from 'ts-mls/proposal.js';
import {
  addLeafNode,
  decodeRatchetTree,
  encodeRatchetTree,
  removeLeafNode,
  updateLeafNode,
  type RatchetTree,
} from 'ts-mls/ratchetTree.js';
import { treeHashRoot } from 'ts-mls/treeHash.js';
import { toLeafIndex } from 'ts-mls/treemath.js';
import { expect, it } from 'vitest';
import { toHex } from '../../src/core/bytes.js';
import { bySuite, hex, loadVectors, suiteImpl } from '../helpers/mls-vector-suites.js';
import { describeVectors } from '../helpers/vectors.js';

type TreeOperation = {
  cipher_suite: number;
  tree_before: string;
  proposal: string;
  proposal_sender: number;
  tree_hash_before: string;
  tree_after: string;
  tree_hash_after: string;
};

function decodeTree(bytes: string): RatchetTree {
  const tree = decodeRatchetTree(hex(bytes), 0)?.[0];
  if (!tree) throw new Error('vectors: ratchet tree does not decode');
  return tree;
}

/** The tree after `proposal` from `sender` (RFC 9420 §12.1.1-3); the vectors hold no other kind. */
function applied(tree: RatchetTree, proposal: Proposal, sender: number): RatchetTree {
  switch (proposal.proposalType) {
    case 'add':
      return addLeafNode(tree, proposal.add.keyPackage.leafNode)[0];
    case 'update':
      return updateLeafNode(tree, proposal.update.leafNode, toLeafIndex(sender));
    case 'remove':
      return removeLeafNode(tree, toLeafIndex(proposal.remove.removed));
    default:
      throw new Error(`vectors: a tree operation cannot be a ${proposal.proposalType} proposal`);
  }
}

const PATH = 'mls/tree-operations.json';

describeVectors('ts-mls: tree-operations.json', PATH, () => {
  const vectors = loadVectors<TreeOperation>(PATH);

  it('has Add, Update and Remove cases', () => {
    const kinds = vectors.map((v) => decodeProposal(hex(v.proposal), 0)?.[0].proposalType);
    expect(new Set(kinds)).toEqual(new Set(['add', 'update', 'remove']));
  });

  for (const [suite, cases] of bySuite(vectors)) {
    it(`suite ${suite}: ${cases.length} case(s)`, async () => {
      const cs = await suiteImpl(suite);
      for (const [i, v] of cases.entries()) {
        const proposal = decodeProposal(hex(v.proposal), 0)?.[0];
        if (!proposal) throw new Error('vectors: proposal does not decode');
        const at = `case ${i} (${proposal.proposalType} from leaf ${v.proposal_sender})`;
        const before = decodeTree(v.tree_before);
        expect(toHex(encodeRatchetTree(before)), `${at} tree_before`).toBe(v.tree_before);
        expect(toHex(await treeHashRoot(before, cs.hash)), `${at} tree_hash_before`).toBe(v.tree_hash_before);
        const after = applied(before, proposal, v.proposal_sender);
        expect(toHex(encodeRatchetTree(after)), `${at} tree_after`).toBe(v.tree_after);
        expect(toHex(await treeHashRoot(after, cs.hash)), `${at} tree_hash_after`).toBe(v.tree_hash_after);
      }
    });
  }
});
