/**
 * Coalesced refreshes (src/runtime/coalesce.ts): a burst of requests costs at most two runs,
 * and every request is answered only by a run that started after it.
 */
import { describe, expect, it } from 'vitest';
import { Coalesced } from '../../src/runtime/coalesce.js';

/** A run that waits until the test releases it, recording when each run started. */
function gated() {
  const started: number[] = [];
  const releases: (() => void)[] = [];
  let version = 0;
  const run = () => {
    started.push(version);
    return new Promise<void>((resolve) => releases.push(resolve));
  };
  const release = async () => {
    releases.shift()?.();
    await new Promise((resolve) => setTimeout(resolve, 0));
  };
  return { run, started, release, bump: () => ++version };
}

describe('Coalesced', () => {
  it('runs once for a burst that arrives while a run is in flight, then once more', async () => {
    const g = gated();
    const c = new Coalesced(g.run);
    const first = c.request();
    await new Promise((resolve) => setTimeout(resolve, 0)); // the run starts
    g.bump();
    const burst = Array.from({ length: 100 }, () => c.request());
    expect(new Set(burst).size).toBe(1); // all share the one queued run
    expect(g.started).toEqual([0]);
    await g.release();
    await first;
    expect(g.started).toEqual([0, 1]); // the queued run saw the change made after the first began
    let settled = false;
    void burst[0]!.then(() => (settled = true));
    await new Promise((resolve) => setTimeout(resolve, 0));
    expect(settled).toBe(false);
    await g.release();
    await Promise.all(burst);
    expect(g.started).toHaveLength(2);
  });

  it('starts afresh when idle, and a failed run fails only its own callers', async () => {
    let calls = 0;
    const c = new Coalesced(async () => {
      calls++;
      if (calls === 1) throw new Error('boom');
    });
    const failing = c.request();
    const queued = c.request();
    await expect(failing).rejects.toThrow('boom');
    await expect(queued).resolves.toBeUndefined();
    await c.request();
    expect(calls).toBe(3);
  });
});
