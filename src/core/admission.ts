/**
 * Relay admission lists (DESIGN §3): which endpoints a relay serves for one
 * group, as a record an admin signs and the mesh pushes to the relay.
 *
 *   record = cbor([body bytes, sig])
 *   body   = cbor({v: 1, topic: 32B, version: uint, signer: 32B, admins: [32B],
 *                  endpoints: [32B], invites: [{id: 32B, by: 32B, exp: ms}]})
 *   sig    = Ed25519(signer, "sov/1/admission" ‖ body bytes)
 *
 * `admins` are the signing keys allowed to sign the next list; `endpoints` the
 * machines served; `stewards` (optional) the endpoints that may post membership
 * changes to the blind sequencer — the admins' machines; any served member may
 * still post an external commit that rejoins itself (resync); `invites` pairing tickets still open: a joiner that presents
 * invitation id `inv` with BLAKE3("sov/1/invite" ‖ inv) = `id` before `exp` is
 * served too, but may only write to the inviting endpoint `by`.
 *
 * The relay's rule (`nextAdmission`): the first list for a topic must be signed
 * by one of its own admins (trust on first use: the founder pushes it the moment
 * the mesh exists); every later list must have a higher version and be signed by
 * an admin of the list in force. The relay checks signatures and versions only —
 * it never learns who the machines are beyond their endpoint ids.
 */
import { ed25519 } from '@noble/curves/ed25519.js';
import { bytesEqual, concat, isBytes, utf8 } from './bytes.js';
import { decodeCbor, encodeCbor, isRecord } from './cbor.js';
import { blake3 } from './hash.js';
import { err, ok, type Result } from './result.js';

const SIGN_LABEL = utf8('sov/1/admission');
const INVITE_LABEL = utf8('sov/1/invite');
export const MAX_ADMITTED = 1024;
/**
 * The largest record: room for every list full (admins, endpoints and stewards of MAX_ADMITTED
 * keys, and as many invitations) with its signature, so a mesh at the limit can still push it.
 */
export const MAX_ADMISSION_BYTES = 256 * 1024;

export type AdmissionInvite = { readonly id: Uint8Array; readonly by: Uint8Array; readonly exp: number };

export type AdmissionList = {
  readonly v: 1;
  readonly topic: Uint8Array;
  readonly version: number;
  readonly signer: Uint8Array;
  readonly admins: readonly Uint8Array[];
  readonly endpoints: readonly Uint8Array[];
  readonly invites: readonly AdmissionInvite[];
  /** Endpoints whose commits the sequencer takes (absent: every served member's). */
  readonly stewards?: readonly Uint8Array[];
};

export type SignedAdmission = { readonly list: AdmissionList; readonly record: Uint8Array };

export type AdmissionError = { readonly type: 'AdmissionRefused'; readonly reason: string };

const refused = (reason: string): Result<never, AdmissionError> => err({ type: 'AdmissionRefused', reason });

/** The invitation id a relay stores for a ticket's `inv`. */
export function inviteId(inv: Uint8Array): Uint8Array {
  return blake3(concat(INVITE_LABEL, inv));
}

export function admissionBody(list: AdmissionList): Uint8Array {
  return encodeCbor(list);
}

/** What the signer signs (domain-separated from every other signature of ours). */
export function admissionSigningPayload(body: Uint8Array): Uint8Array {
  return concat(SIGN_LABEL, body);
}

export function encodeAdmission(body: Uint8Array, sig: Uint8Array): Uint8Array {
  return encodeCbor([body, sig]);
}

const isKeyList = (value: unknown): value is Uint8Array[] =>
  Array.isArray(value) && value.length <= MAX_ADMITTED && value.every((k) => isBytes(k, 32));

function decodeInvite(value: unknown): AdmissionInvite | undefined {
  if (!isRecord(value) || Object.keys(value).sort().join(',') !== 'by,exp,id') return undefined;
  const { id, by, exp } = value;
  if (!isBytes(id, 32) || !isBytes(by, 32) || typeof exp !== 'number' || !Number.isSafeInteger(exp)) return undefined;
  return { id, by, exp };
}

