/**
 * Authentication of the relay's signed HTTP APIs (wire format in core/relay-http.ts), shared
 * by the mailbox (http-mailbox.ts) and the blind object store (http-objects.ts), in order:
 *   timestamp               within ±CLOCK_WINDOW_MS of the relay clock      `stale`
 *   signature               strict Ed25519 over httpSigningPayload          `auth-failed`
 *   membership              endpoint authenticated over WS under the topic  `unknown-endpoint`
 *   rate                    token bucket per (topic, endpoint)              `rate-limited`
 *   nonce                   unseen for this endpoint within the window      `replayed`
 * Rate limiting counts verified requests only, so nobody can spend another endpoint's budget.
 * The signature comes before membership: a request that does not prove its endpoint key
 * learns nothing (401 for a member and a stranger alike); only the key's holder learns
 * whether that endpoint is admitted.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { ed25519 } from '@noble/curves/ed25519.js';
import { toHex } from '../core/bytes.js';
import {
  CBOR_CONTENT_TYPE,
  CLOCK_WINDOW_MS,
  httpSigningPayload,
  isFresh,
  type HttpAuth,
  type RelayHttpError,
  type RelayHttpErrorCode,
} from '../core/relay-http.js';
import { err, ok, type Result } from '../core/result.js';
import type { RelayHub } from './hub.js';
import { RateLimiter, type RateLimitOptions } from './rate-limit.js';
import { DEFAULT_REPLAY_GUARD, ReplayGuard, type ReplayGuardOptions } from './replay-guard.js';
import { exchangeOf } from './tap.js';

/** Endpoints whose rate buckets are kept; the least recently seen is forgotten first. */
const MAX_LIMITERS = 10_000;

export type HttpAuthOptions = {
  readonly hub: Pick<RelayHub, 'serves'>;
  readonly now: () => number;
  readonly rateLimit: RateLimitOptions;
  readonly replay?: ReplayGuardOptions | undefined;
};

const refusal = (code: RelayHttpErrorCode, reason: string): Result<never, RelayHttpError> =>
  err({ type: 'RelayHttpError', code, reason: `relay: ${reason}` });

function verify(auth: HttpAuth, method: string, path: string, body: Uint8Array): boolean {
  const payload = httpSigningPayload(method, path, auth.ts, auth.nonce, body, auth.topic, auth.endpoint);
  try {
    return ed25519.verify(auth.sig, payload, auth.endpoint, { zip215: false });
  } catch {
    return false;
  }
}

export class HttpAuthenticator {
  readonly #opts: HttpAuthOptions;
  readonly #replay: ReplayGuard;
  readonly #limiters = new Map<string, RateLimiter>();

  constructor(options: HttpAuthOptions) {
    this.#opts = options;
    this.#replay = new ReplayGuard(options.replay ?? DEFAULT_REPLAY_GUARD, options.now);
  }

  /** Accepts a request signed for `path` with this body, or says why not. */
  check(auth: HttpAuth, method: string, path: string, body: Uint8Array): Result<true, RelayHttpError> {
    const { now, hub } = this.#opts;
    if (!isFresh(auth.ts, now())) return refusal('stale', `timestamp outside ±${CLOCK_WINDOW_MS / 1000} s`);
    if (!verify(auth, method, path, body)) return refusal('auth-failed', 'signature does not verify');
    if (!hub.serves(auth.topic, auth.endpoint)) {
      return refusal('unknown-endpoint', 'endpoint is not a member admitted under this topic');
    }
    const key = `${toHex(auth.topic)}:${toHex(auth.endpoint)}`;
    if (this.#limiter(key).check() !== 'accept') return refusal('rate-limited', 'rate limit exceeded');
    const seen = this.#replay.admit(key, toHex(auth.nonce), auth.ts);
    if (seen === 'replayed') return refusal('replayed', 'nonce already used');
    if (seen === 'full') return refusal('rate-limited', 'too many requests in the freshness window');
    return ok(true);
  }

  #limiter(key: string): RateLimiter {
    let limiter = this.#limiters.get(key);
    if (limiter) this.#limiters.delete(key);
    else limiter = new RateLimiter(this.#opts.rateLimit, this.#opts.now);
    this.#limiters.set(key, limiter);
    if (this.#limiters.size > MAX_LIMITERS) this.#limiters.delete(this.#limiters.keys().next().value!);
    return limiter;
  }
}

/** Reads at most `max` bytes; refuses a larger declared or streamed body without buffering it. */
export function readBody(req: IncomingMessage, max: number): Promise<Result<Uint8Array, RelayHttpError>> {
  const tooLarge = refusal('frame-too-large', `request body exceeds ${max} bytes`);
  const declared = Number(req.headers['content-length'] ?? 0);
  if (!Number.isSafeInteger(declared) || declared > max) return Promise.resolve(tooLarge);
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let length = 0;
    const onData = (chunk: Buffer): void => {
      length += chunk.length;
      if (length <= max) return void chunks.push(chunk);
      req.off('data', onData);
      req.pause();
      resolve(tooLarge);
    };
    req.on('data', onData);
    req.once('end', () => {
      const body = new Uint8Array(Buffer.concat(chunks, length));
      exchangeOf(req)?.request(body);
      resolve(ok(body));
    });
    const aborted = (): void => resolve(refusal('malformed', 'request body aborted'));
    req.once('error', aborted);
    req.once('close', aborted);
  });
}

export function reply(res: ServerResponse, status: number, body: Uint8Array, extra: Record<string, string> = {}): void {
  const headers = {
    'Content-Type': CBOR_CONTENT_TYPE,
    'Content-Length': String(body.length),
    'Cache-Control': 'no-store',
    ...extra,
  };
  exchangeOf(res)?.response(status, headers, body);
  res.writeHead(status, headers);
  res.end(body);
}
