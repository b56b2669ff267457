/** The HTTP nonce cache with a hand-moved clock: replay refused, memory bounded, never unsound. */
import { describe, expect, it } from 'vitest';
import { ReplayGuard } from '../../src/relay/replay-guard.js';

const WINDOW = 1000;

function guard(perEndpoint = 3, total = 5) {
  const clock = { t: 10_000 };
  return { clock, g: new ReplayGuard({ windowMs: WINDOW, perEndpoint, total }, () => clock.t) };
}

describe('ReplayGuard', () => {
  it('refuses a nonce seen from the same endpoint, not from another', () => {
    const { g, clock } = guard();
    expect(g.admit('e1', 'n1', clock.t)).toBe('fresh');
    expect(g.admit('e1', 'n1', clock.t)).toBe('replayed');
    expect(g.admit('e2', 'n1', clock.t)).toBe('fresh');
  });

  it('keeps a nonce until its timestamp has left the window, even one from the future', () => {
    const { g, clock } = guard(1, 10);
    expect(g.admit('e', 'n', clock.t + WINDOW)).toBe('fresh');
    clock.t += 2 * WINDOW;
    expect(g.admit('e', 'n', clock.t - WINDOW)).toBe('replayed');
    clock.t += 1;
    expect(g.admit('e', 'other', clock.t)).toBe('fresh');
    expect(g.size).toBe(1);
  });

  it('is full per endpoint while its nonces are live, and frees them as they expire', () => {
    const { g, clock } = guard(3, 100);
    for (const n of ['a', 'b', 'c']) expect(g.admit('e', n, clock.t)).toBe('fresh');
    expect(g.admit('e', 'd', clock.t)).toBe('full');
    expect(g.admit('other', 'd', clock.t)).toBe('fresh');
    clock.t += WINDOW + 1;
    expect(g.admit('e', 'd', clock.t)).toBe('fresh');
    expect(g.admit('e', 'a', clock.t)).toBe('fresh');
  });

  it('is full in total while every nonce is live, never evicting one early', () => {
    const { g, clock } = guard(10, 4);
    for (const e of ['e1', 'e2', 'e3', 'e4']) expect(g.admit(e, 'n', clock.t)).toBe('fresh');
    expect(g.admit('e5', 'n', clock.t)).toBe('full');
    for (const e of ['e1', 'e2', 'e3', 'e4']) expect(g.admit(e, 'n', clock.t)).toBe('replayed');
    clock.t += WINDOW + 1;
    expect(g.admit('e5', 'n', clock.t)).toBe('fresh');
    expect(g.size).toBe(1);
  });
});
