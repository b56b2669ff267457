/**
 * One machine's replica of the state plane: local writes (local-writes.ts), admission
 * of events from peers, parked events, and the watermarks of the delivery protocol.
 *
 * Ingest: envelopes are opened and verified outside the transaction (crypto is
 * asynchronous), then admitted in ONE transaction per batch together with the
 * rejection records, the parked envelopes and the peer's inbound watermark, so a
 * crash leaves either all of a batch or none of it. After a batch that applied
 * anything, parked envelopes are retried in the same transaction: what waited
 * for a keyring entry, a role or a missing predecessor gets in as soon as it can.
 * Parked envelopes are kept opened (signature already checked), so a retry needs
 * no crypto and stays inside the transaction.
 */
import { internedHex, toHex } from './bytes.js';
import { verifyChains } from './chain-verify.js';
import { decodeEvent, type EventBody, type EventError } from './event.js';
import { DEFAULT_MAX_SKEW_MS, HLC_ZERO, receive, type ClockSkewError } from './hlc.js';
import type { Overtaken } from './merge.js';
import {
  admission,
  admitEvent,
  namesOf,
  laneRefusal,
  withheldRecord,
  type FinalRejection,
  type OpenedEnvelope,
  type PrivacyRefusal,
} from './ingest.js';
import { Republisher, type Reissue } from './republish.js';
import { LocalWrites, type WriteError, type WriteOutcome } from './local-writes.js';
import {
  openEnvelope,
  type DomainMismatch,
  type EnvelopeOpener,
  type GenerationMismatch,
  type LaneMismatch,
  type Opening,
} from './open.js';
import type { Clock, Signer, Verifier } from './ports.js';
import type { PrivacyPolicy } from './sync-manifest.js';
import type { Result } from './result.js';
import { decodeSealed, envelopeId, type SealedEvent, type SealError, type SealLane } from './seal.js';
import type { ColumnValue, DomainName } from './schema.js';
import { run, type Steps } from './steps.js';
import type {
  EnvelopeState,
  Lookup,
  ParkedEnvelope,
  ParkReason,
  ReplicaStore,
  ReplicaTx,
  Resurrection,
} from './store.js';
import type { TrustContext } from './trust.js';

/** The sealing half of the crypto port: domain keys never leave its implementation. */
export interface EnvelopeCrypto {
  /** Seals under generation `gen` of the domain when named (it must be held), else under the newest held. */
  seal(domain: DomainName, signedEvent: Uint8Array, lane?: SealLane, gen?: number): Promise<SealedEvent>;
  open(sealed: SealedEvent): Promise<Result<Uint8Array, SealError>>;
  /** The newest generation of the domain held here; undefined when none is. */
  generation(domain: DomainName): Promise<number | undefined>;
}

/** Held envelopes opened per page by `reopen`. */
const REOPEN_PAGE = 256;

/** Thrown inside a reopen transaction to roll it back: the envelope stays held. */
class KeepHeld extends Error {}

/** Withheld records looked at per `wanted` call (the oldest first). */
const WANT_SCAN = 10_000;

export type ReplicaDeps = {
  readonly store: ReplicaStore;
  readonly signer: Signer;
  readonly verifier: Verifier;
  readonly envelopes: EnvelopeCrypto;
  /** Opens whole batches, e.g. spread over worker threads; by default `envelopes` opens them here. */
  readonly opener?: EnvelopeOpener;
  readonly trust: TrustContext;
  /** Which tables this machine may hold, and so which lane its own writes take (sync-manifest.ts). */
  readonly privacy: PrivacyPolicy;
  readonly clock: Clock;
  /** Serialises applying across every context sharing the store (Web Lock `sov-apply` in browsers). */
  readonly withLock?: <T>(fn: () => Promise<T>) => Promise<T>;
  readonly maxSkewMs?: number;
  /** Bound on parked envelopes; beyond it an envelope that would park is `Deferred` (offered again later). */
  readonly maxParked?: number;
};

export type Rejection = SealError | EventError | FinalRejection | DomainMismatch | LaneMismatch | GenerationMismatch;

