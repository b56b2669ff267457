/**
 * Relay mailboxes: the durable store-and-forward state of a relay — the contract every
 * store keeps (the relay's MemoryMailboxStore, storage/sqlite-mailbox.ts).
 *
 * A mailbox is keyed by (topic, recipient endpoint id), both 32 bytes. It holds opaque,
 * end-to-end sealed frames in id order until the recipient acknowledges them, so delivery
 * is at-least-once and survives relay restarts. The store also remembers which endpoints
 * have authenticated under a topic (`noteMember`), so the relay can refuse to open
 * mailboxes for endpoints nobody has seen (a cheap disk-fill defence).
 *
 * Invariants every implementation keeps (checked by test/relay/mailbox.test.ts, one shared
 * acceptance suite):
 *   - frame ids are positive, unique and strictly increasing across the whole store, and are
 *     never reused, even after the newest frame is acknowledged or the store is reopened;
 *   - `pending` returns only the frames of that exact (topic, recipient), ascending by id;
 *   - `ack` deletes only frames of that exact (topic, recipient): an endpoint cannot drop
 *     another endpoint's (or another topic's) frames by guessing ids;
 *   - a mailbox never exceeds its limits: `enqueue` returns a `MailboxFull` error value and
 *     stores nothing instead.
 *
 * The interface is deliberately narrow (bytes and integers in, bytes and integers out) so a
 * PostgreSQL (mailboxes, membership) or S3-backed implementation can be slotted in when a
 * deployment outgrows one machine (DESIGN §1). It is synchronous because the embedded
 * default (better-sqlite3) is, which keeps the relay's per-message handling free of
 * interleavings; a networked engine would need an async twin of this interface.
 */
import { err, type Result } from './result.js';

export interface MailboxFrame {
  readonly id: number;
  readonly sender: Uint8Array;
  readonly body: Uint8Array;
}

export type MailboxError = {
  readonly type: 'MailboxFull';
  readonly reason: string;
  readonly frames: number;
  readonly bytes: number;
};

export interface MailboxLimits {
  /** Most frames one (topic, recipient) mailbox may hold. */
  readonly maxFrames: number;
  /** Most body bytes one (topic, recipient) mailbox may hold. */
  readonly maxBytes: number;
}

export const DEFAULT_MAILBOX_LIMITS: MailboxLimits = { maxFrames: 10_000, maxBytes: 64 * 1024 * 1024 };

/** Largest page `pending` returns, whatever the caller asks for. */
export const MAX_PENDING_PAGE = 1000;

/** A frame to store: under (topic, recipient), from sender. */
export type NewFrame = {
  readonly topic: Uint8Array;
  readonly recipient: Uint8Array;
  readonly sender: Uint8Array;
  readonly body: Uint8Array;
};

export interface MailboxStore {
  /** Stores a frame durably; the id is returned only once the frame is persisted. */
  enqueue(topic: Uint8Array, recipient: Uint8Array, sender: Uint8Array, body: Uint8Array): Result<number, MailboxError>;
  /**
   * `enqueue` of each frame in order, all persisted together (one durable commit for
   * the lot, as a relay under load batches the frames of one turn): the results in order.
   */
  enqueueAll(frames: readonly NewFrame[]): Result<number, MailboxError>[];
  /** Up to `limit` frames with id > `afterId`, ascending. */
  pending(topic: Uint8Array, recipient: Uint8Array, afterId: number, limit: number): readonly MailboxFrame[];
  /** Deletes the listed frames of this mailbox; returns how many existed. Unknown ids are ignored. */
  ack(topic: Uint8Array, recipient: Uint8Array, ids: readonly number[]): number;
  countFor(topic: Uint8Array, recipient: Uint8Array): number;
  bytesFor(topic: Uint8Array, recipient: Uint8Array): number;
  /** Records that `endpoint` authenticated under `topic`. Idempotent. */
  noteMember(topic: Uint8Array, endpoint: Uint8Array): void;
  isMember(topic: Uint8Array, endpoint: Uint8Array): boolean;
  /** The signed admission list in force for `topic` (core/admission.ts), as pushed. */
  admission(topic: Uint8Array): Uint8Array | undefined;
  setAdmission(topic: Uint8Array, record: Uint8Array): void;
  /** Remembers the invitation id a not-yet-listed joiner authenticated with. */
  noteInvited(topic: Uint8Array, endpoint: Uint8Array, invite: Uint8Array): void;
  invitedWith(topic: Uint8Array, endpoint: Uint8Array): Uint8Array | undefined;
  /** Forgets the invitation a joiner came in with, once a list names it (its mailbox stays). */
  forgetInvited(topic: Uint8Array, endpoint: Uint8Array): void;
  /** Endpoints of `topic` that have a mailbox or a remembered invitation. */
  endpointsOf(topic: Uint8Array): Uint8Array[];
  /** Deletes an endpoint's mailbox and invitation under `topic` (it lost admission); returns frames dropped. */
  dropEndpoint(topic: Uint8Array, endpoint: Uint8Array): number;
  close(): void;
}

/** Argument checks shared by implementations; a violation is a caller bug, so it throws. */
export function checkId(value: Uint8Array, name: string): void {
  if (!(value instanceof Uint8Array) || value.length !== 32) {
    throw new TypeError(`mailbox: ${name} must be 32 bytes`);
  }
}

export function checkPage(afterId: number, limit: number): number {
  if (!Number.isSafeInteger(afterId) || afterId < 0) throw new RangeError('mailbox: afterId must be a uint');
  if (!Number.isSafeInteger(limit) || limit < 1) throw new RangeError('mailbox: limit must be a positive integer');
  return Math.min(limit, MAX_PENDING_PAGE);
}

export function checkLimits(limits: MailboxLimits): MailboxLimits {
  const valid = (n: number): boolean => Number.isSafeInteger(n) && n > 0;
  if (!valid(limits.maxFrames) || !valid(limits.maxBytes)) {
    throw new RangeError('mailbox: limits must be positive integers');
  }
  return limits;
}

/** The typed refusal both implementations return when a frame would overflow a mailbox. */
export function overLimit(
  limits: MailboxLimits,
  frames: number,
  bytes: number,
  size: number,
): Result<never, MailboxError> | undefined {
  if (frames + 1 <= limits.maxFrames && bytes + size <= limits.maxBytes) return undefined;
  const reason = `mailbox: full (${frames} frames, ${bytes} bytes; limits ${limits.maxFrames} frames, ${limits.maxBytes} bytes)`;
  return err({ type: 'MailboxFull', reason, frames, bytes });
}
