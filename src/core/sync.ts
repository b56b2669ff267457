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
 *
 * Asking again is the receiver's, and durable: what it withheld because of a
 * class (store.ts WithheldRecord) it asks every peer for (`want`) once it may
 * hold it; when it becomes trusted it sweeps each peer's log for the
 * trusted-lane entries it was never offered (`sweep`), keeping its progress
 * per peer and per grant (`trustGrant`) in the store, so a restart resumes the
 * sweep and a later grant starts a new one. Both run on connect and every
 * ASK_EVERY batch cycles until nothing is left to ask for.
 */
import type { IngestOutcome, Replica, Rejection } from './replica.js';
import type { PeerMessage } from './peer-wire.js';
import { MAX_EVENTS_PER_FRAME, MAX_WANT_IDS } from './peer-wire.js';
import { PUBLISHED } from './republish.js';
import type { ReplicaStore, SealedEntry } from './store.js';

/** The two messages delivery speaks; pairing messages travel beside it. */
export type DeliveryMessage = Extract<PeerMessage, { t: 'events' | 'ack' | 'want' | 'sweep' | 'resent' }>;

export const isDeliveryMessage = (m: PeerMessage): m is DeliveryMessage =>
  m.t === 'events' || m.t === 'ack' || m.t === 'want' || m.t === 'sweep' || m.t === 'resent';

export interface PeerChannel {
  /** Sends one message to the peer's endpoint (hex); resolves once handed to the transport. */
  send(peer: string, message: DeliveryMessage): Promise<void>;
}

export type SyncListener = {
  readonly onApplied?: (outcomes: readonly IngestOutcome[]) => void;
  readonly onRejected?: (peer: string, error: Rejection) => void;
  /** Whether a peer may hold trusted-lane entries (absent: none may). */
  readonly trusted?: (peer: string) => boolean;
  /**
   * The signer whose machine a peer endpoint is, when known: its own events are never
   * offered back to it (it wrote them; after a catch-up, forwarding them would send the
   * whole log back).
   */
  readonly signerOf?: (peer: string) => string | undefined;
  /**
   * While this machine is trusted, a name for the grant that made it so (it
   * changes when trust is withdrawn and granted again); undefined otherwise.
   */
  readonly trustGrant?: () => Promise<string | undefined>;
};

/** Batch cycles between two rounds of `want` / `sweep` while something is left to ask for. */
const ASK_EVERY = 4;
/** Log entries one sweep answer scans at most. */
const SWEEP_SCAN = 8 * 1024;
/** Log entries a peer may not hold that one frame without envelopes passes over at most. */
const SKIP_SCAN = 8 * 1024;
/** The sweep progress that means "reached the end of that peer's log". */
const SWEEP_DONE = Number.MAX_SAFE_INTEGER;
/** Where a sweep's progress is kept: a watermark under a name of its own (it only moves forward). */
const sweepKey = (grant: string, peer: string): string => `sweep/${grant}/${peer}`;

