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
 *   Withheld    not held here because of a privacy class (sync-manifest.ts): only
 *               its identity is kept (store.ts WithheldRecord), never its content;
 *               the watermark passes it, and it is asked for again (`want`) when
 *               the class or this machine's trust widens
 * A refusal writes nothing but its record. A withheld event whose chain it links
 * moves that chain's head all the same, so the signer's later events are not
 * stalled behind it; when it is taken in later, its slot is filled: the event
 * must be exactly the one withheld (same outer id, so same event id), and it is
 * materialised by the same order-free merge as any other.
 */
import { hexEqualsBytes, internedHex, toHex } from './bytes.js';
import type { EventBody, SignedEvent } from './event.js';
import { ZERO_HASH } from './event.js';
import { recording } from './materialize.js';
import { namesOf, type EnvelopeNames, type OpenedEnvelope } from './opened.js';
import { after, run, type Awaitable, type Steps } from './steps.js';
import type { Overtaken } from './merge.js';
import type { ChainHead, EnvelopeState, ParkReason, ReplicaTx, Resurrection, WithheldRecord } from './store.js';
import { chainKey } from './chains.js';
import type { Lane, PrivacyClass, PrivacyPolicy } from './sync-manifest.js';
import { authorization, type TrustContext } from './trust.js';

const ZERO_HEX = toHex(ZERO_HASH);

/** Refusals by privacy class (sync-manifest.ts). */
export type PrivacyRefusal =
  /** A local-lane event (it should never have left its writer), or a table local here. */
  | { readonly type: 'NotSyncable'; readonly table: string; readonly lane: Lane }
  /** A trusted-lane event or table while this machine is not trusted (forgotten once it is). */
  | { readonly type: 'NotEligible'; readonly table: string; readonly lane: Lane };

export type FinalRejection =
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
      readonly overtaken: readonly Overtaken[];
    }
  /** `withheld`: the copy of an envelope still withheld here, which must be taken when it may be held. */
  | { readonly type: 'Duplicate'; readonly withheld?: true }
  | { readonly type: 'Parked'; readonly reason: ParkReason; readonly detail: string }
  | { readonly type: 'Rejected'; readonly error: FinalRejection }
  | { readonly type: 'Withheld'; readonly record: WithheldRecord; readonly error: PrivacyRefusal };

export { namesOf, type EnvelopeNames, type OpenedEnvelope };

/**
 * Whether this machine may hold an envelope of `lane` at all, judged without
 * reading it: never a local-lane one; a trusted-lane one only when trusted.
 */
export function laneRefusal(
  tx: ReplicaTx,
  lane: Lane | undefined,
  privacy: PrivacyPolicy,
  table = '',
): Awaitable<PrivacyRefusal | undefined> {
  if (lane === 'local') return { type: 'NotSyncable', table, lane };
  if (lane !== 'trusted') return undefined;
  return after(privacy.selfTrusted(tx), (trusted) => (trusted ? undefined : { type: 'NotEligible', table, lane }));
}

/** The record that withholds an envelope: its identity, and its chain when it links one here. */
export function withheldRecord(
  outerId: string,
  refusal: PrivacyRefusal,
  at: number,
  link?: { readonly eventId: string; readonly chain: string; readonly seq: number },
): WithheldRecord {
  return {
    outerId,
    eventId: link?.eventId ?? '',
    chain: link?.chain ?? '',
    seq: link?.seq ?? 0,
    table: refusal.table,
    lane: refusal.lane,
    reason: refusal.type,
    at,
  };
}

/**
 * The chain check against the head this replica holds for the event's chain:
 * undefined when the event is the next link; a verdict otherwise. An event at
 * or below the head is a duplicate when its id is logged, which the caller
 * asks the store (`AtOrBelowHead`).
 */
function chainVerdict(
  event: SignedEvent,
  signer: string,
  head: ChainHead | undefined,
): Admission | { readonly type: 'AtOrBelowHead' } | undefined {
  const { seq, prev } = event.body;
  const at = head ?? { seq: 0, eventId: ZERO_HEX };
  if (seq <= at.seq) return { type: 'AtOrBelowHead' };
  if (seq > at.seq + 1) {
    return { type: 'Parked', reason: 'ChainGap', detail: `waiting for seq ${at.seq + 1} of ${signer.slice(0, 8)}` };
  }
  if (!hexEqualsBytes(at.eventId, prev)) return { type: 'Rejected', error: { type: 'ChainBroken', signer, seq } };
  return undefined;
}

/** `refusal`, unless the event is logged already: then it is a duplicate. */
function* unlessLogged(
  tx: ReplicaTx,
  signer: string,
  seq: number,
  eventId: string,
  refusal: Admission,
): Steps<Admission> {
  const logged = (yield tx.hasEvent(signer, seq, eventId)) as boolean;
  return logged ? { type: 'Duplicate' } : refusal;
}

