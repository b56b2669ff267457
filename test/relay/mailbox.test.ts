/**
 * One acceptance suite for every MailboxStore implementation (STYLE practice 2):
 * in-memory and SQLite run the same cases; SQLite additionally runs the reopen cases.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { MailboxLimits, MailboxStore } from '../../src/core/mailbox.js';
import { MemoryMailboxStore } from '../../src/relay/mailbox.js';
import { SqliteMailboxStore } from '../../src/storage/sqlite-mailbox.js';

interface Harness {
  readonly store: MailboxStore;
  /** Closes and reopens the same durable state (durable stores only). */
  readonly reopen: () => MailboxStore;
  readonly dispose: () => void;
}

type Factory = (limits?: MailboxLimits) => Harness;

const id = (n: number): Uint8Array => new Uint8Array(32).fill(n);
const T1 = id(1);
const T2 = id(2);
const ALICE = id(10);
const BOB = id(11);
const CAROL = id(12);
const body = (text: string): Uint8Array => new TextEncoder().encode(text);
const text = (bytes: Uint8Array): string => new TextDecoder().decode(bytes);

function mailboxStoreSuite(name: string, factory: Factory, durable: boolean): void {
  describe(`MailboxStore acceptance: ${name}`, () => {
    let h: Harness;
    let store: MailboxStore;
    beforeEach(() => {
      h = factory();
      store = h.store;
    });
    afterEach(() => h.dispose());

    it('enqueues with strictly increasing ids and lists pending frames in order', () => {
      const ids = ['a', 'b', 'c'].map((t) => store.enqueue(T1, BOB, ALICE, body(t)));
      const values = ids.map((r) => (r.ok ? r.value : -1));
      expect(values[0]).toBeGreaterThan(0);
      expect(values).toEqual([...values].sort((x, y) => x - y));
      expect(new Set(values).size).toBe(3);
      const pending = store.pending(T1, BOB, 0, 10);
      expect(pending.map((f) => text(f.body))).toEqual(['a', 'b', 'c']);
      expect(pending.map((f) => f.id)).toEqual(values);
      expect(pending.every((f) => f.sender.length === 32 && f.sender[0] === 10)).toBe(true);
    });

    it('pages with afterId and limit', () => {
      for (const t of ['a', 'b', 'c', 'd']) store.enqueue(T1, BOB, ALICE, body(t));
      const first = store.pending(T1, BOB, 0, 2);
      expect(first.map((f) => text(f.body))).toEqual(['a', 'b']);
      const rest = store.pending(T1, BOB, first[1]!.id, 10);
      expect(rest.map((f) => text(f.body))).toEqual(['c', 'd']);
    });

    it('keeps mailboxes apart by topic and by recipient', () => {
      store.enqueue(T1, BOB, ALICE, body('t1-bob'));
      store.enqueue(T2, BOB, ALICE, body('t2-bob'));
      store.enqueue(T1, CAROL, ALICE, body('t1-carol'));
      expect(store.pending(T1, BOB, 0, 10).map((f) => text(f.body))).toEqual(['t1-bob']);
      expect(store.pending(T2, BOB, 0, 10).map((f) => text(f.body))).toEqual(['t2-bob']);
      expect(store.pending(T1, CAROL, 0, 10).map((f) => text(f.body))).toEqual(['t1-carol']);
      expect(store.pending(T2, CAROL, 0, 10)).toEqual([]);
    });

    it('acks only the named frames of that exact mailbox', () => {
      const a = store.enqueue(T1, BOB, ALICE, body('a'));
      const b = store.enqueue(T1, BOB, ALICE, body('bb'));
      const other = store.enqueue(T2, BOB, ALICE, body('other'));
      if (!a.ok || !b.ok || !other.ok) throw new Error('enqueue failed');
      expect(store.ack(T1, CAROL, [a.value])).toBe(0);
      expect(store.ack(T1, BOB, [other.value])).toBe(0);
      expect(store.ack(T1, BOB, [a.value, a.value, 999_999])).toBe(1);
      expect(store.pending(T1, BOB, 0, 10).map((f) => text(f.body))).toEqual(['bb']);
      expect(store.countFor(T1, BOB)).toBe(1);
      expect(store.bytesFor(T1, BOB)).toBe(2);
      expect(store.countFor(T2, BOB)).toBe(1);
    });

    it('counts frames and bytes per mailbox', () => {
      expect(store.countFor(T1, BOB)).toBe(0);
      expect(store.bytesFor(T1, BOB)).toBe(0);
      store.enqueue(T1, BOB, ALICE, body('abc'));
      store.enqueue(T1, BOB, CAROL, new Uint8Array(0));
      expect(store.countFor(T1, BOB)).toBe(2);
      expect(store.bytesFor(T1, BOB)).toBe(3);
    });

    it('never reuses an id after the newest frame is acked', () => {
      const a = store.enqueue(T1, BOB, ALICE, body('a'));
      if (!a.ok) throw new Error('enqueue failed');
      store.ack(T1, BOB, [a.value]);
      const b = store.enqueue(T1, BOB, ALICE, body('b'));
      expect(b.ok && b.value > a.value).toBe(true);
    });

    it('remembers members per topic', () => {
      expect(store.isMember(T1, BOB)).toBe(false);
      store.noteMember(T1, BOB);
      store.noteMember(T1, BOB);
      expect(store.isMember(T1, BOB)).toBe(true);
      expect(store.isMember(T2, BOB)).toBe(false);
    });

    it('refuses malformed ids and pages as caller bugs', () => {
      expect(() => store.enqueue(new Uint8Array(31), BOB, ALICE, body('x'))).toThrow(/32 bytes/);
      expect(() => store.pending(T1, BOB, -1, 10)).toThrow(/afterId/);
      expect(() => store.pending(T1, BOB, 0, 0)).toThrow(/limit/);
    });

    it('returns MailboxFull at the frame bound and stores nothing', () => {
      const small = factory({ maxFrames: 2, maxBytes: 1000 });
      try {
        const s = small.store;
        expect(s.enqueue(T1, BOB, ALICE, body('1')).ok).toBe(true);
        expect(s.enqueue(T1, BOB, ALICE, body('2')).ok).toBe(true);
        const full = s.enqueue(T1, BOB, ALICE, body('3'));
        expect(full).toMatchObject({ ok: false, error: { type: 'MailboxFull', frames: 2 } });
        expect(s.countFor(T1, BOB)).toBe(2);
        expect(s.enqueue(T1, CAROL, ALICE, body('other mailbox')).ok).toBe(true);
        const first = s.pending(T1, BOB, 0, 1)[0]!;
        s.ack(T1, BOB, [first.id]);
        expect(s.enqueue(T1, BOB, ALICE, body('3')).ok).toBe(true);
      } finally {
        small.dispose();
      }
    });

    it('returns MailboxFull at the byte bound', () => {
      const small = factory({ maxFrames: 100, maxBytes: 10 });
      try {
        expect(small.store.enqueue(T1, BOB, ALICE, new Uint8Array(6)).ok).toBe(true);
        const full = small.store.enqueue(T1, BOB, ALICE, new Uint8Array(5));
        expect(full).toMatchObject({ ok: false, error: { type: 'MailboxFull', bytes: 6 } });
        expect(small.store.enqueue(T1, BOB, ALICE, new Uint8Array(4)).ok).toBe(true);
        expect(small.store.bytesFor(T1, BOB)).toBe(10);
      } finally {
        small.dispose();
      }
    });

    it('enqueues a batch as one: in order, each within the bounds, a full mailbox refused alone', () => {
      const small = factory({ maxFrames: 2, maxBytes: 1000 });
      try {
        const frame = (recipient: Uint8Array, t: string) => ({ topic: T1, recipient, sender: ALICE, body: body(t) });
        const results = small.store.enqueueAll([
          frame(BOB, 'b1'),
          frame(CAROL, 'c1'),
          frame(BOB, 'b2'),
          frame(BOB, 'b3 over the bound'),
          frame(CAROL, 'c2'),
        ]);
        expect(results.map((r) => r.ok)).toEqual([true, true, true, false, true]);
        expect(results[3]).toMatchObject({ ok: false, error: { type: 'MailboxFull', frames: 2 } });
        const ids = results.flatMap((r) => (r.ok ? [r.value] : []));
        expect(ids).toEqual([...ids].sort((x, y) => x - y));
        expect(small.store.pending(T1, BOB, 0, 10).map((f) => text(f.body))).toEqual(['b1', 'b2']);
        expect(small.store.pending(T1, CAROL, 0, 10).map((f) => text(f.body))).toEqual(['c1', 'c2']);
        expect(small.store.enqueueAll([])).toEqual([]);
        expect(() => small.store.enqueueAll([frame(new Uint8Array(31), 'x')])).toThrow(/32 bytes/);
        expect(small.store.countFor(T1, CAROL)).toBe(2);
      } finally {
        small.dispose();
      }
    });

    if (!durable) return;
    it('survives reopen with frames, counters, members and id order intact', () => {
      const a = store.enqueue(T1, BOB, ALICE, body('kept'));
      const b = store.enqueue(T1, BOB, ALICE, body('acked'));
      if (!a.ok || !b.ok) throw new Error('enqueue failed');
      store.ack(T1, BOB, [b.value]);
      store.noteMember(T1, BOB);
      const reopened = h.reopen();
      expect(reopened.pending(T1, BOB, 0, 10).map((f) => text(f.body))).toEqual(['kept']);
      expect(reopened.countFor(T1, BOB)).toBe(1);
      expect(reopened.bytesFor(T1, BOB)).toBe(4);
      expect(reopened.isMember(T1, BOB)).toBe(true);
      const c = reopened.enqueue(T1, BOB, ALICE, body('next'));
      expect(c.ok && c.value > b.value).toBe(true);
    });
  });
}

mailboxStoreSuite(
  'memory',
  (limits) => {
    const store = new MemoryMailboxStore(limits);
    const reopen = (): never => {
      throw new Error('memory store is not durable');
    };
    return { store, reopen, dispose: () => store.close() };
  },
  false,
);

mailboxStoreSuite(
  'sqlite',
  (limits) => {
    const dir = mkdtempSync(join(tmpdir(), 'sov-mailbox-'));
    let current: MailboxStore = SqliteMailboxStore.open(dir, limits);
    return {
      get store() {
        return current;
      },
      reopen: () => {
        current.close();
        current = SqliteMailboxStore.open(dir, limits);
        return current;
      },
      dispose: () => {
        current.close();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  },
  true,
);
