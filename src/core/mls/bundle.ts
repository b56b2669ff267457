/**
 * A commit bundle: the one unit the blind sequencer accepts or refuses whole
 * (DESIGN §6, notes/mls.md). A membership change is a commit, the Welcome for
 * the machines it adds, and the KEK message that hands the domain's key
 * generation to the new epoch's members — all three or none, so no member can
 * adopt an epoch whose key message was lost, and no joiner can hold a Welcome
 * to an epoch that never happened.
 *
 *   bundle = cbor({v: 1, commit: MLSMessage, welcome: MLSMessage | empty,
 *                  kek: MLSMessage | empty})
 *
 * What the relay checks with no key at all (`checkBundle`): the commit is a
 * public or private MLS message of content type commit; its cleartext
 * authenticated_data is cbor({ep: 32B}) naming the authenticated endpoint that
 * posts it (so a commit is attributable, and members can check the MLS sender
 * is the machine bound to that endpoint); a Welcome is a Welcome; a KEK message
 * is a private application message of the same group in the next epoch.
 */
import { bytesEqual, isBytes } from '../bytes.js';
import { decodeCbor, encodeCbor, isRecord } from '../cbor.js';
import { err, ok, type Result } from '../result.js';
import { readFraming, type MlsFraming } from './framing.js';
import { MAX_GROUP_ID } from './receipt.js';

export const MAX_BUNDLE_BYTES = 512 * 1024;

export type CommitBundle = {
  readonly commit: Uint8Array;
  readonly welcome: Uint8Array | undefined;
  readonly kek: Uint8Array | undefined;
};

/** What a key-less reader learns of a well-formed bundle. */
export type BundleFraming = {
  readonly group: Uint8Array;
  readonly epoch: number;
  readonly poster: Uint8Array;
  /** An external commit (RFC 9420 §12.4.3.2): a member rejoining (resync), not a membership change by a member. */
  readonly external: boolean;
};

export type BundleError = { readonly type: 'MalformedBundle'; readonly reason: string };

const malformed = (reason: string): Result<never, BundleError> => err({ type: 'MalformedBundle', reason });

export function encodeBundle(bundle: CommitBundle): Uint8Array {
  const empty = new Uint8Array();
  return encodeCbor({ v: 1, commit: bundle.commit, welcome: bundle.welcome ?? empty, kek: bundle.kek ?? empty });
}

/** The cleartext authenticated_data a commit carries: the endpoint that posts it. */
export function commitAuthenticatedData(endpoint: Uint8Array): Uint8Array {
  return encodeCbor({ ep: endpoint });
}

export function decodeBundle(bytes: Uint8Array): Result<CommitBundle, BundleError> {
  const decoded = decodeCbor(bytes, MAX_BUNDLE_BYTES);
  if (!decoded.ok) return malformed(`bundle: ${decoded.error.reason}`);
  const m = decoded.value;
  if (!isRecord(m) || Object.keys(m).sort().join(',') !== 'commit,kek,v,welcome' || m['v'] !== 1) {
    return malformed('bundle: fields');
  }
  const { commit, welcome, kek } = m;
  if (!isBytes(commit) || commit.length === 0 || !isBytes(welcome) || !isBytes(kek)) {
    return malformed('bundle: field types');
  }
  return ok({ commit, welcome: welcome.length ? welcome : undefined, kek: kek.length ? kek : undefined });
}

/** Decodes a bundle and checks everything a key-less relay can check of it. */
export function checkBundle(bytes: Uint8Array): Result<{ bundle: CommitBundle } & BundleFraming, BundleError> {
  const decoded = decodeBundle(bytes);
  if (!decoded.ok) return decoded;
  const bundle = decoded.value;
  const commit = readFraming(bundle.commit);
  if (!commit.ok) return malformed(`bundle: commit: ${commit.error.reason}`);
  const c = commit.value;
  if (c.wireFormat !== 'public_message' && c.wireFormat !== 'private_message') {
    return malformed(`bundle: commit is a ${c.wireFormat}`);
  }
  if (c.contentType !== 'commit') return malformed(`bundle: commit carries ${c.contentType} content`);
  if (c.groupId.length === 0 || c.groupId.length > MAX_GROUP_ID) return malformed('bundle: group id length');
  if (c.epoch >= BigInt(Number.MAX_SAFE_INTEGER)) return malformed('bundle: epoch beyond 2^53');
  const poster = posterOf(c.authenticatedData);
  if (!poster) return malformed('bundle: commit authenticated_data does not name its endpoint');
  const epoch = Number(c.epoch);
  if (bundle.welcome) {
    const w = readFraming(bundle.welcome);
    if (!w.ok || w.value.wireFormat !== 'welcome') return malformed('bundle: welcome is not an MLS Welcome');
  }
  if (bundle.kek) {
    const k = readFraming(bundle.kek);
    if (!k.ok || k.value.wireFormat !== 'private_message' || k.value.contentType !== 'application') {
      return malformed('bundle: kek is not a private application message');
    }
    if (!bytesEqual(k.value.groupId, c.groupId) || k.value.epoch !== c.epoch + 1n) {
      return malformed('bundle: kek message is not of the next epoch of the same group');
    }
  }
  return ok({ bundle, group: c.groupId, epoch, poster, external: isExternalCommit(c) });
}

/** An external commit (RFC 9420 §12.4.3.2): a PublicMessage sent by a new member. */
export function isExternalCommit(framing: MlsFraming): boolean {
  return framing.wireFormat === 'public_message' && framing.sender === 'new_member_commit';
}

function posterOf(authenticatedData: Uint8Array): Uint8Array | undefined {
  const decoded = decodeCbor(authenticatedData, 128);
  if (!decoded.ok || !isRecord(decoded.value)) return undefined;
  const { ep } = decoded.value;
  return Object.keys(decoded.value).length === 1 && isBytes(ep, 32) ? ep : undefined;
}
