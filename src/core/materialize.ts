/**
 * Keeping materialised rows, resurrections and revocations consistent with the
 * log, inside one store transaction.
 *
 * - `recordEvent` appends an opened event, moves its signer's chain head and the
 *   clock, and — unless the event is revoked — merges it into its row and reports
 *   each new resurrection: a pair (delete, put) of one row where the put's stamp
 *   is higher. Pairs are stored under a key, so each is reported exactly once per
 *   replica however the two events arrive.
 * - A change to a control row (keyring or roles) re-authorises every logged
 *   event of the signer it names: events no longer allowed (seq above a removal's
 *   high-water mark, or a role that came from a now-revoked grant) are flagged
 *   revoked, events allowed again are restored, and every row they touched is
 *   rebuilt from the surviving entries. A revoked removal or grant can change
 *   other signers' verdicts in turn, so the recount runs to a fixpoint.
 *
 * Everything here is a function of the set of logged events, never of their
 * order, which is what makes replicas converge byte for byte.
 */
import { bytesEqual, internedHex } from './bytes.js';
import { encodeCbor } from './cbor.js';
import type { EventBody } from './event.js';
import { compareHlc, compareStamps, type Hlc, type Stamp } from './hlc.js';
import { applyChange, overtakenCells, type Overtaken, type RowChange, type RowState } from './merge.js';
import { namesOf, type OpenedEnvelope } from './opened.js';
import { chainKey, parseDomainMarks } from './chains.js';
import { authorize, type TrustContext } from './trust.js';
import { run, type Awaitable, type Steps } from './steps.js';
import {
  rowKeyOf,
  type ChainHead,
  type LogEntry,
  type NewLogEntry,
  type ReplicaTx,
  type Resurrection,
  type StampedEntry,
} from './store.js';

export function changeOf(body: EventBody): RowChange {
  const stamp = stampOf(body);
  const { table, row } = body;
  if (body.op === 'del') return { op: 'del', table, row, stamp };
  if (body.op === 'remove') {
    // A removal from before lanes names no trusted mark: it keeps none of the trusted lane.
    const trustedHwm = (body.cols['trusted_hwm'] as number | undefined) ?? 0;
    const domainHwms = parseDomainMarks(body.cols['domain_hwms']) ?? {};
    return { op: 'remove', table, row, hwm: body.cols['hwm'] as number, trustedHwm, domainHwms, stamp };
  }
  return { op: 'put', table, row, cols: body.cols, stamp };
}

export const stampOf = (body: EventBody): Stamp => ({ ms: body.hlc.ms, counter: body.hlc.counter, node: body.signer });

const pairKey = (deleteId: string, editId: string): string => `${deleteId}:${editId}`;

const sameRow = (a: RowState | undefined, b: RowState | undefined): boolean =>
  bytesEqual(encodeCbor(a ?? null), encodeCbor(b ?? null));

/** Rows whose change can alter which events are authorised: row id = signer id. */
const isControlRow = (table: string): boolean => table === 'keyring' || table === 'roles';

type Recorded = {
  readonly pos: number;
  readonly resurrections: Resurrection[];
  /** Cells this machine wrote that the event's put replaced (another machine's event only). */
  readonly overtaken: readonly Overtaken[];
};

const NONE: readonly Overtaken[] = Object.freeze([]);

/** Appends an opened event and applies its effects; returns its log position, new resurrections, cells overtaken. */
export function recordEvent(
  tx: ReplicaTx,
  opened: OpenedEnvelope,
  revoked: boolean,
  trust: TrustContext,
  now: number,
  /** The position of the opaque entry this event fills (it was held before it could be read). */
  fill?: number,
): Awaitable<Recorded> {
  return run(recording(tx, opened, revoked, trust, now, fill));
}

/** `recordEvent` as steps (steps.ts), for admission. */
export function* recording(
  tx: ReplicaTx,
  opened: OpenedEnvelope,
  revoked: boolean,
  trust: TrustContext,
  now: number,
  fill: number | undefined,
): Steps<Recorded> {
  const { sealed, bytes: sealedBytes, event } = opened;
  const body = event.body;
  const signer = internedHex(body.signer);
  const { outerId, eventId } = namesOf(opened);
  const rowKey = rowKeyOf(body.table, body.row);
  const stored: { -readonly [K in keyof NewLogEntry]: NewLogEntry[K] } = {
    outerId,
    domain: sealed.domain,
    sealed: sealedBytes,
    eventId,
    signer,
    seq: body.seq,
    body,
    rowKey,
    op: body.op,
  };
  if (body.lane) stored.lane = body.lane;
  if (revoked) stored.revoked = true;
  let pos: number;
  if (fill === undefined) {
    pos = (yield tx.append(stored, event.bodyBytes)) as number;
  } else {
    yield tx.fill(fill, stored, event.bodyBytes);
    pos = fill;
  }
  // A withheld slot filled later sits below the head it once moved: heads only go forward.
  const chain = chainKey(signer, body.lane, body.domain, body.gen);
  const head = (yield tx.head(chain)) as ChainHead | undefined;
  if (!head || body.seq > head.seq) yield tx.setHead(chain, { seq: body.seq, eventId });
  const clock = (yield tx.getHlc()) as Hlc | undefined;
  if (!clock || compareHlc(body.hlc, clock) > 0) yield tx.setHlc(body.hlc);
  if (revoked) return { pos, resurrections: [], overtaken: NONE };
  const before = (yield tx.getRow(body.table, body.row)) as RowState | undefined;
  const after = applyChange(before, changeOf(body));
  if (after !== before) yield tx.putRow(after);
  const overtaken =
    body.op === 'put' && signer !== trust.self ? overtakenCells(before, after, trust.self, signer) : NONE;
  const resurrections: Resurrection[] = [];
  // A put pairs only with the row's surviving deletes, and a row none ever reached has no
  // `deleted` stamp (merge.ts): nearly every put, so nearly every put reads nothing here.
  const mayPair = body.op === 'del' || (body.op === 'put' && before?.deleted !== undefined);
  if (mayPair) {
    const opposite = (yield tx.rowStamps(rowKey, body.op === 'put' ? 'del' : 'put')) as StampedEntry[];
    for (const pair of newPairs(opposite, { eventId, body }, now)) {
      yield tx.addResurrection(pair);
      resurrections.push(pair);
    }
  }
  if (isControlRow(body.table) && after !== before) {
    const revived = (yield recountRevocations(tx, [body.row], trust, now)) as Resurrection[];
    resurrections.push(...revived);
  }
  return { pos, resurrections, overtaken };
}

