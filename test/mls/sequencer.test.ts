/**
 * The blind sequencer and its receipts: first commit wins per (group, epoch),
 * losers get the winner, bundles are checked from framing alone, receipts are
 * signed and chained, and a relay that signs two commits for one epoch is
 * caught from the receipts alone.
 */
import { ed25519 } from '@noble/curves/ed25519.js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { concat, toHex } from '../../src/core/bytes.js';
import { blake3 } from '../../src/core/hash.js';
import { signReceipt, verifyReceipt } from '../../src/core/mls/receipt.js';
import { ReceiptLog } from '../../src/core/mls/receipt-log.js';
import { MemorySequencerStore } from '../../src/core/mls/sequencer.js';
import { SqliteSequencerStore } from '../../src/storage/sqlite-sequencer.js';
import { group, relayKey, relaySecret, sequencerSuite, topic } from '../helpers/sequencer-suite.js';

const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

sequencerSuite('the memory store', () => new MemorySequencerStore());
sequencerSuite('SQLite', () => {
  const dir = mkdtempSync(join(tmpdir(), 'sov-seq-'));
  dirs.push(dir);
  return SqliteSequencerStore.open(dir);
});

describe('SQLite sequencer store', () => {
  it('keeps accepted commits across a reopen, so a restarted relay never re-sells an epoch', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sov-seq-'));
    dirs.push(dir);
    const first = SqliteSequencerStore.open(dir);
    const commit = { epoch: 3, seq: 1, receipt: Uint8Array.of(1), bundle: Uint8Array.of(2) };
    expect(await first.insert(topic, group, commit)).toBe(true);
    first.close();
    const again = SqliteSequencerStore.open(dir);
    expect(await again.insert(topic, group, { ...commit, seq: 2 })).toBe(false);
    expect((await again.head(topic, group))?.epoch).toBe(3);
    again.close();
  });
});

describe('receipts', () => {
  const body = (epoch: number, seq: number, bundleByte: number, prev: Uint8Array = new Uint8Array()) => ({
    v: 1 as const,
    topic,
    group,
    epoch,
    seq,
    bundle: new Uint8Array(32).fill(bundleByte),
    prev,
    at: 5,
  });

  it('verify only under the pinned key and refuse tampering', () => {
    const r = signReceipt(body(0, 1, 1), relaySecret);
    expect(verifyReceipt(r.bytes, relayKey).ok).toBe(true);
    expect(verifyReceipt(r.bytes, ed25519.getPublicKey(ed25519.utils.randomSecretKey())).ok).toBe(false);
    for (let i = 0; i < r.bytes.length; i += 7) {
      const tampered = r.bytes.slice();
      tampered[i]! ^= 1;
      expect(verifyReceipt(tampered, relayKey).ok, `byte ${i}`).toBe(false);
    }
    expect(verifyReceipt(r.bytes.subarray(0, r.bytes.length - 1), relayKey).ok).toBe(false);
  });

  it('catch a relay that signs two different commits for one epoch', () => {
    const first = signReceipt(body(0, 1, 1), relaySecret);
    const second = signReceipt(body(1, 2, 2, first.hash), relaySecret);
    const fork = signReceipt(body(1, 2, 3, first.hash), relaySecret);
    const mine = new ReceiptLog(relayKey);
    expect(mine.observe(first.bytes).ok).toBe(true);
    expect(mine.observe(second.bytes).ok).toBe(true);
    // A peer gossips the head it was given: the fork.
    const verdict = mine.observe(fork.bytes);
    expect(!verdict.ok && verdict.error).toMatchObject({ type: 'ConflictingReceipts', kind: 'epoch', epoch: 1 });
    expect(mine.misbehaviour()).toHaveLength(1);
    expect(toHex(mine.head(group)!.hash)).toBe(toHex(second.hash));
  });

  it('catch a receipt that does not link to its predecessor', () => {
    const first = signReceipt(body(0, 1, 1), relaySecret);
    const unlinked = signReceipt(body(1, 2, 2, blake3(concat(first.bytes, Uint8Array.of(0)))), relaySecret);
    const log = new ReceiptLog(relayKey);
    log.observe(unlinked.bytes);
    const verdict = log.observe(first.bytes);
    expect(!verdict.ok && verdict.error.type).toBe('BrokenReceiptChain');
  });

  it('catch a receipt that does not link to the one before it, and keep the pair as proof', () => {
    const first = signReceipt(body(0, 1, 1), relaySecret);
    const unlinked = signReceipt(body(1, 2, 2, blake3(Uint8Array.of(1))), relaySecret);
    const log = new ReceiptLog(relayKey);
    expect(log.observe(first.bytes).ok).toBe(true);
    const verdict = log.observe(unlinked.bytes);
    expect(!verdict.ok && verdict.error).toEqual({
      type: 'BrokenReceiptChain',
      group: toHex(group),
      seq: 2,
      first: first.bytes,
      second: unlinked.bytes,
    });
    expect(log.misbehaviour()).toEqual([!verdict.ok && verdict.error]);
    // A receipt two ahead is no one's successor: nothing to check it against yet.
    const gap = signReceipt(body(2, 3, 3, blake3(Uint8Array.of(2))), relaySecret);
    expect(log.observe(gap.bytes).ok).toBe(true);
  });

  it('give the newest receipt of each group, and every receipt to restore the log from', () => {
    const other = new Uint8Array(group.length).fill(0xee);
    const a1 = signReceipt(body(0, 1, 1), relaySecret);
    const a2 = signReceipt(body(1, 2, 2, a1.hash), relaySecret);
    const b1 = signReceipt({ ...body(0, 1, 3), group: other }, relaySecret);
    const log = new ReceiptLog(relayKey);
    expect(log.head(group)).toBeUndefined();
    expect(log.heads()).toEqual([]);
    for (const r of [a2, b1, a1]) expect(log.observe(r.bytes).ok).toBe(true);
    expect(toHex(log.head(group)!.hash)).toBe(toHex(a2.hash));
    expect(
      log
        .heads()
        .map((r) => toHex(r.hash))
        .sort(),
    ).toEqual([toHex(a2.hash), toHex(b1.hash)].sort());
    const all = log.all();
    expect(all.map(toHex).sort()).toEqual([a1, a2, b1].map((r) => toHex(r.bytes)).sort());
    const restored = new ReceiptLog(relayKey);
    for (const bytes of all) restored.observe(bytes);
    expect(
      restored
        .heads()
        .map((r) => toHex(r.hash))
        .sort(),
    ).toEqual(
      log
        .heads()
        .map((r) => toHex(r.hash))
        .sort(),
    );
  });

  it('accept the same receipt twice (gossip repeats) without a proof', () => {
    const first = signReceipt(body(0, 1, 1), relaySecret);
    const log = new ReceiptLog(relayKey);
    expect(log.observe(first.bytes).ok).toBe(true);
    expect(log.observe(first.bytes).ok).toBe(true);
    expect(log.misbehaviour()).toHaveLength(0);
  });
});
