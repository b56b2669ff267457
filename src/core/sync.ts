/**
 * Delivery (SSP/1 "Syncing mutable state"): at-least-once from durable per-peer
 * cursors, idempotent apply on the receiving side.
 *
 * For each peer the sender offers log entries after the peer's acknowledged
 * cursor, a bounded batch at a time, and re-offers everything unacknowledged on
 * reconnect and whenever `resend` is called (the batch cycle). The receiver
 * admits a batch in one transaction and only then acknowledges `upto`, so the
 * watermark passes exactly what is durably applied, stored or rejected; a lost
 * frame or ack is healed by the next offer, and a duplicate costs nothing.
 * Realtime push is the same offer, made as soon as a local write lands.
 *
 * Offers respect privacy lanes (sync-manifest.ts): a local-lane entry is never
 * offered, a trusted-lane one only to a peer the `trusted` callback names. The
 * batch still covers their positions, so the peer's watermark moves past them.
 */
import type { IngestOutcome, Replica, Rejection } from './replica.js';
import type { PeerMessage } from './peer-wire.js';
import { MAX_EVENTS_PER_FRAME } from './peer-wire.js';
import type { LogEntry, ReplicaStore } from './store.js';

/** The two messages delivery speaks; pairing messages travel beside it. */
export type DeliveryMessage = Extract<PeerMessage, { t: 'events' | 'ack' }>;

export interface PeerChannel {
  /** Sends one message to the peer's endpoint (hex); resolves once handed to the transport. */
  send(peer: string, message: DeliveryMessage): Promise<void>;
}

export type SyncListener = {
  readonly onApplied?: (outcomes: readonly IngestOutcome[]) => void;
  readonly onRejected?: (peer: string, error: Rejection) => void;
  /** Whether a peer may hold trusted-lane entries (absent: none may). */
  readonly trusted?: (peer: string) => boolean;
};

const MAX_BATCH_BYTES = 768 * 1024;
/** Unacknowledged log entries offered to one peer at most (its relay mailbox holds them). */
const MAX_IN_FLIGHT_EVENTS = 16 * 1024;
/** Frames one offer call sends at most, so one peer cannot starve the others. */
const MAX_FRAMES_PER_OFFER = 16;
/** Longest gap between re-offers to a silent peer, in batch cycles. */
export const MAX_RESEND_BACKOFF = 32;

export class SyncEngine {
  readonly #replica: Replica;
  readonly #store: ReplicaStore;
  readonly #channel: PeerChannel;
  readonly #listener: SyncListener;
  /** Highest position offered per peer on the current connection (not durable). */
  readonly #offered = new Map<string, number>();
  readonly #peers = new Set<string>();
  readonly #rejections = new Map<string, number>();
  /** Re-offer pacing per peer: the cursor last seen, the current interval and cycles left to skip. */
  readonly #pace = new Map<string, { cursor: number; every: number; skip: number }>();
  /** Peers to offer everything again once they acknowledge up to a position (see `reofferAfter`). */
  readonly #reoffers = new Map<string, number>();
  /** Peers being offered everything again: batches up to this position go out marked `again`. */
  readonly #again = new Map<string, number>();
  #online = false;

  constructor(replica: Replica, store: ReplicaStore, channel: PeerChannel, listener: SyncListener = {}) {
    this.#replica = replica;
    this.#store = store;
    this.#channel = channel;
    this.#listener = listener;
  }

