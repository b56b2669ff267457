/**
 * End-to-end frames between machines (DESIGN §3): the format, and every check
 * that can be made before a byte is decrypted.
 *
 *   frame   = cbor([header bytes, ct])
 *   header  = cbor({v: 2, topic: 32B, from: 32B, to: 32B, kid: 32B, enc: 32B, rid: 16B, ts: ms})
 *   ct      = nonce(12) ‖ AES-256-GCM(K, pad(PeerMessage), aad = "sov/1/frame" ‖ header bytes)
 *   pad     = padding.ts: the message, 0x80, zeros to its Padmé size class (capped so a
 *             message that fits MAX_FRAME_BYTES unpadded still fits), so a frame's size
 *             leaks O(log log n) bits of the message's length instead of all of it.
 *             Version 1 frames (unpadded, earlier releases) are still opened; `v` is
 *             authenticated, so nobody on the path can turn one kind into the other.
 *   K       = HPKE(mode_auth, DHKEM(X25519, HKDF-SHA256), HKDF-SHA256, AES-256-GCM)
 *             with pkR = the recipient's frame key, skS = the sender's (`kid`),
 *             info = "sov/1/frame" ‖ topic, then Export("sov/1/frame-key", 32)
 *
 * `from`/`to` are endpoint ids (the keys the relay authenticates); `kid` is the
 * sender's X25519 frame key, which the keyring binds to its endpoint, and `enc`
 * the HPKE encapsulation the sender reuses for a while (runtime/frame-channel.ts
 * rotates it), so a frame costs one AES-GCM and a new `enc` one key agreement.
 * Auth mode means only the holder of `kid`'s private key can have made `enc`;
 * the header is authenticated as associated data, so nothing in it can be
 * changed or re-addressed. The relay sees the header (routing and timing it
 * already knows) and never the message.
 *
 * `rid` is a random request id and `ts` the sender's clock: a receiver refuses
 * a frame from outside the time window or whose rid it has already accepted.
 * Store-and-forward means an ordinary frame may legitimately be days old, so the
 * window is wide for delivery and narrow for pairing requests. The relay sees `ts`, so it is
 * the sender's clock rounded down to the minute (`frameTime`): all the windows need, and no
 * longer the sender's clock to the millisecond (issue 26).
 */
import { bytesEqual, isBytes, toHex } from './bytes.js';
import { decodeCbor, encodeCbor, isRecord } from './cbor.js';
import { err, ok, type Result } from './result.js';

export const FRAME_LABEL = 'sov/1/frame';
export const FRAME_KEY_LABEL = 'sov/1/frame-key';
export const MAX_FRAME_BYTES = 1024 * 1024;
/** Delivery frames: a week offline plus slack; older ones are refused and simply re-offered. */
export const MAX_FRAME_AGE_MS = 14 * 24 * 60 * 60 * 1000;
/** Pairing requests (join-request and its answers) must be fresh. */
export const MAX_REQUEST_AGE_MS = 10 * 60 * 1000;
/** How far ahead of our clock a sender's may run. */
export const MAX_FRAME_SKEW_MS = 5 * 60 * 1000;
/** A header's `ts` is a multiple of this: the windows above are minutes to days wide. */
export const FRAME_TIME_STEP_MS = 60 * 1000;

/** The `ts` a frame sealed at `now` carries: the time rounded down to the minute. */
export function frameTime(now: number): number {
  return Math.floor(now / FRAME_TIME_STEP_MS) * FRAME_TIME_STEP_MS;
}

/** The version this release writes: a padded message. */
export const FRAME_VERSION = 2;
/** The most a padded message may grow to: room is left for the header, nonce, tag and CBOR. */
export const MAX_PADDED_MESSAGE = MAX_FRAME_BYTES - 1024;

export type FrameHeader = {
  /** 2: the message inside is padded; 1: an earlier release's unpadded frame. */
  readonly v: 1 | 2;
  readonly topic: Uint8Array;
  readonly from: Uint8Array;
  readonly to: Uint8Array;
  readonly kid: Uint8Array;
  readonly enc: Uint8Array;
  readonly rid: Uint8Array;
  readonly ts: number;
};

export type DecodedFrame = {
  readonly header: FrameHeader;
  readonly headerBytes: Uint8Array;
  readonly ct: Uint8Array;
};

/**
 * Why a frame was refused before anything in it was imported; each is counted
 * and shown in diagnostics.
 */
export type FrameRejection =
  | { readonly type: 'MalformedFrame'; readonly reason: string }
  | { readonly type: 'WrongGroup' }
  | { readonly type: 'Misaddressed' }
  | { readonly type: 'SenderMismatch' }
  | { readonly type: 'UnknownEndpoint' }
  | { readonly type: 'BindingMismatch'; readonly reason: string }
  | { readonly type: 'StaleRequest'; readonly ageMs: number }
  | { readonly type: 'ReplayedRequest' }
  | { readonly type: 'FrameUndecryptable' };

export type FrameRejectionType = FrameRejection['type'];

const malformed = (reason: string): Result<never, FrameRejection> => err({ type: 'MalformedFrame', reason });

