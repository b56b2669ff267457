/**
 * Replay protection for signed HTTP requests (core/relay-http.ts): remembers each
 * (endpoint, nonce) it accepted until the request's timestamp has left the freshness window,
 * after which the timestamp check alone refuses a replay.
 *
 * Bounded memory without weakening the guarantee: an entry is dropped only once it expired,
 * never to make room. When an endpoint holds `perEndpoint` live nonces, or the guard holds
 * `total`, new requests are refused (`full`) until entries expire — a client sending that
 * fast is over any sane rate anyway. The cache lives in memory: a relay restart forgets it, so
 * a request captured in the last window could be replayed once after a restart — harmless for
 * fetch and ack (idempotent), a duplicate frame for send (applied idempotently by peers).
 */
import { CLOCK_WINDOW_MS } from '../core/relay-http.js';

export interface ReplayGuardOptions {
  /** How long after its timestamp a request can still be fresh (the ± window). */
  readonly windowMs: number;
  readonly perEndpoint: number;
  readonly total: number;
}

export const DEFAULT_REPLAY_GUARD: ReplayGuardOptions = {
  windowMs: CLOCK_WINDOW_MS,
  perEndpoint: 4096,
  total: 200_000,
};

export type ReplayDecision = 'fresh' | 'replayed' | 'full';

export class ReplayGuard {
  readonly #opts: ReplayGuardOptions;
  readonly #now: () => number;
  /** endpoint key → nonce hex → expiry (ms). */
  readonly #seen = new Map<string, Map<string, number>>();
  #size = 0;
  /** No entry expires before this, so a full sweep earlier would free nothing. */
  #nextSweep = 0;

  constructor(options: ReplayGuardOptions, now: () => number) {
    this.#opts = options;
    this.#now = now;
  }

  get size(): number {
    return this.#size;
  }

  /** Records the nonce if it is new; call only for requests whose signature verified. */
  admit(endpoint: string, nonce: string, ts: number): ReplayDecision {
    const now = this.#now();
    const known = this.#seen.get(endpoint);
    if (known?.has(nonce)) return 'replayed';
    if (known && known.size >= this.#opts.perEndpoint) this.#prune(endpoint, known, now);
    if (this.#size >= this.#opts.total && now > this.#nextSweep) this.#sweep(now);
    const nonces = this.#seen.get(endpoint) ?? new Map<string, number>();
    if (nonces.size >= this.#opts.perEndpoint || this.#size >= this.#opts.total) return 'full';
    this.#seen.set(endpoint, nonces);
    nonces.set(nonce, Math.max(ts, now) + this.#opts.windowMs);
    this.#size += 1;
    return 'fresh';
  }

  /** Drops the expired nonces of one endpoint; returns the earliest expiry left. */
  #prune(endpoint: string, nonces: Map<string, number>, now: number): number {
    let earliest = Infinity;
    for (const [nonce, expiry] of nonces) {
      if (expiry >= now) {
        earliest = Math.min(earliest, expiry);
        continue;
      }
      nonces.delete(nonce);
      this.#size -= 1;
    }
    if (nonces.size === 0) this.#seen.delete(endpoint);
    return earliest;
  }

  #sweep(now: number): void {
    let earliest = Infinity;
    for (const [endpoint, nonces] of this.#seen) earliest = Math.min(earliest, this.#prune(endpoint, nonces, now));
    this.#nextSweep = earliest;
  }
}
