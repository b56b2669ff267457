/**
 * Admission of one opened, signature-checked event into the replica, decided
 * inside the store transaction that also records it (SSP/1 delivery rules).
 *
 * Order of checks: duplicate (by outer id, then event id) → trusted signer →
 * admin-only tables → hash chain (gap, fork, broken prev) → clock → append,
 * chain head, HLC and row merge in the same transaction. Every refusal is a
 * typed value and writes nothing.
 */
import { bytesEqual, fromHex, toHex } from './bytes.js';
import type { EventBody, SignedEvent } from './event.js';
import { ZERO_HASH } from './event.js';
import { compareHlc, type Hlc } from './hlc.js';
import { applyChange } from './merge.js';
import type { SealedEvent } from './seal.js';
import { tableSpec } from './schema.js';
import type { ReplicaTx } from './store.js';
import type { TrustPolicy } from './trust.js';

export type ChainError =
  | { readonly type: 'ChainGap'; readonly signer: string; readonly expected: number; readonly got: number }
  | { readonly type: 'ChainFork'; readonly signer: string; readonly seq: number }
  | { readonly type: 'ChainBroken'; readonly signer: string; readonly seq: number };

export type AdmissionError =
  | ChainError
  | { readonly type: 'UnknownSigner'; readonly signer: string }
  | { readonly type: 'NotAuthorized'; readonly signer: string; readonly table: string };

export type Admission =
  | { readonly type: 'Applied'; readonly pos: number; readonly body: EventBody }
  | { readonly type: 'Duplicate' }
  | AdmissionError;

async function checkChain(tx: ReplicaTx, event: SignedEvent, signer: string): Promise<Admission | undefined> {
  const head = (await tx.head(signer)) ?? { seq: 0, eventId: toHex(ZERO_HASH) };
  const { seq, prev } = event.body;
  if (seq <= head.seq) {
    return (await tx.hasEventId(toHex(event.id))) ? { type: 'Duplicate' } : { type: 'ChainFork', signer, seq };
  }
  if (seq > head.seq + 1) return { type: 'ChainGap', signer, expected: head.seq + 1, got: seq };
  const expectedPrev = fromHex(head.eventId);
  if (!expectedPrev || !bytesEqual(prev, expectedPrev)) return { type: 'ChainBroken', signer, seq };
  return undefined;
}

/** Admits an event this machine opened and verified; `sealed` is what gets stored and forwarded. */
export async function admitEvent(
  tx: ReplicaTx,
  sealed: SealedEvent,
  sealedBytes: Uint8Array,
  event: SignedEvent,
  trust: TrustPolicy,
): Promise<Admission> {
  if (await tx.hasOuterId(toHex(sealed.id))) return { type: 'Duplicate' };
  const body = event.body;
  const signer = toHex(body.signer);
  const role = await trust.roleOf(tx, signer);
  if (!role) return (await tx.hasEventId(toHex(event.id))) ? { type: 'Duplicate' } : { type: 'UnknownSigner', signer };
  if (tableSpec(body.table)?.adminOnly && role !== 'admin') {
    return { type: 'NotAuthorized', signer, table: body.table };
  }
  const chain = await checkChain(tx, event, signer);
  if (chain) return chain;
  const pos = await recordEvent(tx, sealed, sealedBytes, event);
  return { type: 'Applied', pos, body };
}

/** Appends, moves the chain head and clock, and merges the row: shared by local writes and admission. */
export async function recordEvent(
  tx: ReplicaTx,
  sealed: SealedEvent,
  sealedBytes: Uint8Array,
  event: SignedEvent,
): Promise<number> {
  const body = event.body;
  const signer = toHex(body.signer);
  const eventId = toHex(event.id);
  const pos = await tx.append({
    outerId: toHex(sealed.id),
    domain: sealed.domain,
    sealed: sealedBytes,
    eventId,
    signer,
    seq: body.seq,
  });
  await tx.setHead(signer, { seq: body.seq, eventId });
  await advanceClock(tx, body.hlc);
  const stamp = { ...body.hlc, node: body.signer };
  const merged = applyChange(await tx.getRow(body.table, body.row), {
    table: body.table,
    row: body.row,
    cols: body.cols,
    stamp,
  });
  if (merged) await tx.putRow(merged);
  return pos;
}

async function advanceClock(tx: ReplicaTx, seen: Hlc): Promise<void> {
  const local = await tx.getHlc();
  if (!local || compareHlc(seen, local) > 0) await tx.setHlc(seen);
}
