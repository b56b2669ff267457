/**
 * Consecutive `events` messages of one peer are taken in as one only when together they
 * cover one unbroken range of its log: a joined message must never claim a gap applied.
 */
import { describe, expect, it } from 'vitest';
import { continuesEvents, joinEvents, MAX_JOINED_EVENTS } from '../../src/core/sync.js';

const ev = (after: number, upto: number, n = upto - after) => ({
  t: 'events' as const,
  after,
  upto,
  events: Array.from({ length: n }, (_, i) => Uint8Array.of(after + i + 1)),
});

describe('joining events messages', () => {
  it.each([
    ['adjacent', ev(0, 10), ev(10, 20), true],
    ['overlapping', ev(0, 10), ev(5, 20), true],
    ['the later one inside the first', ev(0, 20), ev(5, 10), true],
    ['an older resend ending where the run starts', ev(10, 20), ev(0, 10), true],
    ['a gap after the run', ev(0, 10), ev(11, 20), false],
    ['an older resend with a gap before the run', ev(10, 20), ev(0, 5), false],
  ] as const)('%s: joined %s', (_name, run, next, joins) => {
    expect(continuesEvents(run, next)).toBe(joins);
  });

  it('joins to the outer range and keeps every envelope, in order', () => {
    const joined = joinEvents(ev(10, 20), ev(0, 10));
    expect([joined.after, joined.upto]).toEqual([0, 20]);
    expect(joined.events.map((e) => e[0])).toEqual([...ev(10, 20).events, ...ev(0, 10).events].map((e) => e[0]));
  });

  it('never joins beyond what one ingest takes', () => {
    expect(continuesEvents(ev(0, MAX_JOINED_EVENTS), ev(MAX_JOINED_EVENTS, MAX_JOINED_EVENTS + 1))).toBe(false);
    expect(continuesEvents(ev(0, MAX_JOINED_EVENTS - 1), ev(MAX_JOINED_EVENTS - 1, MAX_JOINED_EVENTS))).toBe(true);
  });
});
