/**
 * Admission of one opened, signature-checked event into the replica, decided
 * inside the store transaction that also records it (SSP/1 delivery rules).
 *
 * Order of checks: already logged or finally rejected (by outer id, then event
 * id) → the lane this machine may hold → authorisation against the control
 * records → hash chain → the table's privacy class here → record. The verdict
 * is one of:
 *   Applied     logged and materialised (or logged as revoked: a removed signer)
 *   Duplicate   nothing to do
 *   Parked      kept aside to re-evaluate when what it waits for arrives
 *               (unknown signer, missing role, chain gap, clock far ahead)
 *   Rejected    final, recorded with its typed reason; the watermark passes it
 * A refusal writes nothing but its record, with one exception: an event whose
 * table this machine does not hold (local here, or trusted while this machine is
 * not) still moves its chain's head once it links, so the signer's later events
 * are not stalled behind it (sync-manifest.ts).
 */
import { bytesEqual, fromHex, toHex } from './bytes.js';
import type { EventBody, SignedEvent } from './event.js';
import { ZERO_HASH } from './event.js';
import { recordEvent } from './materialize.js';
import { envelopeId, type SealedEvent } from './seal.js';
import type { ParkReason, ReplicaTx, Resurrection } from './store.js';
import { chainKey, type Lane, type PrivacyPolicy } from './sync-manifest.js';
import { authorize, type TrustContext } from './trust.js';

/** Refusals by privacy class (sync-manifest.ts). */
export type PrivacyRefusal =
  /** A local-lane event (it should never have left its writer), or a table local here. */
  | { readonly type: 'NotSyncable'; readonly table: string; readonly lane: Lane }
  /** A trusted-lane event or table while this machine is not trusted (forgotten once it is). */
  | { readonly type: 'NotEligible'; readonly table: string; readonly lane: Lane };

export type FinalRejection =
  | PrivacyRefusal
  | { readonly type: 'ChainFork'; readonly signer: string; readonly seq: number }
  | { readonly type: 'ChainBroken'; readonly signer: string; readonly seq: number }
  | { readonly type: 'NotAuthorized'; readonly signer: string; readonly table: string; readonly reason: string };

export type Admission =
  | {
      readonly type: 'Applied';
      readonly pos: number;
      readonly body: EventBody;
      readonly revoked: boolean;
      readonly resurrections: readonly Resurrection[];
    }
  | { readonly type: 'Duplicate' }
  | { readonly type: 'Parked'; readonly reason: ParkReason; readonly detail: string }
  | { readonly type: 'Rejected'; readonly error: FinalRejection };

export type OpenedEnvelope = {
  readonly sealed: SealedEvent;
  readonly bytes: Uint8Array;
  readonly event: SignedEvent;
};

/**
 * Whether this machine may hold an envelope of `lane` at all, judged without
 * reading it: never a local-lane one; a trusted-lane one only when trusted.
 */
export async function laneRefusal(
  tx: ReplicaTx,
  lane: Lane | undefined,
  privacy: PrivacyPolicy,
  table = '',
): Promise<PrivacyRefusal | undefined> {
  if (lane === 'local') return { type: 'NotSyncable', table, lane };
  if (lane === 'trusted' && !(await privacy.selfTrusted(tx))) return { type: 'NotEligible', table, lane };
  return undefined;
}

/**
 * Whether an envelope was refused for good already. A refusal as not eligible
 * lasts only while this machine is not trusted: once it is, the envelope is
 * judged again when a peer offers it anew.
 */
export async function refusedBefore(tx: ReplicaTx, outerId: string, privacy: PrivacyPolicy): Promise<boolean> {
  const reason = await tx.rejectionReason(outerId);
  if (reason === undefined) return false;
  return reason !== 'NotEligible' || !(await privacy.selfTrusted(tx));
}

async function checkChain(tx: ReplicaTx, event: SignedEvent, signer: string): Promise<Admission | undefined> {
  const head = (await tx.head(chainKey(signer, event.body.lane))) ?? { seq: 0, eventId: toHex(ZERO_HASH) };
  const { seq, prev } = event.body;
  if (seq <= head.seq) {
    if (await tx.hasEventId(toHex(event.id))) return { type: 'Duplicate' };
    return { type: 'Rejected', error: { type: 'ChainFork', signer, seq } };
  }
  if (seq > head.seq + 1) {
    return { type: 'Parked', reason: 'ChainGap', detail: `waiting for seq ${head.seq + 1} of ${signer.slice(0, 8)}` };
  }
  const expectedPrev = fromHex(head.eventId);
  if (!expectedPrev || !bytesEqual(prev, expectedPrev)) {
    return { type: 'Rejected', error: { type: 'ChainBroken', signer, seq } };
  }
  return undefined;
}

/** Admits an event this machine opened and verified; the sealed bytes are what get stored and forwarded. */
export async function admitEvent(
  tx: ReplicaTx,
  opened: OpenedEnvelope,
  trust: TrustContext,
  privacy: PrivacyPolicy,
  now: number,
): Promise<Admission> {
  const { sealed, bytes, event } = opened;
  const outerId = envelopeId(sealed);
  if ((await tx.hasOuterId(outerId)) || (await refusedBefore(tx, outerId, privacy))) return { type: 'Duplicate' };
  const body = event.body;
  const signer = toHex(body.signer);
  const lane = await laneRefusal(tx, body.lane, privacy, body.table);
  if (lane) return { type: 'Rejected', error: lane };
  const verdict = await authorize(tx, body, trust);
  if (verdict.type === 'UnknownSigner') {
    if (await tx.hasEventId(toHex(event.id))) return { type: 'Duplicate' };
    return { type: 'Parked', reason: 'UnknownSigner', detail: `signer ${signer.slice(0, 8)} not in the keyring` };
  }
  if (verdict.type === 'NotAuthorized') {
    const { reason, table } = verdict;
    if (verdict.final) return { type: 'Rejected', error: { type: 'NotAuthorized', signer, table, reason } };
    return { type: 'Parked', reason: 'NotAuthorized', detail: `${table}: ${reason}` };
  }
  const chain = await checkChain(tx, event, signer);
  // Withheld earlier as not eligible but counted as a link then: it stays withheld, not a fork.
  if (chain?.type === 'Rejected' && (await tx.rejectionReason(outerId)) === 'NotEligible') return { type: 'Duplicate' };
  if (chain) return chain;
  const held = await privacy.classOf(tx, body.table);
  if (held === 'local' || (held === 'trusted' && !(await privacy.selfTrusted(tx)))) {
    // Not taken in, but a link of its chain all the same.
    await tx.setHead(chainKey(signer, body.lane), { seq: body.seq, eventId: toHex(event.id) });
    const type = held === 'local' ? 'NotSyncable' : 'NotEligible';
    return { type: 'Rejected', error: { type, table: body.table, lane: body.lane ?? 'public' } };
  }
  const revoked = verdict.type === 'Revoked';
  const recorded = await recordEvent(tx, sealed, bytes, event, revoked, trust, now);
  return { type: 'Applied', pos: recorded.pos, body, revoked, resurrections: recorded.resurrections };
}
