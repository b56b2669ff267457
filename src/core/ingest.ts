/**
 * Admission of one opened, signature-checked event into the replica, decided
 * inside the store transaction that also records it (SSP/1 delivery rules).
 *
 * Order of checks: already logged or finally rejected (by outer id, then event
 * id) → authorisation against the control records → hash chain → record. The
 * verdict is one of:
 *   Applied     logged and materialised (or logged as revoked: a removed signer)
 *   Duplicate   nothing to do
 *   Parked      kept aside to re-evaluate when what it waits for arrives
 *               (unknown signer, missing role, chain gap, clock far ahead)
 *   Rejected    final, recorded with its typed reason; the watermark passes it
 * A refusal writes nothing but its record.
 */
import { bytesEqual, fromHex, toHex } from './bytes.js';
import type { EventBody, SignedEvent } from './event.js';
import { ZERO_HASH } from './event.js';
import { recordEvent } from './materialize.js';
import { envelopeId, type SealedEvent } from './seal.js';
import type { ParkReason, ReplicaTx, Resurrection } from './store.js';
import { authorize, type TrustContext } from './trust.js';

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
    }
  | { readonly type: 'Duplicate' }
  | { readonly type: 'Parked'; readonly reason: ParkReason; readonly detail: string }
  | { readonly type: 'Rejected'; readonly error: FinalRejection };

export type OpenedEnvelope = {
  readonly sealed: SealedEvent;
  readonly bytes: Uint8Array;
  readonly event: SignedEvent;
};

async function checkChain(tx: ReplicaTx, event: SignedEvent, signer: string): Promise<Admission | undefined> {
  const head = (await tx.head(signer)) ?? { seq: 0, eventId: toHex(ZERO_HASH) };
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
  now: number,
): Promise<Admission> {
  const { sealed, bytes, event } = opened;
  const outerId = envelopeId(sealed);
  if ((await tx.hasOuterId(outerId)) || (await tx.isRejected(outerId))) return { type: 'Duplicate' };
  const body = event.body;
  const signer = toHex(body.signer);
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
  if (chain) return chain;
  const revoked = verdict.type === 'Revoked';
  const recorded = await recordEvent(tx, sealed, bytes, event, revoked, trust, now);
  return { type: 'Applied', pos: recorded.pos, body, revoked, resurrections: recorded.resurrections };
}
