import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  compareHlc,
  compareStamps,
  DEFAULT_MAX_SKEW_MS,
  HLC_ZERO,
  isHlc,
  MAX_COUNTER,
  receive,
  tick,
  type Hlc,
} from '../../src/core/hlc.js';

const node = (byte: number): Uint8Array => new Uint8Array(32).fill(byte);
const NOW = 1_704_067_200_000;

describe('hlc ordering', () => {
  it('orders by ms, then counter, then node bytes', () => {
    expect(compareHlc({ ms: 1, counter: 9 }, { ms: 2, counter: 0 })).toBeLessThan(0);
    expect(compareHlc({ ms: 2, counter: 1 }, { ms: 2, counter: 0 })).toBeGreaterThan(0);
    expect(compareHlc({ ms: 2, counter: 1 }, { ms: 2, counter: 1 })).toBe(0);
    const a = { ms: 5, counter: 1, node: node(1) };
    const b = { ms: 5, counter: 1, node: node(2) };
    expect(compareStamps(a, b)).toBeLessThan(0);
    expect(compareStamps(b, a)).toBeGreaterThan(0);
    expect(compareStamps(a, { ...a, node: node(1) })).toBe(0);
  });

  it('is a total order on stamps (antisymmetric, transitive)', () => {
    const stamp = fc.record({
      ms: fc.integer({ min: 0, max: 5 }),
      counter: fc.integer({ min: 0, max: 3 }),
      node: fc.uint8Array({ minLength: 32, maxLength: 32 }).map((b) => b.map((x) => x % 3)),
    });
    fc.assert(
      fc.property(stamp, stamp, stamp, (a, b, c) => {
        expect(Math.sign(compareStamps(a, b))).toBe(-Math.sign(compareStamps(b, a)));
        if (compareStamps(a, b) <= 0 && compareStamps(b, c) <= 0) expect(compareStamps(a, c)).toBeLessThanOrEqual(0);
      }),
    );
  });
});

describe('hlc tick', () => {
  it('takes the wall clock when it moved forward, else counts', () => {
    expect(tick(HLC_ZERO, NOW)).toEqual({ ms: NOW, counter: 0 });
    expect(tick({ ms: NOW, counter: 0 }, NOW)).toEqual({ ms: NOW, counter: 1 });
    expect(tick({ ms: NOW, counter: 4 }, NOW - 1000)).toEqual({ ms: NOW, counter: 5 });
  });

  it('is strictly monotone for any sequence of wall-clock readings, including backwards jumps', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 2 ** 45 }), { minLength: 1, maxLength: 200 }), (nows) => {
        let last: Hlc = HLC_ZERO;
        for (const now of nows) {
          const next = tick(last, now);
          expect(compareHlc(next, last)).toBeGreaterThan(0);
          expect(next.ms).toBeGreaterThanOrEqual(now);
          expect(isHlc(next)).toBe(true);
          last = next;
        }
      }),
    );
  });

  it('carries into the next millisecond when the counter would overflow', () => {
    const full = { ms: NOW, counter: MAX_COUNTER };
    const next = tick(full, NOW);
    expect(next).toEqual({ ms: NOW + 1, counter: 0 });
    expect(compareHlc(next, full)).toBeGreaterThan(0);
    expect(isHlc({ ms: NOW, counter: MAX_COUNTER + 1 })).toBe(false);
  });
});

describe('hlc receive', () => {
  it('takes the maximum of local and remote', () => {
    const local = { ms: NOW, counter: 3 };
    expect(receive(local, { ms: NOW, counter: 7 }, NOW)).toEqual({ ok: true, value: { ms: NOW, counter: 7 } });
    expect(receive(local, { ms: NOW - 1, counter: 99 }, NOW)).toEqual({ ok: true, value: local });
    expect(receive(local, { ms: NOW + 1000, counter: 0 }, NOW)).toEqual({
      ok: true,
      value: { ms: NOW + 1000, counter: 0 },
    });
  });

  it('a tick after receive is above both clocks', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 2 ** 40 }),
        fc.integer({ min: 0, max: 100 }),
        fc.integer({ min: 0, max: 2 ** 40 }),
        fc.integer({ min: 0, max: 100 }),
        (lms, lc, rms, rc) => {
          const local = { ms: lms, counter: lc };
          const remote = { ms: rms, counter: rc };
          const merged = receive(local, remote, Math.max(lms, rms));
          expect(merged.ok).toBe(true);
          if (!merged.ok) return;
          const next = tick(merged.value, 0);
          expect(compareHlc(next, local)).toBeGreaterThan(0);
          expect(compareHlc(next, remote)).toBeGreaterThan(0);
        },
      ),
    );
  });

  it('refuses a remote stamp beyond the default 5 minute skew with a typed ClockSkew', () => {
    expect(DEFAULT_MAX_SKEW_MS).toBe(5 * 60 * 1000);
    const local = { ms: NOW, counter: 0 };
    expect(receive(local, { ms: NOW + DEFAULT_MAX_SKEW_MS, counter: 5 }, NOW).ok).toBe(true);
    expect(receive(local, { ms: NOW + DEFAULT_MAX_SKEW_MS + 1, counter: 0 }, NOW)).toEqual({
      ok: false,
      error: {
        type: 'ClockSkew',
        remoteMs: NOW + DEFAULT_MAX_SKEW_MS + 1,
        localMs: NOW,
        maxSkewMs: DEFAULT_MAX_SKEW_MS,
      },
    });
  });

  it('honours a configured skew bound', () => {
    const local = { ms: NOW, counter: 0 };
    expect(receive(local, { ms: NOW + 1001, counter: 0 }, NOW, 1000)).toMatchObject({
      ok: false,
      error: { type: 'ClockSkew', maxSkewMs: 1000 },
    });
    expect(receive(local, { ms: NOW + 1000, counter: 0 }, NOW, 1000).ok).toBe(true);
  });
});

describe('isHlc', () => {
  it.each([
    [{ ms: 0, counter: 0 }, true],
    [{ ms: 1, counter: MAX_COUNTER }, true],
    [{ ms: -1, counter: 0 }, false],
    [{ ms: 1.5, counter: 0 }, false],
    [{ ms: 1, counter: -1 }, false],
    [{ ms: '1', counter: 0 }, false],
    [{ ms: 2 ** 53, counter: 0 }, false],
    [null, false],
    [[1, 0], false],
  ])('isHlc(%j) is %s', (value, expected) => {
    expect(isHlc(value)).toBe(expected);
  });
});
