/**
 * The blind sequencer's acceptance suite, run against every SequencerStore
 * (memory, SQLite): first commit wins per (group, epoch), losers get the
 * winner, bundles are checked from framing alone, receipts chain.
 */
import { ed25519 } from '@noble/curves/ed25519.js';
import { describe, expect, it } from 'vitest';
import { bytesEqual } from '../../src/core/bytes.js';
import { commitAuthenticatedData, encodeBundle } from '../../src/core/mls/bundle.js';
import { verifyReceipt } from '../../src/core/mls/receipt.js';
import { BlindSequencer, type SequencerStore } from '../../src/core/mls/sequencer.js';
import { fakeBundle, privateMessage, welcomeMessage } from './mls-frames.js';

export const relaySecret = ed25519.utils.randomSecretKey();
export const relayKey = ed25519.getPublicKey(relaySecret);
export const topic = new Uint8Array(32).fill(1);
export const group = new Uint8Array(16).fill(2);
const alice = new Uint8Array(32).fill(0xa);
const bob = new Uint8Array(32).fill(0xb);

export function sequencerSuite(name: string, makeStore: () => SequencerStore): void {
  describe(`blind sequencer on ${name}`, () => {
    const sequencer = (store = makeStore()) => new BlindSequencer({ store, secretKey: relaySecret, now: () => 1000 });

    it('accepts the first commit of a group and then exactly the next epoch', async () => {
      const s = sequencer();
      const first = await s.submit(topic, alice, fakeBundle(group, 0, alice));
      expect(first.ok && first.value.body.seq).toBe(1);
      const second = await s.submit(topic, bob, fakeBundle(group, 1, bob));
      expect(second.ok && second.value.body.seq).toBe(2);
      if (!first.ok || !second.ok) throw new Error('unreachable');
      expect(bytesEqual(second.value.body.prev, first.value.hash)).toBe(true);
      const ahead = await s.submit(topic, alice, fakeBundle(group, 5, alice));
      expect(!ahead.ok && ahead.error).toMatchObject({ type: 'EpochAhead', epoch: 5, next: 2 });
    });

    it('refuses an epoch before the first it sequenced for a group, with that first epoch', async () => {
      const s = sequencer();
      expect((await s.submit(topic, alice, fakeBundle(group, 5, alice))).ok).toBe(true);
      const behind = await s.submit(topic, bob, fakeBundle(group, 3, bob));
      expect(!behind.ok && behind.error).toEqual({ type: 'EpochBehind', epoch: 3, first: 5 });
      // The group goes on from its head.
      expect((await s.submit(topic, bob, fakeBundle(group, 6, bob))).ok).toBe(true);
    });

    it('lets exactly one of two concurrent commits for one epoch win; the loser gets the winner', async () => {
      const s = sequencer();
      await s.submit(topic, alice, fakeBundle(group, 0, alice));
      const a = fakeBundle(group, 1, alice, 3);
      const b = fakeBundle(group, 1, bob, 4);
      const [ra, rb] = await Promise.all([s.submit(topic, alice, a), s.submit(topic, bob, b)]);
      expect([ra.ok, rb.ok].filter(Boolean)).toHaveLength(1);
      const loser = ra.ok ? rb : ra;
      const winnerBytes = ra.ok ? a : b;
      if (loser.ok || loser.error.type !== 'EpochTaken') throw new Error('the loser must be told the epoch is taken');
      expect(bytesEqual(loser.error.winner.bundle, winnerBytes)).toBe(true);
      expect(verifyReceipt(loser.error.winner.receipt, relayKey).ok).toBe(true);
      // The loser processes the winner and retries on the next epoch.
      const retry = await s.submit(topic, ra.ok ? bob : alice, fakeBundle(group, 2, ra.ok ? bob : alice));
      expect(retry.ok).toBe(true);
    });

    it('sequences groups and topics independently', async () => {
      const s = sequencer();
      const other = new Uint8Array(16).fill(7);
      expect((await s.submit(topic, alice, fakeBundle(group, 0, alice))).ok).toBe(true);
      expect((await s.submit(topic, alice, fakeBundle(other, 0, alice))).ok).toBe(true);
      expect((await s.submit(new Uint8Array(32).fill(9), alice, fakeBundle(group, 0, alice))).ok).toBe(true);
    });

    it('refuses bundles whose framing is wrong, before touching the store', async () => {
      const s = sequencer();
      const ad = commitAuthenticatedData(alice);
      const bad: [string, Uint8Array][] = [
        ['garbage', Uint8Array.of(1, 2, 3)],
        [
          'application as commit',
          encodeBundle({ commit: privateMessage(group, 0, 'application', ad), welcome: undefined, kek: undefined }),
        ],
        ['welcome as commit', encodeBundle({ commit: welcomeMessage(), welcome: undefined, kek: undefined })],
        [
          'no poster',
          encodeBundle({
            commit: privateMessage(group, 0, 'commit', new Uint8Array()),
            welcome: undefined,
            kek: undefined,
          }),
        ],
        [
          'kek of this epoch',
          encodeBundle({
            commit: privateMessage(group, 0, 'commit', ad),
            welcome: undefined,
            kek: privateMessage(group, 0, 'application', ad),
          }),
        ],
        [
          'kek of another group',
          encodeBundle({
            commit: privateMessage(group, 0, 'commit', ad),
            welcome: undefined,
            kek: privateMessage(new Uint8Array(4), 1, 'application', ad),
          }),
        ],
        [
          'welcome not a welcome',
          encodeBundle({
            commit: privateMessage(group, 0, 'commit', ad),
            welcome: privateMessage(group, 0, 'commit', ad),
            kek: undefined,
          }),
        ],
      ];
      for (const [what, bytes] of bad) {
        const r = await s.submit(topic, alice, bytes);
        expect(!r.ok && r.error.type, what).toBe('MalformedBundle');
      }
      const mismatch = await s.submit(topic, bob, fakeBundle(group, 0, alice));
      expect(!mismatch.ok && mismatch.error.type).toBe('PosterMismatch');
      expect((await s.submit(topic, alice, fakeBundle(group, 0, alice))).ok).toBe(true);
    });

    it('serves accepted commits from an epoch on, in order', async () => {
      const store = makeStore();
      const s = sequencer(store);
      for (let e = 0; e < 5; e++) await s.submit(topic, alice, fakeBundle(group, e, alice));
      const from2 = await store.since(topic, group, 2, 10);
      expect(from2.map((c) => c.epoch)).toEqual([2, 3, 4]);
      expect((await store.since(topic, group, 0, 2)).map((c) => c.seq)).toEqual([1, 2]);
    });
  });
}