type Opened = { readonly eventId: string; readonly body: EventBody };

function livePairs(entries: readonly Opened[]): Map<string, { del: Opened; put: Opened }> {
  const deletes = entries.filter((e) => e.body.op === 'del');
  const puts = entries.filter((e) => e.body.op === 'put');
  const pairs = new Map<string, { del: Opened; put: Opened }>();
  for (const del of deletes) {
    for (const put of puts) {
      if (compareStamps(stampOf(put.body), stampOf(del.body)) > 0)
        pairs.set(pairKey(del.eventId, put.eventId), { del, put });
    }
  }
  return pairs;
}

const openedOf = (entries: readonly LogEntry[]): Opened[] =>
  entries.flatMap((e) => (e.body && e.eventId && !e.revoked ? [{ eventId: e.eventId, body: e.body }] : []));

/** `ReplicaTx.rowStamps` from a row's entries, for a store that reads whole entries anyway. */
export const stampedOf = (entries: readonly LogEntry[]): StampedEntry[] =>
  openedOf(entries).map((e) => ({ eventId: e.eventId, stamp: stampOf(e.body) }));

/**
 * The pairs a new put or delete forms with `others`, the row's surviving
 * entries of the opposite op: each (delete, put) where the put is stamped later.
 */
function newPairs(others: readonly StampedEntry[], event: Opened, now: number): Resurrection[] {
  const found: Resurrection[] = [];
  const stamp = stampOf(event.body);
  const isPut = event.body.op === 'put';
  for (const other of others) {
    const later = isPut ? compareStamps(stamp, other.stamp) > 0 : compareStamps(other.stamp, stamp) > 0;
    if (!later) continue;
    const [deleteId, editId] = isPut ? [other.eventId, event.eventId] : [event.eventId, other.eventId];
    found.push(toResurrection(deleteId, editId, event.body, now));
  }
  return found;
}

function toResurrection(deleteId: string, editId: string, of: EventBody, now: number): Resurrection {
  return { key: pairKey(deleteId, editId), table: of.table, row: of.row, deleteId, editId, at: now };
}

/** Rebuilds one row from its surviving events; returns pairs that became live again. */
async function rebuildRow(tx: ReplicaTx, rowKey: string, now: number): Promise<Resurrection[]> {
  const entries = openedOf(await tx.rowEntries(rowKey));
  const [table, row] = rowKey.split('\u0000') as [string, string];
  let state: RowState | undefined;
  for (const entry of entries) state = applyChange(state, changeOf(entry.body));
  if (state) await tx.putRow(state);
  else await tx.deleteRow(table, row);
  const revived: Resurrection[] = [];
  for (const [key, { del, put }] of livePairs(entries)) {
    if (await tx.hasResurrection(key)) continue;
    const resurrection = toResurrection(del.eventId, put.eventId, put.body, now);
    await tx.addResurrection(resurrection);
    revived.push(resurrection);
  }
  return revived;
}

/**
 * Re-authorises the logged events of the given signers against the control rows
 * as they stand, flips revoked flags that disagree, rebuilds the rows touched,
 * and follows control rows that changed in turn, until nothing changes.
 */
export async function recountRevocations(
  tx: ReplicaTx,
  signers: readonly string[],
  trust: TrustContext,
  now: number,
): Promise<Resurrection[]> {
  const queue = [...new Set(signers)];
  const revived: Resurrection[] = [];
  for (let guard = 0; queue.length > 0; guard++) {
    if (guard > 10_000) throw new Error('materialize: revocation recount does not converge');
    const signer = queue.shift()!;
    const touched = new Set<string>();
    for (const entry of await tx.signerEntriesAbove(signer, 0)) {
      if (!entry.body) continue;
      const revoke = (await authorize(tx, entry.body, trust)).type !== 'Allowed';
      if (revoke === (entry.revoked === true)) continue;
      await tx.setRevoked(entry.pos, revoke);
      if (revoke && entry.eventId) await tx.dropResurrectionsOf(entry.eventId);
      if (entry.rowKey) touched.add(entry.rowKey);
    }
    for (const rowKey of touched) {
      const [table, row] = rowKey.split('\u0000') as [string, string];
      const before = await tx.getRow(table, row);
      revived.push(...(await rebuildRow(tx, rowKey, now)));
      const after = await tx.getRow(table, row);
      if (isControlRow(table) && !sameRow(before, after) && !queue.includes(row)) {
        queue.push(row);
      }
    }
  }
  return revived;
}