export function encodeHeader(header: FrameHeader): Uint8Array {
  return encodeCbor(header);
}

export function encodeFrame(headerBytes: Uint8Array, ct: Uint8Array): Uint8Array {
  return encodeCbor([headerBytes, ct]);
}

/** Associated data of the AES-GCM layer: the label and the exact header bytes. */
export function frameAad(headerBytes: Uint8Array): Uint8Array {
  const label = new TextEncoder().encode(FRAME_LABEL);
  const aad = new Uint8Array(label.length + headerBytes.length);
  aad.set(label);
  aad.set(headerBytes, label.length);
  return aad;
}

function decodeHeader(bytes: Uint8Array): Result<FrameHeader, FrameRejection> {
  const decoded = decodeCbor(bytes, 512);
  if (!decoded.ok) return malformed(decoded.error.reason);
  const h = decoded.value;
  if (!isRecord(h) || Object.keys(h).sort().join(',') !== 'enc,from,kid,rid,to,topic,ts,v') {
    return malformed('header fields');
  }
  const { v, topic, from, to, kid, enc, rid, ts } = h;
  if (v !== 1 && v !== 2) return malformed(`header version ${typeof v === 'number' ? v : typeof v}`);
  if (!isBytes(topic, 32) || !isBytes(from, 32) || !isBytes(to, 32) || !isBytes(kid, 32) || !isBytes(enc, 32)) {
    return malformed('header sizes');
  }
  if (!isBytes(rid, 16) || typeof ts !== 'number' || !Number.isSafeInteger(ts) || ts < 0) {
    return malformed('header rid or ts');
  }
  return ok({ v, topic, from, to, kid, enc, rid, ts });
}

/** Splits a frame into its header and ciphertext; nothing is decrypted. */
export function decodeFrame(body: Uint8Array): Result<DecodedFrame, FrameRejection> {
  if (body.length > MAX_FRAME_BYTES) return malformed(`${body.length} bytes exceeds ${MAX_FRAME_BYTES}`);
  const outer = decodeCbor(body, MAX_FRAME_BYTES);
  if (!outer.ok) return malformed(outer.error.reason);
  const pair = outer.value;
  if (!Array.isArray(pair) || pair.length !== 2 || !isBytes(pair[0]) || !isBytes(pair[1])) {
    return malformed('not a [header, ciphertext] pair');
  }
  const [headerBytes, ct] = pair as [Uint8Array, Uint8Array];
  if (ct.length < 12 + 16) return malformed('ciphertext shorter than nonce and tag');
  const header = decodeHeader(headerBytes);
  if (!header.ok) return header;
  return ok({ header: header.value, headerBytes, ct });
}

export type FrameContext = {
  /** Our group's topic and our endpoint id. */
  readonly topic: Uint8Array;
  readonly self: Uint8Array;
  /** The sender the relay authenticated and delivered the frame from. */
  readonly relayFrom: Uint8Array;
  readonly now: number;
  readonly maxAgeMs: number;
};

/** Addressing and freshness, checked from the header alone. */
export function checkHeader(header: FrameHeader, ctx: FrameContext): Result<FrameHeader, FrameRejection> {
  if (!bytesEqual(header.topic, ctx.topic)) return err({ type: 'WrongGroup' });
  if (!bytesEqual(header.to, ctx.self)) return err({ type: 'Misaddressed' });
  if (!bytesEqual(header.from, ctx.relayFrom)) return err({ type: 'SenderMismatch' });
  const age = ctx.now - header.ts;
  if (age > ctx.maxAgeMs || age < -MAX_FRAME_SKEW_MS) return err({ type: 'StaleRequest', ageMs: age });
  return ok(header);
}

/**
 * Request ids accepted recently, each until it ages out of the widest window
 * (after which its frame would be refused as stale anyway). Bounded: beyond
 * `capacity` the oldest are forgotten, which only re-admits frames that are
 * idempotent to apply twice.
 */
export class ReplayGuard {
  readonly #seen = new Map<string, number>();

  constructor(
    private readonly capacity = 200_000,
    private readonly retainMs = MAX_FRAME_AGE_MS + MAX_FRAME_SKEW_MS,
  ) {}

  has(rid: Uint8Array): boolean {
    return this.#seen.has(toHex(rid));
  }

  /** Records an accepted request id; false if it was already there. */
  remember(rid: Uint8Array, ts: number, now: number): boolean {
    const key = toHex(rid);
    if (this.#seen.has(key)) return false;
    this.#seen.set(key, ts);
    this.#prune(now);
    return true;
  }

  /** Restores remembered ids (from durable storage), oldest first. */
  load(entries: Iterable<readonly [string, number]>, now: number): void {
    for (const [rid, ts] of entries) this.#seen.set(rid, ts);
    this.#prune(now);
  }

  entries(): [string, number][] {
    return [...this.#seen];
  }

  get size(): number {
    return this.#seen.size;
  }

  #prune(now: number): void {
    for (const [rid, ts] of this.#seen) {
      if (this.#seen.size <= this.capacity && now - ts <= this.retainMs) break;
      this.#seen.delete(rid);
    }
  }
}
