/**
 * A replica's local writes (replica.ts delegates to this): under the apply lock read the
 * clock, chain head and the writer's verdict, stamp, sign, seal, then record in one
 * transaction that re-checks the head (another context may have written meanwhile; then
 * it draws again).
 *
 * Group commit: writes queued while others are recorded go together — one read
 * transaction, each signed and sealed in order, one recording transaction — so a burst of
 * edits costs two store transactions, not two per edit. Writes to CONTROL go alone: one
 * may change who may write what (roles, keyring, manifest), which the next must see.
 */
import { fromHex } from './bytes.js';
import { chainKey, chainSuffix, formatDomainMarks } from './chains.js';
import { eventIdOf, signEvent, ZERO_HASH, type EventBody, type EventOp, type SignedEvent } from './event.js';
import { HLC_ZERO, tick } from './hlc.js';
import { recordEvent } from './materialize.js';
import type { Clock, Signer } from './ports.js';
import type { PrivacyPolicy } from './sync-manifest.js';
import { err, ok, type Result } from './result.js';
import { encodeSealed, envelopeId, type SealedEvent, type SealLane } from './seal.js';
import { domainOf, isBuiltInDomain, isDomainName, tableSpec, type ColumnValue, type DomainName } from './schema.js';
import type { ChainHead, ReplicaStore, Resurrection } from './store.js';
import { authorize, type TrustContext, type Verdict } from './trust.js';

export const MAX_WRITE_RETRIES = 8;
/** Most local writes recorded together (`#pumpWrites`). */
export const MAX_WRITE_BATCH = 256;

type QueuedWrite = {
  readonly op: EventOp;
  readonly table: string;
  readonly row: string;
  readonly cols: Record<string, ColumnValue>;
  readonly domain: DomainName;
  readonly resolve: (result: Result<WriteOutcome, WriteError>) => void;
  readonly reject: (e: unknown) => void;
};

/** The next writes to record together: one CONTROL write alone, else the data writes in a row. */
function takeWriteBatch(queue: QueuedWrite[]): QueuedWrite[] {
  if (queue[0]!.domain === 'CONTROL') return queue.splice(0, 1);
  let n = 1;
  while (n < queue.length && n < MAX_WRITE_BATCH && queue[n]!.domain !== 'CONTROL') n++;
  return queue.splice(0, n);
}

export type WriteError =
  | { readonly type: 'UnknownTable'; readonly table: string }
  | { readonly type: 'NotAuthorized'; readonly table: string; readonly reason: string }
  | { readonly type: 'Removed'; readonly signer: string }
  | { readonly type: 'InvalidEdit'; readonly reason: string };

export type WriteOutcome = { readonly outerId: string; readonly resurrections: readonly Resurrection[] };

/** What local writes need of the replica's ports (a `ReplicaDeps` is one). */
export type LocalWriteDeps = {
  readonly store: ReplicaStore;
  readonly signer: Signer;
  readonly envelopes: {
    seal(domain: DomainName, signedEvent: Uint8Array, lane?: SealLane, gen?: number): Promise<SealedEvent>;
    generation(domain: DomainName): Promise<number | undefined>;
  };
  readonly trust: TrustContext;
  readonly privacy: PrivacyPolicy;
  readonly clock: Clock;
};

export class LocalWrites {
  readonly #deps: LocalWriteDeps;
  readonly #self: string;
  /** Runs a batch alone (the replica's queue and cross-context lock). */
  readonly #exclusive: <T>(fn: () => Promise<T>) => Promise<T>;
  /** Writes waiting to be recorded, and whether they are being taken (`#pumpWrites`). */
  readonly #queue: QueuedWrite[] = [];
  #pumping = false;

  constructor(deps: LocalWriteDeps, self: string, exclusive: <T>(fn: () => Promise<T>) => Promise<T>) {
    this.#deps = deps;
    this.#self = self;
    this.#exclusive = exclusive;
  }

