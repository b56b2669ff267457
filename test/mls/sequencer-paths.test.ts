/**
 * The blind sequencer's edges the acceptance suite leaves out: the exact
 * refusal of a commit naming another endpoint; one queue per (topic, group),
 * so a slow group never holds up another and a queued submission always waits
 * for the one before it; a taken epoch refused from the head alone, with no
 * write; a store that lost the winner of a taken epoch (a broken invariant,
 * thrown); and the memory store's own uniqueness of (topic, group, epoch).
 */
import { describe, expect, it } from 'vitest';
import { bytesEqual } from '../../src/core/bytes.js';
import {
  BlindSequencer,
  MemorySequencerStore,
  type SequencedCommit,
  type SequencerStore,
} from '../../src/core/mls/sequencer.js';
import { fakeBundle } from '../helpers/mls-frames.js';
import { group, relaySecret, topic } from '../helpers/sequencer-suite.js';

const alice = new Uint8Array(32).fill(0xa);
const bob = new Uint8Array(32).fill(0xb);

/** Lets every pending promise callback run. */
const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/**
 * A memory store that records the epochs it is asked to insert, and can hold
 * `head` for one group: the head is read at once but answered only on `release`.
 */
class HeldStore implements SequencerStore {
  readonly inner = new MemorySequencerStore();
  readonly inserted: number[] = [];
  held: Uint8Array | undefined;
  readonly #waiting: (() => void)[] = [];

  async head(t: Uint8Array, g: Uint8Array): Promise<SequencedCommit | undefined> {
    const head = await this.inner.head(t, g);
    if (this.held && bytesEqual(this.held, g)) await new Promise<void>((resolve) => this.#waiting.push(resolve));
    return head;
  }

  /** Answers the heads held so far. */
  release(): void {
    for (const resolve of this.#waiting.splice(0)) resolve();
  }

  at(t: Uint8Array, g: Uint8Array, epoch: number): Promise<SequencedCommit | undefined> {
    return this.inner.at(t, g, epoch);
  }

  since(t: Uint8Array, g: Uint8Array, from: number, limit: number): Promise<SequencedCommit[]> {
    return this.inner.since(t, g, from, limit);
  }

  insert(t: Uint8Array, g: Uint8Array, commit: SequencedCommit): Promise<boolean> {
    this.inserted.push(commit.epoch);
    return this.inner.insert(t, g, commit);
  }
}

const sequencer = (store: SequencerStore) => new BlindSequencer({ store, secretKey: relaySecret, now: () => 7 });

describe('blind sequencer edges', () => {
  it('refuses a commit that names another endpoint, saying so', async () => {
    const s = sequencer(new MemorySequencerStore());
    expect(await s.submit(topic, bob, fakeBundle(group, 0, alice))).toEqual({
      ok: false,
      error: { type: 'PosterMismatch', reason: 'sequencer: the commit names another endpoint' },
    });
  });

  it('never holds one group’s submission behind another group’s', async () => {
    const store = new HeldStore();
    const s = sequencer(store);
    store.held = group;
    const slow = s.submit(topic, alice, fakeBundle(group, 0, alice));
    let done = false;
    const other = s.submit(topic, alice, fakeBundle(new Uint8Array(16).fill(7), 0, alice)).then((r) => {
      done = true;
      return r;
    });
    await settle();
    expect(done).toBe(true);
    expect((await other).ok).toBe(true);
    store.release();
    expect((await slow).ok).toBe(true);
  });

  it('keeps a group’s queue while a submission is still running, so the next waits for it', async () => {
    const store = new HeldStore();
    const s = sequencer(store);
    store.held = group;
    const first = s.submit(topic, alice, fakeBundle(group, 0, alice));
    const second = s.submit(topic, alice, fakeBundle(group, 1, alice));
    await settle();
    store.release();
    expect((await first).ok).toBe(true);
    await settle();
    // The second is running now, its head held; a third must still queue behind it.
    const third = s.submit(topic, alice, fakeBundle(group, 2, alice));
    await settle();
    store.held = undefined;
    store.release();
    const [r2, r3] = [await second, await third];
    expect(r2.ok && r2.value.body.seq).toBe(2);
    expect(r3.ok && r3.value.body.seq).toBe(3);
    expect(store.inserted).toEqual([0, 1, 2]);
  });

  it('refuses an epoch at or below the head from the head alone, writing nothing', async () => {
    const store = new HeldStore();
    const s = sequencer(store);
    for (const epoch of [0, 1]) expect((await s.submit(topic, alice, fakeBundle(group, epoch, alice))).ok).toBe(true);
    for (const epoch of [1, 0]) {
      const r = await s.submit(topic, bob, fakeBundle(group, epoch, bob, 9));
      expect(!r.ok && r.error.type === 'EpochTaken' && [r.error.epoch, r.error.winner.epoch]).toEqual([epoch, epoch]);
    }
    expect(store.inserted).toEqual([0, 1]);
  });

  it('throws when the store has no winner for an epoch its head covers: a broken invariant', async () => {
    const inner = new MemorySequencerStore();
    const forgetful: SequencerStore = {
      head: (t, g) => inner.head(t, g),
      at: () => Promise.resolve(undefined),
      since: (t, g, from, limit) => inner.since(t, g, from, limit),
      insert: (t, g, commit) => inner.insert(t, g, commit),
    };
    const s = sequencer(forgetful);
    expect((await s.submit(topic, alice, fakeBundle(group, 0, alice))).ok).toBe(true);
    await expect(s.submit(topic, bob, fakeBundle(group, 0, bob, 2))).rejects.toThrow(
      'sequencer: an epoch at or below the head has no accepted commit',
    );
  });
});

describe('memory sequencer store', () => {
  it('refuses a second commit for one (topic, group, epoch) and keeps the first', async () => {
    const store = new MemorySequencerStore();
    const commit = (epoch: number, seq: number): SequencedCommit => ({
      epoch,
      seq,
      receipt: Uint8Array.of(seq),
      bundle: Uint8Array.of(epoch, seq),
    });
    expect(await store.insert(topic, group, commit(3, 1))).toBe(true);
    expect(await store.insert(topic, group, commit(3, 2))).toBe(false);
    expect(await store.insert(topic, group, commit(4, 2))).toBe(true);
    expect((await store.at(topic, group, 3))?.seq).toBe(1);
    expect((await store.since(topic, group, 0, 10)).map((c) => [c.epoch, c.seq])).toEqual([
      [3, 1],
      [4, 2],
    ]);
    expect((await store.head(topic, group))?.epoch).toBe(4);
  });
});