  /** Replaces the set of peers (endpoint ids, hex) this machine delivers to. */
  setPeers(peers: Iterable<string>): void {
    const next = new Set(peers);
    for (const peer of next) if (!this.#peers.has(peer)) this.#peers.add(peer);
    for (const peer of [...this.#peers]) if (!next.has(peer)) this.#peers.delete(peer);
  }

  get peers(): readonly string[] {
    return [...this.#peers];
  }

  /** Counts of rejected envelopes by typed reason, for diagnostics. */
  get rejections(): ReadonlyMap<string, number> {
    return this.#rejections;
  }

  /** The transport came up: forget what was in flight and offer from the cursors. */
  async connected(): Promise<void> {
    this.#online = true;
    this.#offered.clear();
    await this.offerAll();
  }

  disconnected(): void {
    this.#online = false;
    this.#offered.clear();
  }

  /**
   * Batch cycle: re-offer what a peer has not acknowledged. A peer whose cursor
   * did not move since the last re-offer (away for a week, say: the relay keeps
   * its mailbox) is re-offered after 1, 2, 4 … up to MAX_RESEND_BACKOFF cycles,
   * so its mailbox does not fill with copies of the same batch; any progress
   * resets the pace. `force` re-offers to every peer now (a user's "sync now").
   */
  async resend(force = false): Promise<void> {
    const last = await this.#store.lastPos();
    for (const peer of this.#peers) {
      const cursor = await this.#store.cursor(peer);
      const pace = this.#pace.get(peer);
      if (!force && pace && pace.cursor === cursor && last > cursor) {
        if (pace.skip > 0) {
          pace.skip--;
          continue;
        }
        pace.every = Math.min(pace.every * 2, MAX_RESEND_BACKOFF);
        pace.skip = pace.every - 1;
      } else {
        this.#pace.set(peer, { cursor, every: 1, skip: 0 });
      }
      this.#offered.delete(peer);
      if (this.#online) await this.#offer(peer);
    }
  }

  /** Realtime push: offer whatever is new to every peer. */
  async offerAll(): Promise<void> {
    if (!this.#online) return;
    for (const peer of this.#peers) await this.#offer(peer);
  }

  /**
   * Offers the next batches after what is already in flight, up to a window, so a
   * peer that is away finds its relay mailbox filled rather than one batch deep.
   * Acks carry the receiver's contiguous watermark, so the cursor never passes a
   * lost batch; the batch cycle re-offers from the cursor.
   */
  async #offer(peer: string): Promise<void> {
    const cursor = await this.#store.cursor(peer);
    let after = Math.max(cursor, this.#offered.get(peer) ?? 0);
    for (let frames = 0; after - cursor < MAX_IN_FLIGHT_EVENTS && frames < MAX_FRAMES_PER_OFFER; frames++) {
      const entries = await this.#store.entriesAfter(after, MAX_EVENTS_PER_FRAME);
      if (entries.length === 0) return;
      const events: Uint8Array[] = [];
      let bytes = 0;
      let upto = after;
      for (const entry of entries) {
        if (!this.#mayHold(peer, entry)) {
          upto = entry.pos;
          continue;
        }
        if (events.length > 0 && bytes + entry.sealed.length > MAX_BATCH_BYTES) break;
        events.push(entry.sealed);
        bytes += entry.sealed.length;
        upto = entry.pos;
      }
      this.#offered.set(peer, upto);
      const again = after < (this.#again.get(peer) ?? 0);
      await this.#channel.send(peer, { t: 'events', after, upto, events, ...(again ? { again: true as const } : {}) });
      after = upto;
    }
  }

  #mayHold(peer: string, entry: LogEntry): boolean {
    if (entry.lane === 'local') return false;
    return entry.lane !== 'trusted' || this.#listener.trusted?.(peer) === true;
  }

  /**
   * A peer may now hold more than before (it became trusted): once it has
   * acknowledged our log up to `pos` (where the record that says so sits, so it
   * knows it too), offer it everything again from the start; what it already
   * holds costs a duplicate check. Not durable: after a restart the batch cycle
   * carries on from the cursor, and a later grant asks again.
   */
  async reofferAfter(peer: string, pos: number): Promise<void> {
    this.#reoffers.set(peer, pos);
    await this.#reofferIfAcknowledged(peer);
  }

  async #reofferIfAcknowledged(peer: string): Promise<void> {
    const pos = this.#reoffers.get(peer);
    if (pos === undefined || (await this.#store.cursor(peer)) < pos) return;
    this.#reoffers.delete(peer);
    this.#again.set(peer, await this.#store.cursor(peer));
    await this.#store.rewindCursor(peer);
    this.#offered.delete(peer);
    this.#pace.delete(peer);
  }

  /** Handles a message from a peer; returns once its effects are durable. */
  async receive(peer: string, message: DeliveryMessage): Promise<void> {
    if (message.t === 'events') {
      // A batch wholly at or below the durable watermark was applied or recorded already.
      // One that starts past it (an earlier batch was lost) is applied, but the watermark
      // waits for the gap to fill: it only ever covers a contiguous prefix of the peer's log.
      const watermark = await this.#store.watermark(peer);
      const seen = watermark >= message.upto && message.again !== true;
      const contiguous = message.after <= watermark;
      const outcomes = seen
        ? []
        : await this.#replica.ingest(peer, message.events, contiguous ? message.upto : undefined);
      for (const outcome of outcomes) {
        if (outcome.type !== 'Rejected') continue;
        this.#rejections.set(outcome.error.type, (this.#rejections.get(outcome.error.type) ?? 0) + 1);
        this.#listener.onRejected?.(peer, outcome.error);
      }
      this.#listener.onApplied?.(outcomes);
      await this.#channel.send(peer, { t: 'ack', upto: await this.#store.watermark(peer) });
    } else {
      await this.#store.advanceCursor(peer, message.upto);
      if ((await this.#store.cursor(peer)) >= (this.#again.get(peer) ?? 0)) this.#again.delete(peer);
      await this.#reofferIfAcknowledged(peer);
      // Keep the pipe full: the ack may have freed room in the window.
      if (this.#online && this.#peers.has(peer)) await this.#offer(peer);
    }
  }
}
