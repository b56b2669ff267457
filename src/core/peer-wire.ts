/**
 * Messages between machines, carried as relay frame bodies (end-to-end sealed
 * by `frame.ts`; the relay never sees these).
 *
 *   events       {t, after: uint, upto: uint, events: [SealedEvent bytes]}
 *                the sender's log entries in (after, upto]; several may be in flight
 *   ack          {t, upto: uint}   the receiver's contiguous watermark: every envelope of the
 *                                  sender's log ≤ upto is durably applied, stored, parked, withheld
 *                                  or rejected
 *   want         {t, ids: [outer id]}   the receiver may now hold envelopes it withheld
 *                                  (store.ts WithheldRecord): send them again, if you have them
 *   sweep        {t, after: uint}  the receiver became trusted: send your trusted-lane entries
 *                                  after this position of your log (it never saw them)
 *   resent       {t, events: [SealedEvent bytes], sweep: bool, next: uint, done: bool}
 *                the answer to either; for a sweep, `next` is the position scanned up to and
 *                `done` whether the scan reached the end of the log
 *   The pairing ceremony (core/pairing.ts), joiner J and inviter I:
 *   join-request   J→I {t, inv: 16B, signer: 32B, endpoint: 32B, name, commit: 32B}
 *                  commit = hash of J's keys and a secret nonce Nj, fixed before J sees Ni
 *   join-challenge I→J {t, inv, signer: 32B (I's signing key), nonce: 32B (Ni)}
 *   join-reveal    J→I {t, inv, nonce: 32B (Nj)}   I checks it against the commitment
 *                  both now show the same short authentication string to their human
 *   join-confirm   J→I {t, inv, kps: [[domain, key package]]}   J's human confirmed the
 *                  string; J's MLS key package for each built-in domain (CONTROL, GENERAL)
 *   join-accept    I→J {t, inv, signer: 32B, anchors: [32B], welcomes: [[domain, bundle]],
 *                       classes: [[table, class]]}
 *                  sent only once both humans confirmed; welcomes: the sequenced commit
 *                  bundles (core/mls/bundle.ts) that added J to each domain's MLS group —
 *                  Welcome and KEK package inside, so the keys reach J only through MLS;
 *                  anchors: the admins the inviter trusts without a control record (the
 *                  founder); classes: the sync manifest as the inviter holds it, which the
 *                  joiner follows until the signed manifest records reach it
 *   join-refused   either way {t, inv: 16B, reason}   a human declined, or a check failed
 *   mls-welcome    admin→added machine {t, domain, bundle}   the accepted bundle that added
 *                  it to a domain later (its standing key package, table key_packages)
 *   mls-groupinfo-request  member→members {t, domain}   a member that cannot use an accepted
 *                  commit asks for a GroupInfo to rejoin by external commit (resync)
 *   mls-groupinfo  member→that member {t, domain, info}   answered only to a machine in the group
 *   mls-heads      member→member {t, receipts: [receipt]}   the newest sequencer receipt of
 *                  each group the sender holds (gossip: a relay that signed two commits for
 *                  one epoch is caught by whoever holds both receipts)
 *
 * `upto`, `after` and `next` are positions in the sender's log, which only the sender interprets.
 */
import { isBytes } from './bytes.js';
import { decodeCbor, encodeCbor, isRecord } from './cbor.js';
import { MAX_BUNDLE_BYTES } from './mls/bundle.js';
import { MAX_RECEIPT_BYTES } from './mls/receipt.js';
import { MAX_SEALED_BYTES } from './seal.js';
import { err, ok, type Result } from './result.js';
import { isDomainName, tableSpec, type DomainName } from './schema.js';
import { isPrivacyClass, type PrivacyClass } from './sync-manifest.js';

export const MAX_EVENTS_PER_FRAME = 256;
export const MAX_PEER_MESSAGE = 900 * 1024;
export const MAX_MACHINE_NAME = 64;
/** Outer ids one `want` names at most, and the longest outer id (hex id, domain, generation). */
export const MAX_WANT_IDS = 512;
const MAX_OUTER_ID = 160;

/** Per-domain MLS payloads of the pairing exchange: at most one per built-in or created domain. */
export const MAX_DOMAIN_ITEMS = 16;
const MAX_KEY_PACKAGE = 4096;
export const MAX_RECEIPT_HEADS = 64;

export type DomainItems = readonly (readonly [DomainName, Uint8Array])[];

