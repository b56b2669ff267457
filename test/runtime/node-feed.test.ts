/**
 * What a machine tells its UI (src/runtime/node-feed.ts): a burst of publish requests
 * while a snapshot builds costs two builds, not one each; every request resolves after a
 * build that started after it; a build that hangs holds the queue only until the watchdog;
 * a late, older build never replaces a newer one; notices keep the newest thirty.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { NodeFeed } from '../../src/runtime/node-feed.js';
import type { NodeSnapshot, Notice } from '../../src/runtime/node-snapshot.js';

/** Builds that finish when the test says so; each snapshot is its build number. */
function builds() {
  const pending: ((s: NodeSnapshot) => void)[] = [];
  let n = 0;
  return {
    build: () => {
      const number = ++n;
      return new Promise<NodeSnapshot>((resolve) => pending.push(() => resolve({ dataVersion: number } as never)));
    },
    finish: (i: number) => pending[i]!({} as never),
    get started() {
      return n;
    },
  };
}

describe('node feed', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it('coalesces a burst of requests into the build running and one more', async () => {
    const b = builds();
    const feed = new NodeFeed(b.build);
    const seen: number[] = [];
    feed.subscribe((s) => seen.push(s.dataVersion));
    await vi.advanceTimersByTimeAsync(0);
    expect(b.started).toBe(1);
    const requests = Array.from({ length: 50 }, () => feed.publish());
    await vi.advanceTimersByTimeAsync(0);
    expect(b.started).toBe(1);
    b.finish(0);
    await vi.advanceTimersByTimeAsync(0);
    expect(b.started).toBe(2);
    let resolved = false;
    void Promise.all(requests).then(() => (resolved = true));
    await vi.advanceTimersByTimeAsync(0);
    expect(resolved).toBe(false);
    b.finish(1);
    await vi.advanceTimersByTimeAsync(0);
    expect(resolved).toBe(true);
    expect(seen).toEqual([1, 2]);
  });

  it('lets the next build start when one hangs, and drops the hung one if it finishes late', async () => {
    const b = builds();
    const feed = new NodeFeed(b.build, 3000);
    const seen: number[] = [];
    feed.subscribe((s) => seen.push(s.dataVersion));
    await vi.advanceTimersByTimeAsync(0);
    const second = feed.publish();
    await vi.advanceTimersByTimeAsync(2999);
    expect(b.started).toBe(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(b.started).toBe(2);
    b.finish(1);
    await second;
    b.finish(0);
    await vi.advanceTimersByTimeAsync(0);
    expect(seen).toEqual([2]);
  });

  it('builds nothing without subscribers, and counts a failed build instead of throwing', async () => {
    let calls = 0;
    const feed = new NodeFeed(async () => {
      calls++;
      throw new Error('store closed');
    });
    await feed.publish();
    expect(calls).toBe(0);
    feed.subscribe(() => undefined);
    feed.publishSoon();
    await vi.advanceTimersByTimeAsync(0);
    expect(feed.counts['SnapshotFailed']).toBeGreaterThanOrEqual(1);
  });

  it('still delivers new notices on the last snapshot when the store can no longer be read', async () => {
    let broken = false;
    const notices: { current: readonly Notice[] } = { current: [] };
    const feed: NodeFeed = new NodeFeed(async () => {
      if (broken) throw new Error('store closed');
      return { notices: [...notices.current], name: 'a' } as unknown as NodeSnapshot;
    });
    const seen: NodeSnapshot[] = [];
    feed.subscribe((s) => seen.push(s));
    await vi.advanceTimersByTimeAsync(0);
    expect(seen).toHaveLength(1);
    broken = true;
    feed.notice('warning', 'the disk is full');
    await expect(feed.publish()).rejects.toThrow('store closed');
    expect(seen).toHaveLength(2);
    expect(seen[1]!.name).toBe('a');
    expect(seen[1]!.notices.map((n) => n.text)).toEqual(['the disk is full']);
  });

  it('tells row listeners at once with a growing version, and keeps the newest thirty notices', () => {
    const feed = new NodeFeed(async () => ({}) as never);
    const versions: number[] = [];
    const stop = feed.onRowsChanged((v) => versions.push(v));
    feed.rowsChanged();
    feed.rowsChanged();
    stop();
    feed.rowsChanged();
    expect(versions).toEqual([1, 2]);
    expect(feed.dataVersion).toBe(3);
    for (let i = 0; i < 40; i++) feed.notice('info', `n${i}`);
    expect(feed.notices).toHaveLength(30);
    expect(feed.notices[0]!.text).toBe('n39');
    expect(feed.notices.at(-1)!.text).toBe('n10');
  });
});
