/** In-memory mailboxes: the contract of core/mailbox.ts without durability (tests, ephemeral relays). */
import { toHex } from '../core/bytes.js';
import { ok, type Result } from '../core/result.js';
import {
  DEFAULT_MAILBOX_LIMITS,
  type MailboxError,
  type MailboxFrame,
  type MailboxLimits,
  type MailboxStore,
  type NewFrame,
  checkId,
  checkLimits,
  checkPage,
  overLimit,
} from '../core/mailbox.js';

interface MemoryMailbox {
  readonly frames: MailboxFrame[];
  bytes: number;
}

/** In-memory store for tests and ephemeral relays; same contract, no durability. */
export class MemoryMailboxStore implements MailboxStore {
  readonly #limits: MailboxLimits;
  readonly #boxes = new Map<string, MemoryMailbox>();
  readonly #members = new Set<string>();
  readonly #admissions = new Map<string, Uint8Array>();
  readonly #invited = new Map<string, Uint8Array>();
  #lastId = 0;
  #closed = false;

  constructor(limits: MailboxLimits = DEFAULT_MAILBOX_LIMITS) {
    this.#limits = checkLimits(limits);
  }

  enqueue(
    topic: Uint8Array,
    recipient: Uint8Array,
    sender: Uint8Array,
    body: Uint8Array,
  ): Result<number, MailboxError> {
    checkId(sender, 'sender');
    const box = this.#box(topic, recipient, true);
    const full = overLimit(this.#limits, box.frames.length, box.bytes, body.length);
    if (full) return full;
    const id = ++this.#lastId;
    box.frames.push({ id, sender: sender.slice(), body: body.slice() });
    box.bytes += body.length;
    return ok(id);
  }

  enqueueAll(frames: readonly NewFrame[]): Result<number, MailboxError>[] {
    return frames.map((f) => this.enqueue(f.topic, f.recipient, f.sender, f.body));
  }

  pending(topic: Uint8Array, recipient: Uint8Array, afterId: number, limit: number): readonly MailboxFrame[] {
    const max = checkPage(afterId, limit);
    const frames = this.#box(topic, recipient, false).frames;
    return frames.filter((f) => f.id > afterId).slice(0, max);
  }

  ack(topic: Uint8Array, recipient: Uint8Array, ids: readonly number[]): number {
    const box = this.#box(topic, recipient, false);
    const drop = new Set(ids);
    const before = box.frames.length;
    const kept = box.frames.filter((f) => !drop.has(f.id));
    box.bytes = kept.reduce((sum, f) => sum + f.body.length, 0);
    box.frames.splice(0, box.frames.length, ...kept);
    if (kept.length === 0) this.#boxes.delete(this.#key(topic, recipient));
    return before - kept.length;
  }

  countFor(topic: Uint8Array, recipient: Uint8Array): number {
    return this.#box(topic, recipient, false).frames.length;
  }

  bytesFor(topic: Uint8Array, recipient: Uint8Array): number {
    return this.#box(topic, recipient, false).bytes;
  }

  noteMember(topic: Uint8Array, endpoint: Uint8Array): void {
    this.#members.add(this.#key(topic, endpoint));
  }

  isMember(topic: Uint8Array, endpoint: Uint8Array): boolean {
    return this.#members.has(this.#key(topic, endpoint));
  }

  admission(topic: Uint8Array): Uint8Array | undefined {
    checkId(topic, 'topic');
    return this.#admissions.get(toHex(topic));
  }

  setAdmission(topic: Uint8Array, record: Uint8Array): void {
    checkId(topic, 'topic');
    this.#admissions.set(toHex(topic), record.slice());
  }

  noteInvited(topic: Uint8Array, endpoint: Uint8Array, invite: Uint8Array): void {
    this.#invited.set(this.#key(topic, endpoint), invite.slice());
  }

  invitedWith(topic: Uint8Array, endpoint: Uint8Array): Uint8Array | undefined {
    return this.#invited.get(this.#key(topic, endpoint));
  }

  forgetInvited(topic: Uint8Array, endpoint: Uint8Array): void {
    this.#invited.delete(this.#key(topic, endpoint));
  }

  endpointsOf(topic: Uint8Array): Uint8Array[] {
    checkId(topic, 'topic');
    const prefix = `${toHex(topic)}:`;
    const keys = new Set([...this.#boxes.keys(), ...this.#invited.keys()].filter((k) => k.startsWith(prefix)));
    return [...keys].map((k) => Uint8Array.from(Buffer.from(k.slice(prefix.length), 'hex')));
  }

  dropEndpoint(topic: Uint8Array, endpoint: Uint8Array): number {
    const key = this.#key(topic, endpoint);
    const dropped = this.#boxes.get(key)?.frames.length ?? 0;
    this.#boxes.delete(key);
    this.#invited.delete(key);
    return dropped;
  }

  close(): void {
    this.#closed = true;
  }

  #key(topic: Uint8Array, endpoint: Uint8Array): string {
    if (this.#closed) throw new Error('mailbox: store is closed');
    checkId(topic, 'topic');
    checkId(endpoint, 'endpoint');
    return `${toHex(topic)}:${toHex(endpoint)}`;
  }

  #box(topic: Uint8Array, recipient: Uint8Array, create: boolean): MemoryMailbox {
    const key = this.#key(topic, recipient);
    const found = this.#boxes.get(key);
    if (found) return found;
    const box: MemoryMailbox = { frames: [], bytes: 0 };
    if (create) this.#boxes.set(key, box);
    return box;
  }
}