export type PeerMessage =
  | {
      readonly t: 'events';
      readonly after: number;
      readonly upto: number;
      readonly events: readonly Uint8Array[];
    }
  | { readonly t: 'ack'; readonly upto: number }
  | { readonly t: 'want'; readonly ids: readonly string[] }
  | { readonly t: 'sweep'; readonly after: number }
  | {
      readonly t: 'resent';
      readonly events: readonly Uint8Array[];
      readonly sweep: boolean;
      readonly next: number;
      readonly done: boolean;
    }
  | {
      readonly t: 'join-request';
      readonly inv: Uint8Array;
      readonly signer: Uint8Array;
      readonly endpoint: Uint8Array;
      readonly name: string;
      readonly commit: Uint8Array;
    }
  | { readonly t: 'join-challenge'; readonly inv: Uint8Array; readonly signer: Uint8Array; readonly nonce: Uint8Array }
  | { readonly t: 'join-reveal'; readonly inv: Uint8Array; readonly nonce: Uint8Array }
  | { readonly t: 'join-confirm'; readonly inv: Uint8Array; readonly kps: DomainItems }
  | {
      readonly t: 'join-accept';
      readonly inv: Uint8Array;
      readonly signer: Uint8Array;
      readonly anchors: readonly Uint8Array[];
      readonly welcomes: DomainItems;
      readonly classes: readonly (readonly [string, PrivacyClass])[];
    }
  | { readonly t: 'join-refused'; readonly inv: Uint8Array; readonly reason: string }
  | { readonly t: 'mls-welcome'; readonly domain: DomainName; readonly bundle: Uint8Array }
  | { readonly t: 'mls-heads'; readonly receipts: readonly Uint8Array[] }
  | { readonly t: 'mls-groupinfo-request'; readonly domain: DomainName }
  | { readonly t: 'mls-groupinfo'; readonly domain: DomainName; readonly info: Uint8Array };

export type PeerWireError = { readonly type: 'MalformedMessage'; readonly reason: string };

const malformed = (reason: string): Result<never, PeerWireError> =>
  err({ type: 'MalformedMessage', reason: `peer-wire: ${reason}` });

/** Messages of the pairing exchange: a receiver accepts them only inside the narrow request window. */
const PAIRING: ReadonlySet<PeerMessage['t']> = new Set([
  'join-request',
  'join-challenge',
  'join-reveal',
  'join-confirm',
  'join-accept',
  'join-refused',
]);

export const isPairingMessage = (m: PeerMessage): boolean => PAIRING.has(m.t);

export function encodePeerMessage(message: PeerMessage): Uint8Array {
  return encodeCbor(message);
}

const isUint = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;
const fieldsAre = (m: Record<string, unknown>, names: string): boolean => Object.keys(m).sort().join(',') === names;

/** [[domain, bytes]] with distinct well-formed domain names and bounded payloads. */
function domainItems(value: unknown, maxBytes: number): DomainItems | undefined {
  if (!Array.isArray(value) || value.length > MAX_DOMAIN_ITEMS) return undefined;
  const seen = new Set<string>();
  for (const item of value) {
    if (!Array.isArray(item) || item.length !== 2) return undefined;
    const [domain, bytes] = item as unknown[];
    if (!isDomainName(domain) || seen.has(domain) || !isBytes(bytes) || bytes.length > maxBytes) return undefined;
    seen.add(domain);
  }
  return value as [DomainName, Uint8Array][];
}

function areEnvelopes(events: unknown): events is Uint8Array[] {
  if (!Array.isArray(events) || events.length > MAX_EVENTS_PER_FRAME) return false;
  return events.every((e) => isBytes(e) && e.length <= MAX_SEALED_BYTES);
}

