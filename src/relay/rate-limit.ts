/**
 * Per-connection message rate limiting for the relay: a token bucket for messages, and a
 * second, slower bucket that counts dropped messages so sustained abuse ends the
 * connection while a short burst over the limit only costs the excess messages.
 *
 * Time comes from an injected clock (milliseconds) so tests can pin it.
 */

export interface RateLimitOptions {
  /** Sustained messages per second a connection may send. */
  readonly perSecond: number;
  /** Messages a connection may send at once after being idle. */
  readonly burst: number;
  /**
   * Dropped messages tolerated before the connection is closed. The allowance refills at a
   * tenth of `perSecond`, so a client that keeps sending faster than the limit is cut off.
   */
  readonly closeAfterDrops: number;
}

export const DEFAULT_RATE_LIMIT: RateLimitOptions = { perSecond: 200, burst: 400, closeAfterDrops: 400 };

export type RateDecision = 'accept' | 'drop' | 'close';

class TokenBucket {
  readonly #capacity: number;
  readonly #perMs: number;
  readonly #now: () => number;
  #tokens: number;
  #last: number;

  constructor(capacity: number, perMs: number, now: () => number) {
    this.#capacity = capacity;
    this.#perMs = perMs;
    this.#now = now;
    this.#tokens = capacity;
    this.#last = now();
  }

  take(): boolean {
    const t = this.#now();
    const elapsed = Math.max(0, t - this.#last);
    this.#last = t;
    this.#tokens = Math.min(this.#capacity, this.#tokens + elapsed * this.#perMs);
    if (this.#tokens < 1) return false;
    this.#tokens -= 1;
    return true;
  }
}

export class RateLimiter {
  readonly #messages: TokenBucket;
  readonly #drops: TokenBucket;

  constructor(options: RateLimitOptions, now: () => number) {
    const positive = (n: number): boolean => Number.isFinite(n) && n > 0;
    if (!positive(options.perSecond) || !positive(options.burst) || !positive(options.closeAfterDrops)) {
      throw new RangeError('relay: rate limit values must be positive');
    }
    this.#messages = new TokenBucket(options.burst, options.perSecond / 1000, now);
    this.#drops = new TokenBucket(options.closeAfterDrops, options.perSecond / 10_000, now);
  }

  /** Call once per incoming message. */
  check(): RateDecision {
    if (this.#messages.take()) return 'accept';
    return this.#drops.take() ? 'drop' : 'close';
  }
}
