/**
 * What the IETF MLS vector tests (test/mls/vectors-*.test.ts) share: the vectors of a file grouped
 * by cipher suite, each suite's ts-mls implementation on the mesh's crypto provider (as the mesh
 * runs it), hex in and out, and the GroupContext a vector describes (RFC 9420 §8.1, no extensions).
 */
import { getCiphersuiteImpl, type CiphersuiteImpl } from 'ts-mls';
import { getCiphersuiteFromId, getCiphersuiteNameFromId, type CiphersuiteId } from 'ts-mls/crypto/ciphersuite.js';
import type { GroupContext } from 'ts-mls/groupContext.js';
import { fromHex } from '../../src/core/bytes.js';
import { meshCryptoProvider } from '../../src/runtime/mls/crypto-provider.js';
import { hasVector, readJsonVector } from './vectors.js';

/** The seven RFC 9420 cipher suites, every one of which each vector file covers. */
export const ALL_SUITES = [1, 2, 3, 4, 5, 6, 7];

export function hex(s: string): Uint8Array {
  const bytes = fromHex(s);
  if (!bytes) throw new Error(`vectors: not hex: ${s.slice(0, 16)}…`);
  return bytes;
}

/** A copy of `bytes` with one bit of byte `at` (from the end when negative) flipped. */
export function flipped(bytes: Uint8Array, at = 0): Uint8Array {
  const copy = bytes.slice();
  const i = at < 0 ? copy.length + at : at;
  if (i < 0 || i >= copy.length) throw new Error(`vectors: cannot flip byte ${at} of ${copy.length}`);
  copy[i]! ^= 1;
  return copy;
}

/** The vectors of a file, or none where it is missing (describeVectors then reports that). */
export function loadVectors<T>(relative: string): T[] {
  return hasVector(relative) ? (readJsonVector(relative) as T[]) : [];
}

/** The vectors grouped by cipher suite, suites in ascending order. */
export function bySuite<T extends { cipher_suite: number }>(vectors: T[]): [number, T[]][] {
  const suites = [...new Set(vectors.map((v) => v.cipher_suite))].sort((a, b) => a - b);
  return suites.map((suite) => [suite, vectors.filter((v) => v.cipher_suite === suite)]);
}

const impls = new Map<number, Promise<CiphersuiteImpl>>();

/** The suite's implementation on the mesh's crypto provider, created once per suite. */
export function suiteImpl(suite: number): Promise<CiphersuiteImpl> {
  let impl = impls.get(suite);
  if (!impl) {
    impl = getCiphersuiteImpl(getCiphersuiteFromId(suite as CiphersuiteId), meshCryptoProvider);
    impls.set(suite, impl);
  }
  return impl;
}

export type ContextFields = {
  cipher_suite: number;
  group_id: string;
  epoch: number;
  tree_hash: string;
  confirmed_transcript_hash: string;
};

export function vectorContext(v: ContextFields): GroupContext {
  return {
    version: 'mls10',
    cipherSuite: getCiphersuiteNameFromId(v.cipher_suite as CiphersuiteId),
    groupId: hex(v.group_id),
    epoch: BigInt(v.epoch),
    treeHash: hex(v.tree_hash),
    confirmedTranscriptHash: hex(v.confirmed_transcript_hash),
    extensions: [],
  };
}
