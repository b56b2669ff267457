/**
 * One machine's replica of the state plane: local writes, admission of events
 * from peers, and the log positions peers have acknowledged.
 *
 * Local write: under the write lock read clock and chain head, stamp, sign, seal,
 * then record in one transaction that re-checks the head (another tab may have
 * written meanwhile; then it retries). Incoming envelopes are opened and
 * verified outside the transaction (crypto is asynchronous), then admitted in one
 * transaction per batch, so a batch and its effects land together.
 */
import { fromHex, toHex } from './bytes.js';
import {
  decodeEvent,
  signEvent,
  verifyEvent,
  ZERO_HASH,
  type EventBody,
  type EventError,
  type SignedEvent,
} from './event.js';
import { DEFAULT_MAX_SKEW_MS, receive, tick, HLC_ZERO, type ClockSkewError } from './hlc.js';
import { admitEvent, recordEvent, type Admission } from './ingest.js';
import type { RowState } from './merge.js';
import type { Clock, Signer, Verifier } from './ports.js';
import { err, ok, type Result } from './result.js';
import { decodeSealed, encodeSealed, type SealedEvent, type SealError } from './seal.js';
import { tableSpec, type ColumnValue, type DomainName } from './schema.js';
import type { ReplicaStore } from './store.js';
import type { TrustPolicy } from './trust.js';

/** The sealing half of the crypto port: domain keys never leave its implementation. */
export interface EnvelopeCrypto {
  seal(domain: DomainName, signedEvent: Uint8Array): Promise<SealedEvent>;
  open(sealed: SealedEvent): Promise<Result<Uint8Array, SealError>>;
}

export type ReplicaDeps = {
  readonly store: ReplicaStore;
  readonly signer: Signer;
  readonly verifier: Verifier;
  readonly envelopes: EnvelopeCrypto;
  readonly trust: TrustPolicy;
  readonly clock: Clock;
  /** Serialises local writes across every context sharing the store. */
  readonly withWriteLock?: <T>(fn: () => Promise<T>) => Promise<T>;
  readonly maxSkewMs?: number;
};

export type Rejection =
  | SealError
  | EventError
  | ClockSkewError
  | Exclude<Admission, { type: 'Applied' } | { type: 'Duplicate' }>
  | { readonly type: 'DomainMismatch'; readonly envelope: DomainName; readonly event: DomainName };

export type IngestOutcome =
  | { readonly type: 'Applied'; readonly outerId: string; readonly body: EventBody }
  | { readonly type: 'StoredOpaque'; readonly outerId: string }
  | { readonly type: 'Duplicate'; readonly outerId: string }
  | { readonly type: 'Rejected'; readonly outerId: string | undefined; readonly error: Rejection };

export type WriteError =
  | { readonly type: 'UnknownTable'; readonly table: string }
  | { readonly type: 'NotAuthorized'; readonly signer: string; readonly table: string }
  | { readonly type: 'InvalidEdit'; readonly reason: string };

type Opened =
  | { readonly kind: 'event'; readonly sealed: SealedEvent; readonly bytes: Uint8Array; readonly event: SignedEvent }
  | { readonly kind: 'opaque'; readonly sealed: SealedEvent; readonly bytes: Uint8Array }
  | { readonly kind: 'rejected'; readonly outerId: string | undefined; readonly error: Rejection };

const MAX_WRITE_RETRIES = 8;

export class Replica {
  readonly #deps: ReplicaDeps;
  readonly #self: string;
  #localQueue: Promise<unknown> = Promise.resolve();

  constructor(deps: ReplicaDeps) {
    this.#deps = deps;
    this.#self = toHex(deps.signer.publicKey);
  }

  get self(): string {
    return this.#self;
  }

  /** Signs, seals and records one local edit; per-column LWW applies to it like any other event. */
  async write(
    table: string,
    row: string,
    cols: Record<string, ColumnValue>,
  ): Promise<Result<IngestOutcome, WriteError>> {
    const spec = tableSpec(table);
    if (!spec) return err({ type: 'UnknownTable', table });
    const run = () => this.#writeLocked(spec.domain, table, row, cols);
    const locked = this.#deps.withWriteLock ? () => this.#deps.withWriteLock!(run) : run;
    const result = this.#localQueue.then(locked, locked);
    this.#localQueue = result.catch(() => undefined);
    return result;
  }