export type IngestOutcome =
  | {
      readonly type: 'Applied';
      readonly outerId: string;
      readonly body: EventBody;
      readonly revoked: boolean;
      readonly resurrections: readonly Resurrection[];
      /** Cells this machine wrote that the event replaced (merge.ts `overtakenCells`). */
      readonly overtaken: readonly Overtaken[];
    }
  | { readonly type: 'StoredOpaque'; readonly outerId: string }
  /**
   * Held already. `withheld`: a copy of an envelope this machine withholds (its identity only);
   * unlike other duplicates it is not remembered as held, so a copy sent once it may hold it is taken.
   */
  | { readonly type: 'Duplicate'; readonly outerId: string; readonly withheld?: true }
  | { readonly type: 'Parked'; readonly outerId: string; readonly reason: ParkReason; readonly detail: string }
  | { readonly type: 'Rejected'; readonly outerId: string; readonly error: Rejection }
  | { readonly type: 'Withheld'; readonly outerId: string; readonly error: PrivacyRefusal }
  /**
   * Not taken in, and not remembered: it would have parked, but parking is full. The
   * batch's watermark stays where it was, so the sender offers it again.
   */
  | { readonly type: 'Deferred'; readonly outerId: string; readonly reason: 'ParkingFull' };

export type { WriteError, WriteOutcome } from './local-writes.js';

type Opened =
  | ({ readonly kind: 'event' } & OpenedEnvelope)
  | { readonly kind: 'skewed'; readonly opened: OpenedEnvelope; readonly error: ClockSkewError }
  | { readonly kind: 'opaque'; readonly sealed: SealedEvent; readonly bytes: Uint8Array }
  | { readonly kind: 'rejected'; readonly outerId: string; readonly error: Rejection }
  /** Held already (logged, rejected or parked): a duplicate, never opened. */
  | { readonly kind: 'known'; readonly outerId: string };

const DEFAULT_MAX_PARKED = 10_000;
/** Outer ids `#openNew` remembers as held (a few MB of strings at most). */
const MAX_REMEMBERED = 50_000;

export class Replica {
  readonly #deps: ReplicaDeps;
  readonly #self: string;
  #queue: Promise<unknown> = Promise.resolve();
  /** Local writes, group-committed (local-writes.ts). */
  readonly #writes: LocalWrites;
  /** Unpublished own rows moved to the current generation before they leave (republish.ts). */
  readonly #republisher: Republisher;
  /** Settles when the latest ingest call has been admitted (or failed). */
  #ingestTurn: Promise<unknown> = Promise.resolve();
  /** Outer ids admitted, parked or refused here, the newest (`#remember`). */
  #held = new Set<string>();
  /** The ids remembered before `#held` last filled: still looked up, dropped at the next turn. */
  #heldBefore = new Set<string>();

  constructor(deps: ReplicaDeps) {
    this.#deps = deps;
    this.#self = toHex(deps.signer.publicKey);
    this.#writes = new LocalWrites(deps, this.#self, (fn) => this.#exclusive(fn));
    this.#republisher = new Republisher(deps, this.#self);
  }

  get self(): string {
    return this.#self;
  }

