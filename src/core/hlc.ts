/**
 * Hybrid logical clock (Kulkarni et al., "Logical Physical Clocks", 2014).
 *
 * A timestamp is (ms, counter, node): wall-clock milliseconds, a counter that
 * orders events within one millisecond, and the 32-byte signer id of the machine
 * that stamped it, which breaks every remaining tie. The order is total, so
 * last-writer-wins needs no coordinator.
 *
 * Invariants: `tick` and `receive` are strictly monotone for one machine, also
 * across restarts when the last value is persisted and handed back in; a remote
 * stamp more than `maxSkewMs` ahead of the local wall clock is refused with a
 * typed error rather than clamped, so one machine with a wrong clock cannot drag
 * every other clock into the future.
 */
import { compareBytes } from './bytes.js';
import { err, ok, type Result } from './result.js';

export type Hlc = { readonly ms: number; readonly counter: number };
export type Stamp = Hlc & { readonly node: Uint8Array };

export const HLC_ZERO: Hlc = { ms: 0, counter: 0 };
export const DEFAULT_MAX_SKEW_MS = 5 * 60 * 1000;
export const MAX_COUNTER = 0xffff_ffff;

export type ClockSkewError = {
  readonly type: 'ClockSkew';
  readonly remoteMs: number;
  readonly localMs: number;
  readonly maxSkewMs: number;
};

export function compareHlc(a: Hlc, b: Hlc): number {
  return a.ms !== b.ms ? a.ms - b.ms : a.counter - b.counter;
}

export function compareStamps(a: Stamp, b: Stamp): number {
  return compareHlc(a, b) || compareBytes(a.node, b.node);
}

/** The next local stamp after `last`, given wall-clock `now`. */
export function tick(last: Hlc, now: number): Hlc {
  if (now > last.ms) return { ms: now, counter: 0 };
  if (last.counter >= MAX_COUNTER) return { ms: last.ms + 1, counter: 0 };
  return { ms: last.ms, counter: last.counter + 1 };
}

/** Folds a remote stamp into the local clock, refusing one too far in the future. */
export function receive(
  last: Hlc,
  remote: Hlc,
  now: number,
  maxSkewMs = DEFAULT_MAX_SKEW_MS,
): Result<Hlc, ClockSkewError> {
  if (remote.ms > now + maxSkewMs) {
    return err({ type: 'ClockSkew', remoteMs: remote.ms, localMs: now, maxSkewMs });
  }
  return ok(compareHlc(remote, last) > 0 ? remote : last);
}

export function isHlc(value: unknown): value is Hlc {
  if (typeof value !== 'object' || value === null) return false;
  const { ms, counter } = value as Record<string, unknown>;
  return (
    Object.keys(value).length === 2 &&
    typeof ms === 'number' &&
    Number.isSafeInteger(ms) &&
    ms >= 0 &&
    typeof counter === 'number' &&
    Number.isSafeInteger(counter) &&
    counter >= 0 &&
    counter <= MAX_COUNTER
  );
}