  /** Signs, seals and records a put of some columns; per-column LWW applies to it like any other event. */
  write(table: string, row: string, cols: Record<string, ColumnValue>): Promise<Result<WriteOutcome, WriteError>> {
    return this.#enqueue('put', table, row, cols);
  }

  /** Tombstones a row; a later edit (higher HLC) resurrects it. */
  delete(table: string, row: string): Promise<Result<WriteOutcome, WriteError>> {
    return this.#enqueue('del', table, row, {});
  }

  /**
   * Removes a machine from the keyring for good. The high-water marks are the
   * last sequence numbers of the removed signer this replica holds, one per lane
   * that crosses the wire: its events up to there stay, everything later is
   * revoked on every replica.
   */
  async remove(signer: string): Promise<Result<WriteOutcome, WriteError>> {
    const created: { domain: DomainName; gens: (number | undefined)[] }[] = [];
    for (const { row: domain } of await this.#deps.store.rows('domains')) {
      if (!isDomainName(domain)) continue;
      // Its chains: the one of events naming no generation, and one per generation up to the newest held.
      const newest = (await this.#deps.envelopes.generation(domain)) ?? 0;
      created.push({ domain, gens: [undefined, ...Array.from({ length: newest }, (_, i) => i + 1)] });
    }
    const marks = await this.#deps.store.transact(async (tx) => {
      const open = await tx.head(chainKey(signer, 'public'));
      const trusted = await tx.head(chainKey(signer, 'trusted'));
      // Created domains: the heads this replica holds (it holds none for a domain it cannot read).
      const domains: Record<string, number> = {};
      for (const { domain, gens } of created) {
        for (const gen of gens) {
          for (const lane of ['public', 'trusted'] as const) {
            const head = await tx.head(chainKey(signer, lane, domain, gen));
            if (head) domains[chainSuffix(lane, domain, gen)] = head.seq;
          }
        }
      }
      return { hwm: open?.seq ?? 0, trusted_hwm: trusted?.seq ?? 0, domains };
    });
    const { hwm, trusted_hwm, domains } = marks;
    const domain_hwms = formatDomainMarks(domains);
    return this.#enqueue('remove', 'keyring', signer, { hwm, trusted_hwm, ...(domain_hwms ? { domain_hwms } : {}) });
  }

  #enqueue(op: EventOp, table: string, row: string, cols: Record<string, ColumnValue>) {
    if (!tableSpec(table)) return Promise.resolve(err({ type: 'UnknownTable' as const, table }));
    const domain = domainOf(table, row);
    if (!domain) {
      return Promise.resolve(err({ type: 'InvalidEdit' as const, reason: `row ${row} names no data domain` }));
    }
    return new Promise<Result<WriteOutcome, WriteError>>((resolve, reject) => {
      this.#queue.push({ op, table, row, cols, domain, resolve, reject });
      this.#pumpWrites();
    });
  }

  /**
   * Group commit: local writes queued while others are recorded go together — one read
   * transaction, each signed and sealed in order, one recording transaction — so a burst
   * of edits costs two store transactions, not two per edit. Writes to CONTROL go alone:
   * one may change who may write what (roles, keyring, manifest), which the next must see.
   */
  #pumpWrites(): void {
    if (this.#pumping) return;
    this.#pumping = true;
    void (async () => {
      while (this.#queue.length > 0) {
        const batch = takeWriteBatch(this.#queue);
        try {
          const results = await this.#exclusive(() => this.#writeBatchLocked(batch));
          batch.forEach((w, i) => w.resolve(results[i]!));
        } catch (e) {
          for (const w of batch) w.reject(e);
        }
      }
      this.#pumping = false;
    })();
  }

  async #writeBatchLocked(batch: readonly QueuedWrite[]): Promise<Result<WriteOutcome, WriteError>[]> {
    const { store, signer, envelopes, trust, privacy, clock } = this.#deps;
    // A created domain's events name the generation they are sealed under: each is its own chain.
    const gens = new Map<DomainName, number | undefined>();
    for (const w of batch) {
      if (!isBuiltInDomain(w.domain) && !gens.has(w.domain)) gens.set(w.domain, await envelopes.generation(w.domain));
    }
    for (let attempt = 0; attempt < MAX_WRITE_RETRIES; attempt++) {
      const prepared = await store.transact(async (tx) => {
        const removed = (await tx.getRow('keyring', this.#self))?.removed !== undefined;
        const heads = new Map<string, ChainHead | undefined>();
        let hlc = (await tx.getHlc()) ?? HLC_ZERO;
        const drafts: { readonly chain: string; readonly body: EventBody; readonly verdict: Verdict }[] = [];
        for (const w of batch) {
          // The class this machine holds for the table now picks the lane, for good.
          const lane = await privacy.classOf(tx, w.table);
          const gen = gens.get(w.domain);
          const chain = chainKey(this.#self, lane, w.domain, gen);
          if (!heads.has(chain)) heads.set(chain, await tx.head(chain));
          hlc = tick(hlc, clock.now());
          const body: EventBody = {
            v: 1,
            domain: w.domain,
            signer: signer.publicKey,
            // The place in the chain is settled once signing starts (`seq` matters to `authorize`
            // only for a removed signer, and this one is not, or nothing is written).
            seq: 0,
            prev: ZERO_HASH,
            table: w.table,
            row: w.row,
            op: w.op,
            cols: w.cols,
            hlc,
            ...(lane === 'public' ? {} : { lane }),
            ...(gen === undefined ? {} : { gen }),
          };
          drafts.push({ chain, body, verdict: await authorize(tx, body, trust) });
        }
        return { removed, heads, drafts };
      });
      if (prepared.removed) return batch.map(() => err({ type: 'Removed', signer: this.#self }));
      const tips = new Map([...prepared.heads].map(([chain, head]) => [chain, head] as const));
      const results: Result<WriteOutcome, WriteError>[] = [];
      const signed: { readonly index: number; readonly event: SignedEvent; readonly sealed: SealedEvent }[] = [];
      for (const [index, { chain, body: draft, verdict }] of prepared.drafts.entries()) {
        if (verdict.type === 'Revoked') results.push(err({ type: 'Removed', signer: this.#self }));
        else if (verdict.type === 'NotAuthorized') {
          results.push(err({ type: 'NotAuthorized', table: draft.table, reason: verdict.reason }));
        } else {
          const tip = tips.get(chain);
          const body: EventBody = { ...draft, seq: (tip?.seq ?? 0) + 1, prev: tip ? fromHex(tip.eventId)! : ZERO_HASH };
          let event: SignedEvent;
          try {
            event = await signEvent(body, signer);
          } catch (e) {
            results.push(err({ type: 'InvalidEdit', reason: (e as Error).message }));
            continue;
          }
          tips.set(chain, { seq: body.seq, eventId: eventIdOf(event) });
          signed.push({ index, event, sealed: await envelopes.seal(draft.domain, event.bytes, body.lane, body.gen) });
          results.push(err({ type: 'InvalidEdit', reason: 'replica: not recorded' }));
        }
      }
      const recorded = await store.transact(async (tx) => {
        // Another writer of this signer's chains (another tab) got in first: draw again.
        for (const [chain, head] of prepared.heads) if ((await tx.head(chain))?.seq !== head?.seq) return undefined;
        const out: (readonly Resurrection[])[] = [];
        for (const { sealed, event } of signed) {
          const done = await recordEvent(tx, { sealed, bytes: encodeSealed(sealed), event }, false, trust, clock.now());
          out.push(done.resurrections);
        }
        return out;
      });
      if (!recorded) continue;
      for (const [i, { index, sealed }] of signed.entries()) {
        results[index] = ok({ outerId: envelopeId(sealed), resurrections: recorded[i]! });
      }
      return results;
    }
    throw new Error('replica: local write kept racing another writer');
  }
}
