/**
 * The blind sequencer (DESIGN §6, seed 003 "Coordination"): first commit wins
 * per (topic, group, epoch), decided from the MLS framing alone. The relay runs
 * it; it holds no group key and cannot read or validate a commit, only its
 * framing (core/mls/bundle.ts).
 *
 * Rules, for a bundle posted by an authenticated, admitted endpoint:
 *   - the commit must name its poster in its authenticated_data (PosterMismatch);
 *   - a group never seen accepts its first commit at any epoch;
 *   - afterwards only epoch = head + 1 is accepted (the commit made in the
 *     epoch the last accepted commit created);
 *   - an epoch already taken is refused with the winner (EpochTaken), so the
 *     loser processes it and retries on the new epoch; an epoch beyond the next
 *     is refused too (EpochAhead: the poster is ahead of what was sequenced),
 *     and one before the group's first sequenced epoch, which has no winner to
 *     hand back (EpochBehind: the poster is behind what this relay has seen).
 * Each accepted bundle is stored with its receipt (core/mls/receipt.ts), seq =
 * head.seq + 1, prev = head's hash. Uniqueness is the store's: `insert` refuses
 * a second row for one (topic, group, epoch) atomically, which is what a
 * multi-relay deployment's shared database enforces too.
 */
import { bytesEqual, toHex } from '../bytes.js';
import { blake3 } from '../hash.js';
import { err, ok, type Result } from '../result.js';
import { checkBundle } from './bundle.js';
import { signReceipt, type Receipt } from './receipt.js';

export type SequencedCommit = {
  readonly epoch: number;
  readonly seq: number;
  readonly receipt: Uint8Array;
  readonly bundle: Uint8Array;
};

/** Durable sequencer state; `insert` is atomic and refuses a taken (topic, group, epoch). */
export interface SequencerStore {
  head(topic: Uint8Array, group: Uint8Array): Promise<SequencedCommit | undefined>;
  at(topic: Uint8Array, group: Uint8Array, epoch: number): Promise<SequencedCommit | undefined>;
  /** Accepted commits with epoch ≥ `from`, ascending, at most `limit`. */
  since(topic: Uint8Array, group: Uint8Array, from: number, limit: number): Promise<SequencedCommit[]>;
  insert(topic: Uint8Array, group: Uint8Array, commit: SequencedCommit): Promise<boolean>;
}

export type SequencerRejection =
  | { readonly type: 'MalformedBundle'; readonly reason: string }
  | { readonly type: 'PosterMismatch'; readonly reason: string }
  /** Refused by the relay before sequencing: the poster is not a steward of the admission list. */
  | { readonly type: 'NotASteward'; readonly reason: string }
  | { readonly type: 'EpochTaken'; readonly epoch: number; readonly winner: SequencedCommit }
  | { readonly type: 'EpochAhead'; readonly epoch: number; readonly next: number }
  | { readonly type: 'EpochBehind'; readonly epoch: number; readonly first: number };

export type SequencerOptions = {
  readonly store: SequencerStore;
  /** The relay's Ed25519 secret key: the key endpoints pinned. */
  readonly secretKey: Uint8Array;
  readonly now: () => number;
};

export class BlindSequencer {
  readonly #opts: SequencerOptions;
  /** One submission at a time per group, so head-then-insert never interleaves within this relay. */
  readonly #queues = new Map<string, Promise<unknown>>();

  constructor(options: SequencerOptions) {
    this.#opts = options;
  }

  submit(topic: Uint8Array, poster: Uint8Array, bytes: Uint8Array): Promise<Result<Receipt, SequencerRejection>> {
    const checked = checkBundle(bytes);
    if (!checked.ok) return Promise.resolve(err(checked.error));
    const { group, epoch } = checked.value;
    if (!bytesEqual(checked.value.poster, poster)) {
      return Promise.resolve(err({ type: 'PosterMismatch', reason: 'sequencer: the commit names another endpoint' }));
    }
    const key = `${toHex(topic)}:${toHex(group)}`;
    const previous = this.#queues.get(key) ?? Promise.resolve();
    const run = previous.then(() => this.#sequence(topic, group, epoch, bytes));
    const settled = run.catch(() => undefined);
    this.#queues.set(key, settled);
    void settled.then(() => {
      if (this.#queues.get(key) === settled) this.#queues.delete(key);
    });
    return run;
  }

  async #sequence(
    topic: Uint8Array,
    group: Uint8Array,
    epoch: number,
    bytes: Uint8Array,
  ): Promise<Result<Receipt, SequencerRejection>> {
    const { store } = this.#opts;
    const head = await store.head(topic, group);
    if (head && epoch <= head.epoch) return this.#taken(topic, group, epoch);
    if (head && epoch > head.epoch + 1) return err({ type: 'EpochAhead', epoch, next: head.epoch + 1 });
    const prev = head ? blake3(head.receipt) : new Uint8Array();
    const receipt = signReceipt(
      { v: 1, topic, group, epoch, seq: (head?.seq ?? 0) + 1, bundle: blake3(bytes), prev, at: this.#opts.now() },
      this.#opts.secretKey,
    );
    const commit = { epoch, seq: receipt.body.seq, receipt: receipt.bytes, bundle: bytes };
    if (!(await store.insert(topic, group, commit))) return this.#taken(topic, group, epoch);
    return ok(receipt);
  }

  async #taken(topic: Uint8Array, group: Uint8Array, epoch: number): Promise<Result<never, SequencerRejection>> {
    const { store } = this.#opts;
    const winner = await store.at(topic, group, epoch);
    if (winner) return err({ type: 'EpochTaken', epoch, winner });
    // The group was first seen here at a later epoch: nothing was sequenced at this one.
    const [first] = await store.since(topic, group, 0, 1);
    if (first && epoch < first.epoch) return err({ type: 'EpochBehind', epoch, first: first.epoch });
    throw new Error('sequencer: an epoch at or below the head has no accepted commit');
  }
}

/** The in-memory store: tests, and the contract the SQLite store is held to. */
export class MemorySequencerStore implements SequencerStore {
  readonly #groups = new Map<string, SequencedCommit[]>();

  #list(topic: Uint8Array, group: Uint8Array): SequencedCommit[] {
    const key = `${toHex(topic)}:${toHex(group)}`;
    let list = this.#groups.get(key);
    if (!list) this.#groups.set(key, (list = []));
    return list;
  }

  head(topic: Uint8Array, group: Uint8Array): Promise<SequencedCommit | undefined> {
    return Promise.resolve(this.#list(topic, group).at(-1));
  }

  at(topic: Uint8Array, group: Uint8Array, epoch: number): Promise<SequencedCommit | undefined> {
    return Promise.resolve(this.#list(topic, group).find((c) => c.epoch === epoch));
  }

  since(topic: Uint8Array, group: Uint8Array, from: number, limit: number): Promise<SequencedCommit[]> {
    return Promise.resolve(
      this.#list(topic, group)
        .filter((c) => c.epoch >= from)
        .slice(0, limit),
    );
  }

  insert(topic: Uint8Array, group: Uint8Array, commit: SequencedCommit): Promise<boolean> {
    const list = this.#list(topic, group);
    if (list.some((c) => c.epoch === commit.epoch)) return Promise.resolve(false);
    list.push(commit);
    return Promise.resolve(true);
  }
}
