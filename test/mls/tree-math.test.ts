/**
 * The IETF `tree-math.json` vectors (RFC 9420 test-vectors.md, "Tree Math") against the
 * installed MLS library's tree arithmetic (ts-mls `treemath`): the node count and root of each
 * tree size, and every node's left and right child, parent and sibling (null where the
 * vectors say there is none: a leaf's children, the root's parent and sibling).
 */
import { expect, it } from 'vitest';
import { isLeaf, left, nodeWidth, parent, right, root, sibling, toNodeIndex, type NodeIndex } from 'ts-mls/treemath.js';
import { describeVectors, hasVector, readJsonVector } from '../helpers/vectors.js';

type TreeMath = {
  n_leaves: number;
  n_nodes: number;
  root: number;
  left: (number | null)[];
  right: (number | null)[];
  parent: (number | null)[];
  sibling: (number | null)[];
};

describeVectors('MLS tree math: tree-math.json', 'mls/tree-math.json', () => {
  const vectors = hasVector('mls/tree-math.json') ? (readJsonVector('mls/tree-math.json') as TreeMath[]) : [];

  it('finds the vectors', () => {
    expect(vectors.length).toBeGreaterThanOrEqual(10);
  });

  it.each(vectors.map((v) => [v.n_leaves, v] as const))('a tree of %i leaves', (leaves, v) => {
    expect(nodeWidth(leaves)).toBe(v.n_nodes);
    const top = root(leaves);
    expect(top).toBe(v.root);
    const at = (x: number): NodeIndex => toNodeIndex(x);
    const nodes = Array.from({ length: v.n_nodes }, (_, x) => x);
    expect(nodes.map((x) => (isLeaf(at(x)) ? null : left(at(x))))).toEqual(v.left);
    expect(nodes.map((x) => (isLeaf(at(x)) ? null : right(at(x))))).toEqual(v.right);
    expect(nodes.map((x) => (x === top ? null : parent(at(x), leaves)))).toEqual(v.parent);
    expect(nodes.map((x) => (x === top ? null : sibling(at(x), leaves)))).toEqual(v.sibling);
  });
});