/** An event at or below its chain's head: a duplicate when its id is logged, else a fork. */
function* atOrBelowHead(tx: ReplicaTx, signer: string, seq: number, eventId: string): Steps<Admission> {
  const logged = (yield tx.hasEvent(signer, seq, eventId)) as boolean;
  if (logged) return { type: 'Duplicate' };
  return { type: 'Rejected', error: { type: 'ChainFork', signer, seq } };
}

/**
 * Admits an event this machine opened and verified; the sealed bytes are what
 * get stored and forwarded. Synchronous when the store answers at once (steps.ts).
 */
export function admitEvent(
  tx: ReplicaTx,
  opened: OpenedEnvelope,
  trust: TrustContext,
  privacy: PrivacyPolicy,
  now: number,
  /** The log position of this envelope held opaque, now readable: it is filled there, not appended. */
  fill?: number,
): Awaitable<Admission> {
  return run(admission(tx, opened, trust, privacy, now, fill));
}

/** `admitEvent` as steps (steps.ts), for a caller that is steps itself (a replica's batch). */
export function* admission(
  tx: ReplicaTx,
  opened: OpenedEnvelope,
  trust: TrustContext,
  privacy: PrivacyPolicy,
  now: number,
  fill: number | undefined,
): Steps<Admission> {
  const { event } = opened;
  const { outerId, eventId } = namesOf(opened);
  const known = (yield tx.envelopeState(outerId)) as EnvelopeState;
  if ((fill === undefined && known.logged) || known.rejected) return { type: 'Duplicate' };
  const body = event.body;
  const signer = internedHex(body.signer);
  if (fill !== undefined) {
    const filled = (yield tx.hasEvent(signer, body.seq, eventId)) as boolean;
    if (filled) return { type: 'Duplicate' };
  }
  const slot = known.withheld;
  // The public lane (no `lane`) is held everywhere: nothing to ask the store.
  const lane =
    body.lane === undefined
      ? undefined
      : ((yield laneRefusal(tx, body.lane, privacy, body.table)) as PrivacyRefusal | undefined);
  // A refusal below may meet an event logged already under another outer id (re-sealed, or sealed
  // again for another generation) whose verdict has changed since: that is a duplicate, not a
  // refusal. Asked only on these rare paths; the common one finds duplicates by its chain.
  if (lane) {
    if (slot) return { type: 'Duplicate', withheld: true };
    return yield* unlessLogged(tx, signer, body.seq, eventId, {
      type: 'Withheld',
      record: withheldRecord(outerId, lane, now),
      error: lane,
    });
  }
  const verdict = yield* authorization(tx, body, trust);
  if (verdict.type === 'UnknownSigner') {
    const detail = `signer ${signer.slice(0, 8)} not in the keyring`;
    return yield* unlessLogged(tx, signer, body.seq, eventId, { type: 'Parked', reason: 'UnknownSigner', detail });
  }
  if (verdict.type === 'NotAuthorized') {
    const { reason, table } = verdict;
    const refusal: Admission = verdict.final
      ? { type: 'Rejected', error: { type: 'NotAuthorized', signer, table, reason } }
      : { type: 'Parked', reason: 'NotAuthorized', detail: `${table}: ${reason}` };
    return yield* unlessLogged(tx, signer, body.seq, eventId, refusal);
  }
  // A slot this event already links keeps its place in the chain: it is filled, not re-linked.
  const linked = slot !== undefined && slot.chain !== '';
  if (!linked) {
    const head = (yield tx.head(chainKey(signer, body.lane, body.domain, body.gen))) as ChainHead | undefined;
    const chain = chainVerdict(event, signer, head);
    if (chain?.type === 'AtOrBelowHead') return yield* atOrBelowHead(tx, signer, body.seq, eventId);
    if (chain) return chain;
  }
  const held = (yield privacy.classOf(tx, body.table)) as PrivacyClass;
  const trusted = held === 'trusted' ? ((yield privacy.selfTrusted(tx)) as boolean) : true;
  if (held === 'local' || !trusted) {
    const chain = chainKey(signer, body.lane, body.domain, body.gen);
    const type = held === 'local' ? 'NotSyncable' : 'NotEligible';
    const error: PrivacyRefusal = { type, table: body.table, lane: body.lane ?? 'public' };
    if (linked) return { type: 'Duplicate', withheld: true };
    // Not taken in, but a link of its chain all the same.
    yield tx.setHead(chain, { seq: body.seq, eventId });
    return { type: 'Withheld', record: withheldRecord(outerId, error, now, { eventId, chain, seq: body.seq }), error };
  }
  if (slot) yield tx.release(outerId);
  const revoked = verdict.type === 'Revoked';
  const recorded = yield* recording(tx, opened, revoked, trust, now, fill);
  const { pos, resurrections, overtaken } = recorded;
  return { type: 'Applied', pos, body, revoked, resurrections, overtaken };
}