  async #writeLocked(
    domain: DomainName,
    table: string,
    row: string,
    cols: Record<string, ColumnValue>,
  ): Promise<Result<IngestOutcome, WriteError>> {
    const { store, signer, envelopes, trust, clock } = this.#deps;
    for (let attempt = 0; attempt < MAX_WRITE_RETRIES; attempt++) {
      const before = await store.transact(async (tx) => ({
        hlc: (await tx.getHlc()) ?? HLC_ZERO,
        head: await tx.head(this.#self),
        role: await trust.roleOf(tx, this.#self),
      }));
      if (tableSpec(table)?.adminOnly && before.role !== 'admin') {
        return err({ type: 'NotAuthorized', signer: this.#self, table });
      }
      const body: EventBody = {
        v: 1,
        domain,
        signer: signer.publicKey,
        seq: (before.head?.seq ?? 0) + 1,
        prev: before.head ? fromHex(before.head.eventId)! : ZERO_HASH,
        table,
        row,
        op: 'put',
        cols,
        hlc: tick(before.hlc, clock.now()),
      };
      let event: SignedEvent;
      try {
        event = await signEvent(body, signer);
      } catch (e) {
        return err({ type: 'InvalidEdit', reason: (e as Error).message });
      }
      const sealed = await envelopes.seal(domain, event.bytes);
      const sealedBytes = encodeSealed(sealed);
      const recorded = await store.transact(async (tx) => {
        const head = await tx.head(this.#self);
        if ((head?.seq ?? 0) !== body.seq - 1) return false;
        await recordEvent(tx, sealed, sealedBytes, event);
        return true;
      });
      if (recorded) return ok({ type: 'Applied', outerId: toHex(sealed.id), body });
    }
    throw new Error('replica: local write kept racing another writer');
  }

  /** Opens, verifies and admits a batch of envelopes from a peer, in order, atomically. */
  async ingest(envelopes: readonly Uint8Array[]): Promise<IngestOutcome[]> {
    const opened: Opened[] = [];
    for (const bytes of envelopes) opened.push(await this.#open(bytes));
    return this.#deps.store.transact(async (tx) => {
      const outcomes: IngestOutcome[] = [];
      for (const item of opened) {
        if (item.kind === 'rejected') {
          outcomes.push({ type: 'Rejected', outerId: item.outerId, error: item.error });
          continue;
        }
        const outerId = toHex(item.sealed.id);
        if (item.kind === 'opaque') {
          if (await tx.hasOuterId(outerId)) outcomes.push({ type: 'Duplicate', outerId });
          else {
            await tx.append({ outerId, domain: item.sealed.domain, sealed: item.bytes });
            outcomes.push({ type: 'StoredOpaque', outerId });
          }
          continue;
        }
        const admission = await admitEvent(tx, item.sealed, item.bytes, item.event, this.#deps.trust);
        if (admission.type === 'Applied') outcomes.push({ type: 'Applied', outerId, body: admission.body });
        else if (admission.type === 'Duplicate') outcomes.push({ type: 'Duplicate', outerId });
        else outcomes.push({ type: 'Rejected', outerId, error: admission });
      }
      return outcomes;
    });
  }

  async #open(bytes: Uint8Array): Promise<Opened> {
    const sealed = decodeSealed(bytes);
    if (!sealed.ok) return { kind: 'rejected', outerId: undefined, error: sealed.error };
    const outerId = toHex(sealed.value.id);
    const plain = await this.#deps.envelopes.open(sealed.value);
    if (!plain.ok) {
      // Storage is not reading: an envelope of a domain this machine holds no key for is kept and forwarded.
      if (plain.error.type === 'DomainKeyMissing') return { kind: 'opaque', sealed: sealed.value, bytes };
      return { kind: 'rejected', outerId, error: plain.error };
    }
    const decoded = decodeEvent(plain.value);
    if (!decoded.ok) return { kind: 'rejected', outerId, error: decoded.error };
    const event = decoded.value;
    if (event.body.domain !== sealed.value.domain) {
      return {
        kind: 'rejected',
        outerId,
        error: { type: 'DomainMismatch', envelope: sealed.value.domain, event: event.body.domain },
      };
    }
    const verified = await verifyEvent(event, this.#deps.verifier);
    if (!verified.ok) return { kind: 'rejected', outerId, error: verified.error };
    const skew = receive(HLC_ZERO, event.body.hlc, this.#deps.clock.now(), this.#deps.maxSkewMs ?? DEFAULT_MAX_SKEW_MS);
    if (!skew.ok) return { kind: 'rejected', outerId, error: skew.error };
    return { kind: 'event', sealed: sealed.value, bytes, event };
  }

  rows(table: string): Promise<RowState[]> {
    return this.#deps.store.rows(table);
  }

  /** Number of log entries the peer has not acknowledged yet. */
  async pendingFor(peer: string): Promise<number> {
    const [last, cursor] = await Promise.all([this.#deps.store.lastPos(), this.#deps.store.cursor(peer)]);
    return Math.max(0, last - cursor);
  }
}
