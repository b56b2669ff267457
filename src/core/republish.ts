/**
 * Rows written while they could not be published are sealed under the key generation
 * current when they leave the machine, not the one current when they were written
 * (issue 24). A machine that wrote a created domain's rows offline while the domain was
 * rotated — a machine removed from it, say — would otherwise publish them under the old
 * generation, which the removed machine still holds.
 *
 * Publication is counted by position: the sender marks how far into its log it has handed
 * frames to the transport (sync.ts marks `PUBLISHED` before each send), so an own entry
 * past the mark has never left the machine. When the generations this machine holds moved
 * on, each own entry past the mark sealed under an older generation of its domain is
 * issued again: the same row, columns and stamp, signed into the current generation's
 * chain and sealed under it. The original is withdrawn in the same transaction — marked
 * revoked on its own machine, which never offers its own revoked entries (sync.ts) — and,
 * never published, leaves no gap in any chain a peer holds. Rows do not change: the new
 * event writes the same cells with the same stamps, which per-column last-writer-wins
 * takes as no change.
 *
 * The mark over-approximates in one case: an own trusted-lane entry passed over in a frame
 * to a peer that may not hold it counts as published. It then goes out later under the
 * generation it was sealed with, as before this rule (docs/protocol.md).
 */
import { fromHex } from './bytes.js';
import { chainKey } from './chains.js';
import { eventIdOf, signEvent, ZERO_HASH, type EventBody } from './event.js';
import type { LocalWriteDeps } from './local-writes.js';
import { recordEvent } from './materialize.js';
import { encodeSealed, type SealedEvent } from './seal.js';
import { isBuiltInDomain, isDomainName, type DomainName } from './schema.js';
import type { ChainHead, LogEntry } from './store.js';

/** The cursor name (store.ts `cursor`) of how far this machine's log has been handed to the transport. */
export const PUBLISHED = 'published';

/** Log entries read per page while looking for stale ones. */
const SCAN_PAGE = 1024;

export type Reissue = {
  /** Log position of the withdrawn original. */
  readonly pos: number;
  readonly outerId: string;
  readonly domain: DomainName;
  readonly from: number;
  readonly to: number;
};

/** The current generation of each created domain this machine holds a key of. */
async function currentGenerations(deps: LocalWriteDeps): Promise<Map<DomainName, number>> {
  const gens = new Map<DomainName, number>();
  for (const { row } of await deps.store.rows('domains')) {
    if (!isDomainName(row) || isBuiltInDomain(row)) continue;
    const gen = await deps.envelopes.generation(row);
    if (gen !== undefined) gens.set(row, gen);
  }
  return gens;
}

/** Own entries past the publication mark sealed under an older generation than the current one. */
async function staleEntries(deps: LocalWriteDeps, self: string, gens: ReadonlyMap<DomainName, number>) {
  const stale: LogEntry[] = [];
  for (let after = await deps.store.cursor(PUBLISHED); ;) {
    const page = await deps.store.entriesAfter(after, SCAN_PAGE);
    if (page.length === 0) return stale;
    for (const entry of page) {
      const body = entry.body;
      if (entry.signer !== self || entry.revoked || !body || body.gen === undefined || body.lane === 'local') continue;
      const current = gens.get(body.domain);
      if (current !== undefined && current > body.gen) stale.push(entry);
    }
    after = page.at(-1)!.pos;
  }
}

/** What one pass signed, for the recording transaction. */
type Signed = {
  readonly original: LogEntry;
  readonly sealed: SealedEvent;
  readonly event: Awaited<ReturnType<typeof signEvent>>;
};

export class Republisher {
  readonly #deps: LocalWriteDeps;
  readonly #self: string;
  /** The generations the last pass found nothing stale under; a pass under the same ones is skipped. */
  #checked: string | undefined;

  constructor(deps: LocalWriteDeps, self: string) {
    this.#deps = deps;
    this.#self = self;
  }

  /**
   * Issues again, under the current generation, the own entries that were never published
   * and are sealed under an older one. Run under the replica's apply lock, before offering.
   * Cheap when the held generations did not change since the last pass found nothing.
   */
  async run(): Promise<Reissue[]> {
    const deps = this.#deps;
    // A removed machine's rows are revoked everywhere past its marks: nothing to move.
    if ((await deps.store.row('keyring', this.#self))?.removed !== undefined) return [];
    const gens = await currentGenerations(deps);
    const key = JSON.stringify([...gens].sort());
    if (key === this.#checked) return [];
    const stale = await staleEntries(deps, this.#self, gens);
    if (stale.length > 0) await this.#reissue(stale, gens);
    this.#checked = key;
    return stale.map((e) => ({
      pos: e.pos,
      outerId: e.outerId,
      domain: e.body!.domain,
      from: e.body!.gen!,
      to: gens.get(e.body!.domain)!,
    }));
  }

  async #reissue(stale: readonly LogEntry[], gens: ReadonlyMap<DomainName, number>): Promise<void> {
    const { store, signer, envelopes, trust, clock } = this.#deps;
    const chainOf = (body: EventBody) => chainKey(this.#self, body.lane, body.domain, gens.get(body.domain));
    // Heads of the chains the entries move into, read once; the recording transaction checks they held.
    const heads = await store.transact(async (tx) => {
      const found = new Map<string, ChainHead | undefined>();
      for (const { body } of stale) {
        const chain = chainOf(body!);
        if (!found.has(chain)) found.set(chain, await tx.head(chain));
      }
      return found;
    });
    const tips = new Map(heads);
    const signed: Signed[] = [];
    for (const original of stale) {
      const old = original.body!;
      const gen = gens.get(old.domain)!;
      const chain = chainOf(old);
      const tip = tips.get(chain);
      const body: EventBody = { ...old, gen, seq: (tip?.seq ?? 0) + 1, prev: tip ? fromHex(tip.eventId)! : ZERO_HASH };
      const event = await signEvent(body, signer);
      tips.set(chain, { seq: body.seq, eventId: eventIdOf(event) });
      signed.push({ original, event, sealed: await envelopes.seal(old.domain, event.bytes, old.lane, gen) });
    }
    const recorded = await store.transact(async (tx) => {
      for (const [chain, head] of heads) if ((await tx.head(chain))?.seq !== head?.seq) return false;
      for (const { original, sealed, event } of signed) {
        await tx.setRevoked(original.pos, true);
        await recordEvent(tx, { sealed, bytes: encodeSealed(sealed), event }, false, trust, clock.now());
      }
      return true;
    });
    // Only this machine writes its chains, and it does so under the same lock.
    if (!recorded) throw new Error('republish: a chain moved while its rows were issued again');
  }
}