/** Decodes a record and checks its shape and signature (not whether it may replace the list in force). */
export function decodeAdmission(record: Uint8Array): Result<SignedAdmission, AdmissionError> {
  const outer = decodeCbor(record, MAX_ADMISSION_BYTES);
  if (!outer.ok) return refused(outer.error.reason);
  const pair = outer.value;
  if (!Array.isArray(pair) || pair.length !== 2 || !isBytes(pair[0]) || !isBytes(pair[1], 64)) {
    return refused('not a [body, signature] pair');
  }
  const [body, sig] = pair as [Uint8Array, Uint8Array];
  const decoded = decodeCbor(body, MAX_ADMISSION_BYTES);
  if (!decoded.ok) return refused(decoded.error.reason);
  const b = decoded.value;
  const fields = 'admins,endpoints,invites,signer,topic,v,version';
  const names = isRecord(b) ? Object.keys(b).sort().join(',') : '';
  if (!isRecord(b) || (names !== fields && names !== fields.replace('signer,', 'signer,stewards,')) || b['v'] !== 1) {
    return refused('fields');
  }
  const { topic, version, signer, admins, endpoints, invites, stewards } = b;
  if (stewards !== undefined && !isKeyList(stewards)) return refused('stewards');
  if (!isBytes(topic, 32) || !isBytes(signer, 32) || typeof version !== 'number' || !Number.isSafeInteger(version)) {
    return refused('topic, signer or version');
  }
  if (version < 0 || !isKeyList(admins) || !isKeyList(endpoints) || !Array.isArray(invites)) {
    return refused('lists');
  }
  const parsed = invites.map(decodeInvite);
  if (parsed.length > MAX_ADMITTED || parsed.some((i) => i === undefined)) return refused('invites');
  if (!verifies(sig, admissionSigningPayload(body), signer)) return refused('signature does not verify');
  const list: AdmissionList = {
    v: 1,
    topic,
    version,
    signer,
    admins,
    endpoints,
    invites: parsed as AdmissionInvite[],
    ...(stewards === undefined ? {} : { stewards }),
  };
  return ok({ list, record });
}

function verifies(sig: Uint8Array, payload: Uint8Array, signer: Uint8Array): boolean {
  try {
    return ed25519.verify(sig, payload, signer, { zip215: false });
  } catch {
    return false;
  }
}

const includes = (keys: readonly Uint8Array[], key: Uint8Array): boolean => keys.some((k) => bytesEqual(k, key));

/** Whether `next` may replace `current` (undefined: none yet) for `topic`. */
export function nextAdmission(
  topic: Uint8Array,
  current: AdmissionList | undefined,
  next: AdmissionList,
): Result<AdmissionList, AdmissionError> {
  if (!bytesEqual(next.topic, topic)) return refused('list is for another topic');
  if (!current) {
    return includes(next.admins, next.signer) ? ok(next) : refused('first list not signed by one of its admins');
  }
  if (next.version <= current.version) return refused(`version ${next.version} is not above ${current.version}`);
  if (!includes(current.admins, next.signer)) return refused('signer is not an admin of the list in force');
  return ok(next);
}

/** Whether the sequencer takes a membership change from `endpoint` under this list. */
export function mayChangeMembership(list: AdmissionList, endpoint: Uint8Array): boolean {
  return list.stewards === undefined || includes(list.stewards, endpoint);
}

/** How a list serves one endpoint at `now`: as a member, as a joiner invited by `by`, or not at all. */
export type Standing = { readonly kind: 'member' } | { readonly kind: 'invited'; readonly by: Uint8Array } | undefined;

export function standingOf(
  list: AdmissionList,
  endpoint: Uint8Array,
  invite: Uint8Array | undefined,
  now: number,
): Standing {
  if (includes(list.endpoints, endpoint)) return { kind: 'member' };
  if (!invite) return undefined;
  const id = inviteId(invite);
  const open = list.invites.find((i) => bytesEqual(i.id, id) && i.exp >= now);
  return open ? { kind: 'invited', by: open.by } : undefined;
}