export function decodePeerMessage(bytes: Uint8Array): Result<PeerMessage, PeerWireError> {
  const decoded = decodeCbor(bytes, MAX_PEER_MESSAGE);
  if (!decoded.ok) return malformed(decoded.error.reason);
  const m = decoded.value;
  if (!isRecord(m)) return malformed('not a map');
  switch (m['t']) {
    case 'events': {
      const events = m['events'];
      if (!fieldsAre(m, 'after,events,t,upto') || !isUint(m['after']) || !isUint(m['upto'])) {
        return malformed('events: fields');
      }
      if (m['after'] > m['upto']) return malformed('events: after beyond upto');
      if (!areEnvelopes(events)) return malformed('events: entries');
      return ok({ t: 'events', after: m['after'], upto: m['upto'], events });
    }
    case 'want': {
      const ids = m['ids'];
      if (!fieldsAre(m, 'ids,t') || !Array.isArray(ids) || ids.length > MAX_WANT_IDS) return malformed('want: fields');
      if (!ids.every((id) => typeof id === 'string' && id.length > 0 && id.length <= MAX_OUTER_ID)) {
        return malformed('want: ids');
      }
      return ok({ t: 'want', ids: ids as string[] });
    }
    case 'sweep':
      if (!fieldsAre(m, 'after,t') || !isUint(m['after'])) return malformed('sweep: fields');
      return ok({ t: 'sweep', after: m['after'] });
    case 'resent': {
      const { events, sweep, next, done } = m;
      if (!fieldsAre(m, 'done,events,next,sweep,t') || typeof sweep !== 'boolean' || typeof done !== 'boolean') {
        return malformed('resent: fields');
      }
      if (!isUint(next) || !areEnvelopes(events)) return malformed('resent: entries');
      return ok({ t: 'resent', events, sweep, next, done });
    }
    case 'ack':
      if (!fieldsAre(m, 't,upto') || !isUint(m['upto'])) return malformed('ack: fields');
      return ok({ t: 'ack', upto: m['upto'] });
    case 'join-request': {
      const { inv, signer, endpoint, name, commit } = m;
      if (!fieldsAre(m, 'commit,endpoint,inv,name,signer,t')) return malformed('join-request: fields');
      if (!isBytes(inv, 16) || !isBytes(signer, 32) || !isBytes(endpoint, 32) || !isBytes(commit, 32)) {
        return malformed('join-request: sizes');
      }
      if (typeof name !== 'string' || name.length > MAX_MACHINE_NAME) return malformed('join-request: name');
      return ok({ t: 'join-request', inv, signer, endpoint, name, commit });
    }
    case 'join-challenge': {
      const { inv, signer, nonce } = m;
      if (!fieldsAre(m, 'inv,nonce,signer,t') || !isBytes(inv, 16) || !isBytes(signer, 32) || !isBytes(nonce, 32)) {
        return malformed('join-challenge: fields');
      }
      return ok({ t: 'join-challenge', inv, signer, nonce });
    }
    case 'join-reveal': {
      const { inv, nonce } = m;
      if (!fieldsAre(m, 'inv,nonce,t') || !isBytes(inv, 16) || !isBytes(nonce, 32)) {
        return malformed('join-reveal: fields');
      }
      return ok({ t: 'join-reveal', inv, nonce });
    }
    case 'join-confirm': {
      if (!fieldsAre(m, 'inv,kps,t') || !isBytes(m['inv'], 16)) return malformed('join-confirm: fields');
      const kps = domainItems(m['kps'], MAX_KEY_PACKAGE);
      if (!kps) return malformed('join-confirm: key packages');
      return ok({ t: 'join-confirm', inv: m['inv'], kps });
    }
    case 'join-accept': {
      const { inv, signer, anchors, classes } = m;
      if (!fieldsAre(m, 'anchors,classes,inv,signer,t,welcomes') || !isBytes(inv, 16) || !isBytes(signer, 32)) {
        return malformed('join-accept: fields');
      }
      if (!Array.isArray(anchors) || anchors.length > 16 || !anchors.every((a) => isBytes(a, 32))) {
        return malformed('join-accept: anchors');
      }
      const welcomes = domainItems(m['welcomes'], MAX_BUNDLE_BYTES);
      if (!welcomes) return malformed('join-accept: welcomes');
      const pairs: unknown[] = Array.isArray(classes) ? classes : [];
      const valid = pairs.every(
        (c) => Array.isArray(c) && c.length === 2 && tableSpec(String(c[0])) !== undefined && isPrivacyClass(c[1]),
      );
      if (!Array.isArray(classes) || classes.length > 64 || !valid) return malformed('join-accept: classes');
      const manifest = pairs as [string, PrivacyClass][];
      return ok({ t: 'join-accept', inv, signer, anchors, welcomes, classes: manifest });
    }
    case 'mls-welcome': {
      const { domain, bundle } = m;
      if (!fieldsAre(m, 'bundle,domain,t') || !isDomainName(domain) || !isBytes(bundle)) {
        return malformed('mls-welcome: fields');
      }
      if (bundle.length > MAX_BUNDLE_BYTES) return malformed('mls-welcome: bundle too large');
      return ok({ t: 'mls-welcome', domain, bundle });
    }
    case 'mls-groupinfo-request':
      if (!fieldsAre(m, 'domain,t') || !isDomainName(m['domain'])) return malformed('mls-groupinfo-request: fields');
      return ok({ t: 'mls-groupinfo-request', domain: m['domain'] });
    case 'mls-groupinfo': {
      const { domain, info } = m;
      if (!fieldsAre(m, 'domain,info,t') || !isDomainName(domain) || !isBytes(info) || info.length > MAX_BUNDLE_BYTES) {
        return malformed('mls-groupinfo: fields');
      }
      return ok({ t: 'mls-groupinfo', domain, info });
    }
    case 'mls-heads': {
      const receipts = m['receipts'];
      if (!fieldsAre(m, 'receipts,t') || !Array.isArray(receipts) || receipts.length > MAX_RECEIPT_HEADS) {
        return malformed('mls-heads: fields');
      }
      if (!receipts.every((r) => isBytes(r) && r.length <= MAX_RECEIPT_BYTES)) return malformed('mls-heads: receipts');
      return ok({ t: 'mls-heads', receipts });
    }
    case 'join-refused':
      if (!fieldsAre(m, 'inv,reason,t') || !isBytes(m['inv'], 16) || typeof m['reason'] !== 'string') {
        return malformed('join-refused: fields');
      }
      return ok({ t: 'join-refused', inv: m['inv'], reason: m['reason'].slice(0, 256) });
    default:
      return malformed('unknown message type');
  }
}