const MAX_BATCH_BYTES = 768 * 1024;
/** Unacknowledged log entries offered to one peer at most (its relay mailbox holds them). */
const MAX_IN_FLIGHT_EVENTS = 16 * 1024;
/** Frames one offer call sends at most, so one peer cannot starve the others. */
const MAX_FRAMES_PER_OFFER = 16;
/** Batches applied past a gap remembered per peer at most (a window's worth of frames). */
const MAX_AHEAD_RANGES = 1024;
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
  /** Per peer, the `(after, upto]` ranges of batches applied past a gap in its log (`#rememberAhead`). */
  readonly #ahead = new Map<string, [number, number][]>();
  #online = false;
  /** Whether this machine was removed (read before each offer: `#withdrawn`). */
  #selfRemoved = false;
  #cycles = 0;

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

  /**
   * The transport came up: forget what was in flight, move what this machine wrote while it
   * could not publish to the current key generation (republish.ts), and offer from the cursors.
   */
  async connected(): Promise<void> {
    this.#online = true;
    this.#offered.clear();
    await this.#republish();
    await this.offerAll();
    await this.askAgain();
  }

  /** Before offering: own rows never published move to the current generation (none while nobody is offered anything). */
  async #republish(): Promise<void> {
    if (this.#peers.size > 0) await this.#replica.republish();
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
   *
   * A peer whose cursor moves is re-offered from its cursor every cycle, even though
   * most of that is still in flight: a frame lost mid-window is then sent again
   * within a cycle, before the envelopes behind it fill the peer's parking (tried
   * the other way, topping up only, a 100,000-event catch-up parked past its
   * limit behind one lost frame and stalled).
   */
  async resend(force = false): Promise<void> {
    if (this.#online) await this.#republish();
    if (force || ++this.#cycles % ASK_EVERY === 0) await this.askAgain();
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
    await this.#readRemoved();
    const cursor = await this.#store.cursor(peer);
    let after = Math.max(cursor, this.#offered.get(peer) ?? 0);
    for (let frames = 0; after - cursor < MAX_IN_FLIGHT_EVENTS && frames < MAX_FRAMES_PER_OFFER; frames++) {
      const batch = await this.#nextBatch(peer, after);
      if (!batch) return;
      this.#offered.set(peer, batch.upto);
      await this.#channel.send(peer, { t: 'events', after, upto: batch.upto, events: batch.events });
      // Marked once handed over: a crash before the mark issues some rows again, never fewer.
      await this.#store.advanceCursor(PUBLISHED, batch.upto);
      after = batch.upto;
    }
  }

  /**
   * The envelopes of the next frame to `peer` after `after`, and the log position it covers
   * up to; undefined at the end of the log. Entries the peer may not hold (or wrote itself)
   * are passed over, and a run of them — up to SKIP_SCAN entries — goes as one frame
   * without envelopes, so the peer's watermark passes them without one frame per page.
   */
  async #nextBatch(peer: string, after: number): Promise<{ events: Uint8Array[]; upto: number } | undefined> {
    const events: Uint8Array[] = [];
    let bytes = 0;
    let upto = after;
    const through = Math.min(await this.#store.lastPos(), after + SKIP_SCAN);
    const own = this.#listener.signerOf?.(peer);
    // Every sealed envelope has bytes: `bytes` is 0 until the first event is taken.
    while (bytes === 0 && upto < through) {
      const entries = await this.#store.sealedAfter(upto, through, MAX_EVENTS_PER_FRAME, own);
      let full = entries.length === MAX_EVENTS_PER_FRAME;
      for (const entry of entries) {
        if (!this.#mayHold(peer, entry)) {
          upto = entry.pos;
          continue;
        }
        if (bytes > 0 && bytes + entry.sealed.length > MAX_BATCH_BYTES) {
          full = true;
          break;
        }
        events.push(entry.sealed);
        bytes += entry.sealed.length;
        upto = entry.pos;
      }
      // A page that ended short covered its whole range: what it left out was the peer's own.
      if (!full) upto = through;
    }
    return upto > after ? { events, upto } : undefined;
  }

  /**
   * An own revoked entry is one this machine withdrew (republish.ts), and never leaves it —
   * unless this machine was removed, when its revoked entries are the removal's and travel
   * on like anyone's (every replica then holds the same envelopes). Read before each offer.
   */
  #withdrawn(entry: SealedEntry): boolean {
    return entry.revoked === true && entry.signer === this.#replica.self && !this.#selfRemoved;
  }

  async #readRemoved(): Promise<void> {
    this.#selfRemoved = (await this.#store.row('keyring', this.#replica.self))?.removed !== undefined;
  }

  #mayHold(peer: string, entry: SealedEntry): boolean {
    if (entry.lane === 'local') return false;
    if (this.#withdrawn(entry)) return false;
    if (entry.signer !== undefined && entry.signer === this.#listener.signerOf?.(peer)) return false;
    return entry.lane !== 'trusted' || this.#listener.trusted?.(peer) === true;
  }

  /**
   * Asks the peers again for what this machine may hold now but does not: the
   * envelopes it withheld, and (once trusted) the trusted lane it was never
   * offered. Called on connect, every ASK_EVERY cycles, and when this machine's
   * classes or trust change.
   */
  async askAgain(): Promise<void> {
    if (!this.#online || this.#peers.size === 0) return;
    const grant = await this.#listener.trustGrant?.();
    if (grant !== undefined) {
      for (const peer of this.#peers) {
        const after = await this.#store.watermark(sweepKey(grant, peer));
        if (after < SWEEP_DONE) await this.#channel.send(peer, { t: 'sweep', after });
      }
    }
    const ids = await this.#replica.wanted(MAX_WANT_IDS);
    if (ids.length > 0) for (const peer of this.#peers) await this.#channel.send(peer, { t: 'want', ids });
  }

  /** The withheld envelopes a peer asks for, those it may hold. */
  async #answerWant(peer: string, ids: readonly string[]): Promise<void> {
    await this.#readRemoved();
    const entries = (await this.#store.entriesByOuterId(ids)).filter((e) => this.#mayHold(peer, e));
    for (let i = 0; i < entries.length; i += MAX_EVENTS_PER_FRAME) {
      const events = entries.slice(i, i + MAX_EVENTS_PER_FRAME).map((e) => e.sealed);
      await this.#channel.send(peer, { t: 'resent', events, sweep: false, next: 0, done: true });
    }
  }

  /** One page of a sweep: trusted-lane entries after `after`, if the peer is trusted here too. */
  async #answerSweep(peer: string, after: number): Promise<void> {
    // Not trusted as far as we know yet (the grant has not reached us): nothing, and not done.
    if (this.#listener.trusted?.(peer) !== true) {
      return this.#channel.send(peer, { t: 'resent', events: [], sweep: true, next: after, done: false });
    }
    const events: Uint8Array[] = [];
    const last = await this.#store.lastPos();
    // Up to SWEEP_SCAN positions per page: the peer asks again from where it ends.
    const through = Math.min(last, after + SWEEP_SCAN);
    let next = through;
    let bytes = 0;
    await this.#readRemoved();
    const entries = await this.#store.laneAfter('trusted', after, through, MAX_EVENTS_PER_FRAME);
    let cut = false;
    for (const [i, entry] of entries.entries()) {
      if (this.#withdrawn(entry)) continue;
      if (events.length > 0 && bytes + entry.sealed.length > MAX_BATCH_BYTES) {
        next = entries[i - 1]!.pos;
        cut = true;
        break;
      }
      events.push(entry.sealed);
      bytes += entry.sealed.length;
    }
    // A full page may have more of the lane behind it: the next page starts after its last entry.
    if (!cut && entries.length === MAX_EVENTS_PER_FRAME) next = entries.at(-1)!.pos;
    await this.#channel.send(peer, { t: 'resent', events, sweep: true, next, done: next >= last });
  }

  /** Takes in what a peer sent again; a sweep's progress is recorded once that is durable. */
  async #takeResent(peer: string, message: Extract<DeliveryMessage, { t: 'resent' }>): Promise<void> {
    const outcomes = message.events.length > 0 ? await this.#replica.ingest(peer, message.events) : [];
    this.#report(peer, outcomes);
    // A page with something deferred (parking was full) is asked for again, not passed.
    if (!message.sweep || outcomes.some((o) => o.type === 'Deferred')) return;
    const grant = await this.#listener.trustGrant?.();
    if (grant === undefined) return;
    const key = sweepKey(grant, peer);
    const before = await this.#store.watermark(key);
    await this.#store.transact((tx) => tx.setWatermark(key, message.done ? SWEEP_DONE : message.next));
    // Carry on while the sweep moves; a peer that does not see us trusted yet is asked again later.
    if (!message.done && message.next > before) await this.#channel.send(peer, { t: 'sweep', after: message.next });
  }

  #report(peer: string, outcomes: readonly IngestOutcome[]): void {
    for (const outcome of outcomes) {
      if (outcome.type !== 'Rejected') continue;
      this.#rejections.set(outcome.error.type, (this.#rejections.get(outcome.error.type) ?? 0) + 1);
      this.#listener.onRejected?.(peer, outcome.error);
    }
    this.#listener.onApplied?.(outcomes);
  }

  /**
   * A batch applied past a gap: durable, but the watermark may not cover it until the gap
   * fills. Kept in memory only — after a restart the sender offers it again from the
   * watermark, as it would anyway.
   */
  #rememberAhead(peer: string, after: number, upto: number): void {
    const ranges = this.#ahead.get(peer) ?? [];
    if (ranges.length >= MAX_AHEAD_RANGES) ranges.shift();
    ranges.push([after, upto]);
    this.#ahead.set(peer, ranges);
  }

  /**
   * Once the watermark reaches batches applied ahead of it, it passes them too, so a late
   * frame does not leave everything behind it to be sent and taken in again (with the
   * sender's window full, only its batch cycle would do that: one window per cycle).
   */
  async #passAhead(peer: string): Promise<void> {
    const ranges = this.#ahead.get(peer);
    if (!ranges) return;
    const watermark = await this.#store.watermark(peer);
    let reach = watermark;
    for (let moved = true; moved;) {
      moved = false;
      for (const [after, upto] of ranges) {
        if (after <= reach && upto > reach) {
          reach = upto;
          moved = true;
        }
      }
    }
    const left = ranges.filter(([, upto]) => upto > reach);
    if (left.length > 0) this.#ahead.set(peer, left);
    else this.#ahead.delete(peer);
    if (reach > watermark) await this.#store.transact((tx) => tx.setWatermark(peer, reach));
  }

  /** Handles a message from a peer; returns once its effects are durable. */
  async receive(peer: string, message: DeliveryMessage): Promise<void> {
    switch (message.t) {
      case 'events': {
        // A batch wholly at or below the durable watermark was applied or recorded already.
        // One that starts past it (an earlier batch was lost) is applied, but the watermark
        // waits for the gap to fill: it only ever covers a contiguous prefix of the peer's log.
        const watermark = await this.#store.watermark(peer);
        const seen = watermark >= message.upto;
        const contiguous = message.after <= watermark;
        const outcomes = seen
          ? []
          : await this.#replica.ingest(peer, message.events, contiguous ? message.upto : undefined);
        this.#report(peer, outcomes);
        if (!seen && !outcomes.some((o) => o.type === 'Deferred')) {
          if (contiguous) await this.#passAhead(peer);
          else this.#rememberAhead(peer, message.after, message.upto);
        }
        return this.#channel.send(peer, { t: 'ack', upto: await this.#store.watermark(peer) });
      }
      case 'ack':
        await this.#store.advanceCursor(peer, message.upto);
        // Keep the pipe full: the ack may have freed room in the window.
        if (this.#online && this.#peers.has(peer)) await this.#offer(peer);
        return;
      case 'want':
        return this.#answerWant(peer, message.ids);
      case 'sweep':
        return this.#answerSweep(peer, message.after);
      case 'resent':
        return this.#takeResent(peer, message);
    }
  }
}

type EventsMessage = Extract<DeliveryMessage, { t: 'events' }>;

/** Most envelopes taken in as one from consecutive `events` messages of a peer. */
export const MAX_JOINED_EVENTS = 1024;

/**
 * Whether `next` and `run` cover one unbroken range of the sender's log (`(after, upto]`
 * each; they may overlap), so that taking them in as one cannot claim a gap was applied,
 * and both fit in one ingest.
 */
export function continuesEvents(run: EventsMessage, next: EventsMessage): boolean {
  return (
    next.after <= run.upto && run.after <= next.upto && run.events.length + next.events.length <= MAX_JOINED_EVENTS
  );
}

/** Two consecutive `events` messages of one peer as one (`continuesEvents` must hold). */
export function joinEvents(run: EventsMessage, next: EventsMessage): EventsMessage {
  return {
    t: 'events',
    after: Math.min(run.after, next.after),
    upto: Math.max(run.upto, next.upto),
    events: [...run.events, ...next.events],
  };
}