  /** Runs `fn` alone: in this context through a queue, across contexts through the injected lock. */
  #exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const locked = this.#deps.withLock ? () => this.#deps.withLock!(fn) : fn;
    const result = this.#queue.then(locked, locked);
    this.#queue = result.catch(() => undefined);
    return result;
  }

  /** Signs, seals and records a put of some columns; per-column LWW applies to it like any other event. */
  write(table: string, row: string, cols: Record<string, ColumnValue>): Promise<Result<WriteOutcome, WriteError>> {
    return this.#writes.write(table, row, cols);
  }

  /** Tombstones a row; a later edit (higher HLC) resurrects it. */
  delete(table: string, row: string): Promise<Result<WriteOutcome, WriteError>> {
    return this.#writes.delete(table, row);
  }

  /** Removes a machine from the keyring for good (local-writes.ts says which of its events stay). */
  remove(signer: string): Promise<Result<WriteOutcome, WriteError>> {
    return this.#writes.remove(signer);
  }

  /**
   * Issues again, under the current key generation, this machine's rows that never left it
   * and are sealed under an older one (republish.ts); what the sender runs before offering.
   */
  republish(): Promise<Reissue[]> {
    return this.#exclusive(() => this.#republisher.run());
  }

  /**
   * Opens, verifies and admits a batch of envelopes from a peer, atomically with
   * the peer's inbound watermark `upto` (a position in the peer's log).
   */
  ingest(peer: string, envelopes: readonly Uint8Array[], upto?: number): Promise<IngestOutcome[]> {
    // Opening starts at once, so a later batch can be opened while an earlier one is admitted;
    // admission keeps the order of the calls.
    const opening = this.#openNew(envelopes);
    opening.catch(() => undefined);
    const admitted = this.#ingestTurn.then(async () => {
      const opened = await opening;
      const outcomes = await this.#exclusive(() =>
        this.#deps.store.transact((tx) => run(this.#admitBatch(tx, peer, opened, upto))),
      );
      this.#remember(outcomes);
      return outcomes;
    });
    this.#ingestTurn = admitted.catch(() => undefined);
    return admitted;
  }

  /**
   * Takes in the envelopes this machine held without being able to read them,
   * now that it can (a domain's key generation arrived: it was added to the
   * domain, with history, or the generation they are sealed under): each is
   * filled in where it lies in the log. One that would not apply as it stands
   * (a gap in its chain, a signer not yet known) stays held and is tried again
   * next time; parked envelopes it unblocks follow.
   */
  reopen(): Promise<IngestOutcome[]> {
    return this.#exclusive(async () => {
      const { store, trust, privacy, clock } = this.#deps;
      const outcomes: IngestOutcome[] = [];
      for (let after = 0, progress = true; progress; after = 0) {
        progress = false;
        for (;;) {
          const held = await store.transact((tx) => tx.opaqueAfter(after, REOPEN_PAGE));
          if (held.length === 0) break;
          after = held.at(-1)!.pos;
          const opened = await this.#openAll(held.map((e) => e.sealed));
          for (const [i, item] of opened.entries()) {
            if (item.kind !== 'event') continue;
            const entry = held[i]!;
            const applied = await store
              .transact(async (tx) => {
                const verdict = await admitEvent(tx, item, trust, privacy, clock.now(), entry.pos);
                if (verdict.type === 'Parked') {
                  // Readable now but waiting (a gap in its chain, a signer not yet known): parked with
                  // its place in the log, so the event it waits for, whenever it arrives, lets it in.
                  // Left only held, it would stay opaque until the next generation arrived.
                  if (await tx.isParked(entry.outerId)) throw new KeepHeld();
                  const parked = await run(this.#park(tx, item, verdict.reason, verdict.detail, entry.pos));
                  if (parked.type !== 'Parked') throw new KeepHeld(); // parking is full: held, tried next time
                  return undefined;
                }
                // Anything else but a clean apply leaves the entry held, as it was.
                if (verdict.type !== 'Applied') throw new KeepHeld();
                // Parked on an earlier pass (the chain held in reverse log order): applied now, not again.
                if (await tx.isParked(entry.outerId)) await tx.unpark(entry.outerId);
                const { body, revoked, resurrections, overtaken } = verdict;
                return { type: 'Applied' as const, outerId: entry.outerId, body, revoked, resurrections, overtaken };
              })
              .catch((e: unknown) => {
                if (e instanceof KeepHeld) return undefined;
                throw e;
              });
            if (applied) {
              outcomes.push(applied);
              progress = true;
            }
          }
        }
      }
      if (outcomes.length > 0) {
        outcomes.push(...(await store.transact((tx) => run(this.#retryParked(tx, 'local')))));
      }
      this.#remember(outcomes);
      return outcomes;
    });
  }

  /** Re-evaluates parked envelopes locally (the clock moved on, or control records arrived). */
  async reevaluate(): Promise<IngestOutcome[]> {
    const outcomes = await this.#exclusive(() =>
      this.#deps.store.transact((tx) => run(this.#retryParked(tx, 'local'))),
    );
    this.#remember(outcomes);
    return outcomes;
  }

  /** A batch's admission and the watermark it moves, as steps: without a pause where the store answers at once. */
  *#admitBatch(
    tx: ReplicaTx,
    peer: string,
    opened: readonly Opened[],
    upto: number | undefined,
  ): Steps<IngestOutcome[]> {
    const outcomes: IngestOutcome[] = [];
    if (tx.prefetch) yield tx.prefetch(lookupOf(opened));
    let appliedSinceRetry = false;
    for (const item of opened) {
      let outcome = yield* this.#admit(tx, peer, item);
      if (outcome.type === 'Deferred' && appliedSinceRetry) {
        // Parking is full, but what this batch applied may have unblocked some of it: make room first.
        outcomes.push(...(yield* this.#retryParked(tx, peer)));
        appliedSinceRetry = false;
        outcome = yield* this.#admit(tx, peer, item);
      }
      if (outcome.type === 'Applied') appliedSinceRetry = true;
      outcomes.push(outcome);
    }
    if (outcomes.some((o) => o.type === 'Applied')) outcomes.push(...(yield* this.#retryParked(tx, peer)));
    // Something deferred must come again: the watermark does not pass it.
    if (upto !== undefined && !outcomes.some((o) => o.type === 'Deferred')) yield tx.setWatermark(peer, upto);
    return outcomes;
  }

  /** `fill`: the log position of an envelope held opaque there, admitted from the parked list. */
  *#admit(tx: ReplicaTx, peer: string, item: Opened, fill?: number): Steps<IngestOutcome> {
    const now = this.#deps.clock.now();
    switch (item.kind) {
      case 'known':
        return { type: 'Duplicate', outerId: item.outerId };
      case 'rejected': {
        const known = (yield tx.isRejected(item.outerId)) as boolean;
        if (known) return { type: 'Duplicate', outerId: item.outerId };
        return yield* this.#reject(tx, peer, item.outerId, item.error);
      }
      case 'opaque': {
        const outerId = envelopeId(item.sealed);
        const known = (yield tx.envelopeState(outerId)) as EnvelopeState;
        if (known.logged || known.rejected) return { type: 'Duplicate', outerId };
        // Holding is decided by the lane even where reading is impossible.
        const refusal = (yield laneRefusal(tx, item.sealed.lane, this.#deps.privacy)) as PrivacyRefusal | undefined;
        const slot = known.withheld;
        if (refusal) {
          if (slot) return { type: 'Duplicate', outerId, withheld: true };
          yield tx.withhold(withheldRecord(outerId, refusal, this.#deps.clock.now()));
          return { type: 'Withheld', outerId, error: refusal };
        }
        if (slot) yield tx.release(outerId);
        const lane = item.sealed.lane;
        yield tx.append({ outerId, domain: item.sealed.domain, sealed: item.bytes, ...(lane ? { lane } : {}) });
        return { type: 'StoredOpaque', outerId };
      }
      case 'skewed': {
        const { outerId } = namesOf(item.opened);
        const parked = (yield tx.isParked(outerId)) as boolean;
        if (parked || ((yield tx.hasOuterId(outerId)) as boolean)) return { type: 'Duplicate', outerId };
        const detail = `${item.error.remoteMs - item.error.localMs} ms ahead (bound ${item.error.maxSkewMs} ms)`;
        return yield* this.#park(tx, item.opened, 'ClockSkew', detail);
      }
      case 'event': {
        const { outerId } = namesOf(item);
        const parked = (yield tx.isParked(outerId)) as boolean;
        if (parked) return { type: 'Duplicate', outerId };
        const verdict = yield* admission(tx, item, this.#deps.trust, this.#deps.privacy, now, fill);
        switch (verdict.type) {
          case 'Applied': {
            const { body, revoked, resurrections, overtaken } = verdict;
            return { type: 'Applied', outerId, body, revoked, resurrections, overtaken };
          }
          case 'Duplicate':
            return { type: 'Duplicate', outerId, ...(verdict.withheld ? { withheld: true } : {}) };
          case 'Parked':
            return yield* this.#park(tx, item, verdict.reason, verdict.detail, fill);
          case 'Rejected':
            return yield* this.#reject(tx, peer, outerId, verdict.error);
          case 'Withheld':
            yield tx.withhold(verdict.record);
            return { type: 'Withheld', outerId, error: verdict.error };
        }
      }
    }
  }

  *#reject(tx: ReplicaTx, peer: string, outerId: string, error: Rejection): Steps<IngestOutcome> {
    const detail = 'reason' in error ? error.reason : '';
    yield tx.recordRejection({ outerId, reason: error.type, detail, at: this.#deps.clock.now(), peer });
    return { type: 'Rejected', outerId, error };
  }

  *#park(
    tx: ReplicaTx,
    opened: OpenedEnvelope,
    reason: ParkReason,
    detail: string,
    fill?: number,
  ): Steps<IngestOutcome> {
    const { outerId } = namesOf(opened);
    const count = (yield tx.parkedCount()) as number;
    // Refusing it for good would lose it: the gap that parks a window of envelopes is
    // usually one lost frame, and what parks behind it is as genuine as the rest.
    if (count >= (this.#deps.maxParked ?? DEFAULT_MAX_PARKED))
      return { type: 'Deferred', outerId, reason: 'ParkingFull' };
    yield tx.park({
      outerId,
      sealed: opened.bytes,
      event: opened.event.bytes,
      reason,
      detail,
      parkedAt: this.#deps.clock.now(),
      signer: internedHex(opened.event.body.signer),
      seq: opened.event.body.seq,
      ...(fill === undefined ? {} : { fill }),
    });
    return { type: 'Parked', outerId, reason, detail };
  }

  /** Retries every parked envelope until a pass admits nothing new. */
  *#retryParked(tx: ReplicaTx, peer: string): Steps<IngestOutcome[]> {
    const outcomes: IngestOutcome[] = [];
    const now = this.#deps.clock.now();
    const maxSkew = this.#deps.maxSkewMs ?? DEFAULT_MAX_SKEW_MS;
    for (let progress = true; progress;) {
      progress = false;
      // By chain and sequence: once a gap fills, one pass takes in the whole run behind it
      // (in arrival order a run of N out-of-order envelopes could take N passes).
      for (const parked of bySignerAndSeq((yield tx.parkedAll()) as ParkedEnvelope[])) {
        const sealed = decodeSealed(parked.sealed);
        const event = decodeEvent(parked.event);
        if (!sealed.ok || !event.ok) throw new Error('replica: a parked envelope no longer decodes');
        if (!receive(HLC_ZERO, event.value.body.hlc, now, maxSkew).ok) continue;
        yield tx.unpark(parked.outerId);
        const opened: Opened = { kind: 'event', sealed: sealed.value, bytes: parked.sealed, event: event.value };
        const outcome = yield* this.#admit(tx, peer, opened, parked.fill);
        outcomes.push(outcome);
        if (outcome.type === 'Applied') progress = true;
      }
    }
    return outcomes.filter((o) => o.type !== 'Parked');
  }

  /** Outer ids admission found held (logged, parked or refused), for `#openNew`. */
  #remember(outcomes: readonly IngestOutcome[]): void {
    for (const o of outcomes) {
      if (o.type === 'Withheld' || o.type === 'Deferred' || (o.type === 'Duplicate' && o.withheld)) {
        // Not what this machine withholds: a copy sent again once it may hold it must be opened.
        // Also one remembered while parked and withheld since (its retry met a narrower class).
        this.#held.delete(o.outerId);
        this.#heldBefore.delete(o.outerId);
        continue;
      }
      this.#held.add(o.outerId);
    }
    // Two generations, each up to half the bound: forgetting the older whole costs nothing per
    // id (deleting a Set's oldest entries one by one left it holes to walk on every trim).
    if (this.#held.size < MAX_REMEMBERED / 2) return;
    this.#heldBefore = this.#held;
    this.#held = new Set<string>();
  }

  /**
   * Opens the envelopes this machine does not hold yet. One that admission found held
   * here (logged, rejected or parked) is a duplicate without being decrypted or verified,
   * and without a store lookup: a peer that forwards a catch-up back to the machine it
   * came from, or a relay that delivers a batch twice, costs a set lookup per envelope.
   * One held from before this replica started is opened and found a duplicate by
   * admission, which checks everything again in its transaction.
   */
  async #openNew(envelopes: readonly Uint8Array[]): Promise<Opened[]> {
    const ids = envelopes.map((bytes) => {
      const sealed = decodeSealed(bytes);
      return sealed.ok ? envelopeId(sealed.value) : undefined;
    });
    const known = ids.map((id) => id !== undefined && (this.#held.has(id) || this.#heldBefore.has(id)));
    if (!known.includes(true)) return this.#openAll(envelopes);
    const opened = await this.#openAll(envelopes.filter((_, i) => !known[i]));
    let next = 0;
    return ids.map((id, i): Opened => (known[i] ? { kind: 'known', outerId: id! } : opened[next++]!));
  }

  /** Opens a batch, checks signatures run by run (chain-verify.ts), then the clock bound of each event. */
  async #openAll(envelopes: readonly Uint8Array[]): Promise<Opened[]> {
    const { opener, envelopes: port, verifier, clock } = this.#deps;
    const openings: Opening[] = opener
      ? await opener.open(envelopes)
      : await Promise.all(envelopes.map((bytes) => openEnvelope(bytes, (sealed) => port.open(sealed))));
    if (openings.length !== envelopes.length) throw new Error('replica: opener returned the wrong number of results');
    const good = await verifyChains(
      openings.map((o) => (o.kind === 'event' ? o.event : undefined)),
      verifier,
      openings.map((o) => (o.kind === 'event' ? o.names.eventId : '')),
    );
    const now = clock.now();
    const maxSkew = this.#deps.maxSkewMs ?? DEFAULT_MAX_SKEW_MS;
    return openings.map((o, i): Opened => {
      if (o.kind !== 'event') return o;
      const opened = { sealed: o.sealed, bytes: o.bytes, event: o.event, names: o.names };
      if (!good[i]) return { kind: 'rejected', outerId: o.names.outerId, error: { type: 'SignatureInvalid' } };
      const skew = receive(HLC_ZERO, o.event.body.hlc, now, maxSkew);
      return skew.ok ? { kind: 'event', ...opened } : { kind: 'skewed', opened, error: skew.error };
    });
  }

  rows(table: string) {
    return this.#deps.store.rows(table);
  }

  /**
   * Outer ids of withheld envelopes this machine may hold now (its classes or
   * trust widened since), at most `limit`, from the oldest WANT_SCAN records.
   */
  async wanted(limit: number): Promise<string[]> {
    const records = await this.#deps.store.withheld(WANT_SCAN);
    if (records.length === 0) return [];
    const { privacy } = this.#deps;
    return this.#deps.store.transact(async (tx) => {
      const ids: string[] = [];
      for (const record of records) {
        if (ids.length >= limit) break;
        if (await laneRefusal(tx, record.lane, privacy)) continue;
        if (record.table !== '') {
          const held = await privacy.classOf(tx, record.table);
          if (held === 'local' || (held === 'trusted' && !(await privacy.selfTrusted(tx)))) continue;
        }
        ids.push(record.outerId);
      }
      return ids;
    });
  }

  /** Number of log entries the peer has not acknowledged yet. */
  async pendingFor(peer: string): Promise<number> {
    const [last, cursor] = await Promise.all([this.#deps.store.lastPos(), this.#deps.store.cursor(peer)]);
    return Math.max(0, last - cursor);
  }
}

/** The envelopes, events and rows of a batch, for one bulk lookup before its admission. */
function lookupOf(opened: readonly Opened[]): Lookup {
  const outerIds: string[] = [];
  const rows: [string, string][] = [];
  for (const item of opened) {
    if (item.kind === 'event' || item.kind === 'skewed') {
      const event = item.kind === 'event' ? item : item.opened;
      outerIds.push(namesOf(event).outerId);
      rows.push([event.event.body.table, event.event.body.row]);
    } else outerIds.push(item.kind === 'opaque' ? envelopeId(item.sealed) : item.outerId);
  }
  return { outerIds, rows };
}

function bySignerAndSeq(parked: ParkedEnvelope[]): ParkedEnvelope[] {
  return [...parked].sort((a, b) => {
    const [x, y] = [a.signer ?? '', b.signer ?? ''];
    return x < y ? -1 : x > y ? 1 : (a.seq ?? 0) - (b.seq ?? 0);
  });
}
