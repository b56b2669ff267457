/**
 * The relay's connection state machine and router (sov-relay/1, see core/relay-wire.ts).
 * No HTTP here: server.ts owns sockets and hands each upgraded WebSocket to `accept`.
 *
 *   connect → challenge{nonce, relay}   (32 random bytes, fresh per connection; the relay's key)
 *   auth{topic, endpoint, sig, cnonce[, invite]}
 *                                within `authTimeoutMs`; sig verifies under `endpoint`
 *                                (the endpoint id IS its Ed25519 public key) over
 *                                relayAuthPayload(nonce, topic, endpoint), strict RFC 8032;
 *                                then admission (below)
 *   → ready{proof}               the relay's signature over relayProofPayload(nonce, cnonce,
 *                                topic, endpoint), which the endpoint checks against the key it
 *                                pinned; then every stored frame of (topic, endpoint) in id order
 *   admit{record}                a new admission list for the session's topic (core/admission.ts)
 *
 * Admission (`admission: 'enforce'`, what `sov relay` runs): a topic's signed list names the
 * endpoints served. A listed endpoint is a member; one presenting an open invitation is served
 * as a joiner that may write only to its inviter; before any list exists, a session may only
 * push the first list. A new list takes effect at once: sessions it no longer serves are closed
 * (`not-admitted`) and their mailboxes dropped. `admission: 'open'` serves every endpoint that
 * authenticates (the relay's own mechanics tests; the benchmarks enforce, as `sov relay` does).
 *   send{to, body}               stored durably under (topic, to) BEFORE anything else;
 *                                forwarded at once if `to` is online under the same topic
 *   ack{ids}                     deletes those frames of this (topic, endpoint) only
 *
 * The HTTP mailbox API (http-mailbox.ts) sends through `submit` too, so a frame takes the
 * same path whichever transport carried it.
 *
 * Invariants:
 *   - routing never crosses topics: a session is keyed by (topic, endpoint) and a send is
 *     stored and delivered under the sender's authenticated topic only;
 *   - at most one live session per (topic, endpoint): a newer one closes the older;
 *   - each session receives its frames in ascending id order without gaps or duplicates;
 *     frames stay stored until acked, so a reconnect redelivers what was not acked;
 *   - memory per session is bounded: stored frames are pumped in pages, the next page only
 *     after the previous one reached the socket, and live frames wait in the mailbox
 *     whenever the socket is backed up.
 *
 * Errors: `malformed`, `auth-failed`, `not-authenticated` and sustained `rate-limited` are
 * fatal (error message, then close 1008). `frame-too-large`, `mailbox-full`,
 * `unknown-recipient` and a single `rate-limited` drop only the offending message.
 * A message larger than MAX_RELAY_MESSAGE never gets here: `ws` closes with 1009.
 *
 * Threats: bodies are opaque and never logged; ids are logged shortened to 8 hex digits.
 * Unknown recipients are refused unless allowed, so a group member cannot open mailboxes
 * for arbitrary ids to fill the disk (membership comes from authenticating once).
 */
import { ed25519 } from '@noble/curves/ed25519.js';
import type { RawData, WebSocket } from 'ws';
import { toHex } from '../core/bytes.js';
import { decodeAdmission, nextAdmission, standingOf, type AdmissionList, type Standing } from '../core/admission.js';
import {
  MAX_FRAME_BODY,
  RELAY_PROTOCOL_VERSION,
  decodeEndpointMessage,
  encodeRelayMessage,
  relayProofPayload,
  type EndpointToRelay,
  type RelayErrorCode,
  type RelayToEndpoint,
} from '../core/relay-wire.js';
import { err, type Result } from '../core/result.js';
import type { BlindSequencer, SequencerStore } from '../core/mls/sequencer.js';
import { GroupCommit } from './group-commit.js';
import { sequence, type SequencingPort } from './hub-sequencing.js';
import type { MailboxStore, NewFrame } from '../core/mailbox.js';
import { isOversizeSend, toBytes, verifyAuth } from './hub-inbound.js';
import { RateLimiter, type RateLimitOptions } from './rate-limit.js';
import type { WireTap } from './tap.js';

export interface HubOptions {
  readonly store: MailboxStore;
  readonly now: () => number;
  readonly randomBytes: (length: number) => Uint8Array;
  readonly log: (line: string) => void;
  readonly rateLimit: RateLimitOptions;
  readonly authTimeoutMs: number;
  readonly allowUnknownRecipients: boolean;
  /** The relay's long-term Ed25519 identity: endpoints pin its public key. */
  readonly identity: { readonly secretKey: Uint8Array; readonly publicKey: Uint8Array };
  readonly admission: 'enforce' | 'open';
  /**
   * Whether anyone may found a mesh here: take a topic no list names and push its first list
   * (`enforce` only). Closed, a relay serves only the meshes already on it — the operator's
   * choice (`sov relay --founding`); open by default for a relay on loopback only.
   */
  readonly founding?: boolean | undefined;
  /** Sees every byte the relay receives and sends on its WebSockets (privacy audits; relay/tap.ts). */
  readonly tap?: WireTap | undefined;
  /** The blind MLS sequencer (core/mls/sequencer.ts); without one, commits are refused. */
  readonly sequencer?: { readonly sequencer: BlindSequencer; readonly store: SequencerStore } | undefined;
}

/** A copy of every message crossing the relay, for audits that prove what it can see. */

/** Why `submit` refused a frame; the same codes on both transports. */
export type SubmitError = {
  readonly code: 'unknown-recipient' | 'mailbox-full' | 'not-admitted';
  readonly message: string;
};

/** How a session is served: a listed member, a joiner on an invitation, or the founder before any list. */
type SessionStanding = NonNullable<Standing> | { readonly kind: 'founding' };

type SendMessage = Extract<EndpointToRelay, { t: 'send' }>;
type AuthMessage = Extract<EndpointToRelay, { t: 'auth' }>;
type CommitMessage = Extract<EndpointToRelay, { t: 'commit' }>;
type CommitsMessage = Extract<EndpointToRelay, { t: 'commits' }>;

interface Peer {
  readonly key: string;
  readonly topicHex: string;
  readonly topic: Uint8Array;
  readonly endpoint: Uint8Array;
  readonly label: string;
  readonly invite: Uint8Array | undefined;
  standing: SessionStanding;
}

interface Connection {
  readonly serial: number;
  readonly ws: WebSocket;
  readonly nonce: Uint8Array;
  readonly limiter: RateLimiter;
  readonly authTimer: ReturnType<typeof setTimeout>;
  peer: Peer | undefined;
  /** Highest frame id written to this socket. */
  cursor: number;
  pumping: boolean;
  closed: boolean;
  alive: boolean;
  /** What the last heartbeat round asked for: a WebSocket pong (before auth) or application pong `n`. */
  awaiting: 'ws' | number;
  endReason: string;
}

/** Frames per mailbox page, and bytes after which a page ends early. */
const PAGE_FRAMES = 64;
const PAGE_BYTES = 4 * 1024 * 1024;
/** Above this many buffered bytes a live frame waits in the mailbox instead. */
const HIGH_WATER = 8 * 1024 * 1024;
const CLOSE_POLICY = 1008;
const CLOSE_INTERNAL = 1011;
const CLOSE_REPLACED = 4000;

const short = (bytes: Uint8Array): string => toHex(bytes.subarray(0, 4));

/** Admission lists kept in memory; the least recently used is read from the store again. */
const MAX_CACHED_LISTS = 10_000;

export class RelayHub {
  readonly #opts: HubOptions;
  readonly #sessions = new Map<string, Connection>();
  /** Serial of the application pings (each round's number is new, so a late pong proves nothing). */
  #pings = 0;
  readonly #connections = new Set<Connection>();
  /** Decoded admission lists in force, by topic hex (the store holds the signed records). */
  readonly #lists = new Map<string, AdmissionList>();
  readonly #refused = new Map<string, number>();
  #serial = 0;
  #closing = false;
  /** WebSocket sends of this turn of the event loop, stored together at its end (group-commit.ts). */
  readonly #sends: GroupCommit<{ readonly c: Connection; readonly frame: NewFrame }>;

  constructor(options: HubOptions) {
    this.#opts = options;
    this.#sends = new GroupCommit({
      store: (frames) => options.store.enqueueAll(frames),
      stored: ({ c, frame }, result) => {
        if (!result.ok) return this.#reject(c, 'mailbox-full', result.error.reason);
        this.#forward(frame, result.value);
      },
      failed: (sends, e) => {
        // As for any internal error of a message: its connection ends; the sender offers it again.
        this.#opts.log(`relay: storing ${sends.length} frames failed: ${(e as Error).message}`);
        for (const c of new Set(sends.map((s) => s.c))) {
          c.endReason = 'internal error';
          this.#close(c, CLOSE_INTERNAL, 'internal error');
        }
      },
    });
  }

  sessionCount(): number {
    return this.#sessions.size;
  }

  connectionCount(): number {
    return this.#connections.size;
  }

  isOnline(topic: Uint8Array, endpoint: Uint8Array): boolean {
    return this.#sessions.has(`${toHex(topic)}:${toHex(endpoint)}`);
  }

  accept(ws: WebSocket): void {
    if (this.#closing) {
      ws.close(1001, 'relay shutting down');
      return;
    }
    const nonce = this.#opts.randomBytes(32);
    if (nonce.length !== 32) throw new Error('relay: randomBytes returned the wrong length');
    const c: Connection = {
      serial: ++this.#serial,
      ws,
      nonce,
      limiter: new RateLimiter(this.#opts.rateLimit, this.#opts.now),
      authTimer: setTimeout(
        () => this.#fail(c, 'not-authenticated', 'relay: no auth in time'),
        this.#opts.authTimeoutMs,
      ),
      peer: undefined,
      cursor: 0,
      pumping: false,
      closed: false,
      alive: true,
      awaiting: 'ws',
      endReason: 'peer',
    };
    this.#connections.add(c);
    ws.on('message', (data, isBinary) => this.#onMessage(c, data, isBinary));
    ws.on('close', (code) => this.#onClose(c, code));
    ws.on('error', (e: Error & { code?: string }) => {
      c.endReason = `socket error: ${e.message}`;
      // `ws` refuses a message over MAX_RELAY_MESSAGE (closing with 1009) before it reaches us.
      if (e.code === 'WS_ERR_UNSUPPORTED_MESSAGE_LENGTH') this.#count('message-too-large');
    });
    ws.on('pong', () => {
      if (c.awaiting === 'ws') c.alive = true;
    });
    this.#opts.log(`relay: #${c.serial} connect`);
    this.#write(c, { t: 'challenge', v: RELAY_PROTOCOL_VERSION, nonce, relay: this.#opts.identity.publicKey });
  }

  /**
   * One heartbeat round: terminate sockets that missed the previous ping, ping
   * the rest — with a WebSocket ping before auth, and an application `ping`
   * after it, which only the endpoint's code answers (relay-wire.ts).
   */
  heartbeat(): void {
    for (const c of this.#connections) {
      if (!c.alive) {
        c.endReason = 'heartbeat timeout';
        c.ws.terminate();
        continue;
      }
      c.alive = false;
      if (c.peer) {
        c.awaiting = ++this.#pings;
        this.#write(c, { t: 'ping', n: c.awaiting });
      } else {
        c.awaiting = 'ws';
        c.ws.ping();
      }
    }
  }

  /** Closes every connection (1001); sockets that do not finish the handshake in time are cut. */
  async closeAll(graceMs = 1000): Promise<void> {
    // What was received is stored before the store goes away.
    this.#sends.flush();
    this.#closing = true;
    const closed = [...this.#connections].map(
      (c) => new Promise<void>((resolve) => c.ws.once('close', () => resolve())),
    );
    for (const c of this.#connections) {
      c.endReason = 'relay shutting down';
      c.ws.close(1001, 'relay shutting down');
    }
    const timer = setTimeout(() => this.#connections.forEach((c) => c.ws.terminate()), graceMs);
    await Promise.all(closed);
    clearTimeout(timer);
  }

  #onMessage(c: Connection, data: RawData, isBinary: boolean): void {
    if (c.closed || this.#closing) return;
    try {
      this.#handle(c, data, isBinary);
    } catch (e) {
      this.#opts.log(`relay: #${c.serial} internal error: ${(e as Error).message}`);
      c.endReason = 'internal error';
      this.#close(c, CLOSE_INTERNAL, 'internal error');
    }
  }

  #handle(c: Connection, data: RawData, isBinary: boolean): void {
    this.#opts.tap?.({ direction: 'in', channel: 'ws', conn: c.serial, head: '', bytes: toBytes(data) });
    if (!isBinary) return this.#fail(c, 'malformed', 'relay: text messages are not sov-relay/1');
    if (c.peer) {
      const decision = c.limiter.check();
      if (decision === 'close') return this.#fail(c, 'rate-limited', 'relay: sustained rate limit violation');
      if (decision === 'drop') return this.#reject(c, 'rate-limited', 'relay: rate limit exceeded, message dropped');
    }
    const bytes = toBytes(data);
    const decoded = decodeEndpointMessage(bytes);
    if (!decoded.ok) return this.#onUndecodable(c, bytes, decoded.error.reason);
    const msg = decoded.value;
    if (!c.peer) {
      return msg.t === 'auth' ? this.#auth(c, msg) : this.#fail(c, 'not-authenticated', 'relay: auth first');
    }
    if (msg.t === 'auth') return this.#fail(c, 'malformed', 'relay: already authenticated');
    if (msg.t === 'send') return this.#send(c, c.peer, msg);
    if (msg.t === 'admit') return this.#admit(c, c.peer, msg.record);
    if (msg.t === 'commit' || msg.t === 'commits') return this.#sequencing(c, c.peer, msg);
    if (msg.t === 'pong') {
      if (msg.n === c.awaiting) c.alive = true;
      return;
    }
    this.#opts.store.ack(c.peer.topic, c.peer.endpoint, msg.ids);
  }

  #onUndecodable(c: Connection, bytes: Uint8Array, reason: string): void {
    if (!isOversizeSend(bytes)) return this.#fail(c, 'malformed', reason);
    if (!c.peer) return this.#fail(c, 'not-authenticated', 'relay: auth first');
    this.#reject(c, 'frame-too-large', `relay: frame body exceeds ${MAX_FRAME_BODY} bytes`);
  }

  #auth(c: Connection, msg: AuthMessage): void {
    clearTimeout(c.authTimer);
    if (!verifyAuth(c.nonce, msg)) return this.#fail(c, 'auth-failed', 'relay: auth signature does not verify');
    const topic = msg.topic.slice();
    const endpoint = msg.endpoint.slice();
    const topicHex = toHex(topic);
    const { store } = this.#opts;
    const invite = msg.invite?.slice() ?? this.#stored(() => store.invitedWith(topic, endpoint));
    const standing = this.#standing(topic, endpoint, invite);
    if (!standing) {
      const why =
        this.#opts.founding === false && !this.#list(topic)
          ? 'relay: founding a mesh is closed on this relay (its operator allows it with --founding open)'
          : "relay: this endpoint is not on the group's admission list";
      return this.#fail(c, 'not-admitted', why);
    }
    const key = `${topicHex}:${toHex(endpoint)}`;
    const peer: Peer = { key, topicHex, topic, endpoint, label: short(endpoint), invite, standing };
    c.peer = peer;
    this.#replaceSession(peer.key, c);
    if (this.#opts.admission === 'open') store.noteMember(topic, endpoint);
    else if (standing.kind === 'invited' && msg.invite) store.noteInvited(topic, endpoint, msg.invite);
    this.#opts.log(`relay: #${c.serial} auth endpoint=${peer.label} topic=${short(topic)} as ${standing.kind}`);
    const proof = ed25519.sign(relayProofPayload(c.nonce, msg.cnonce, topic, endpoint), this.#opts.identity.secretKey);
    // The version in force, so that an admin numbers its next list by counting on from it.
    const inForce = this.#list(topic)?.version;
    this.#write(c, { t: 'ready', endpoint, proof, ...(inForce === undefined ? {} : { admission: inForce }) });
    this.#pump(c);
  }

  #stored<T>(read: () => T): T | undefined {
    return this.#opts.admission === 'open' ? undefined : read();
  }

  /**
   * A topic's admission list, read through a bounded cache of the lists that exist: a topic
   * with none (anyone may name any topic) is asked of the store each time and never kept.
   */
  #list(topic: Uint8Array): AdmissionList | undefined {
    const id = toHex(topic);
    const cached = this.#lists.get(id);
    if (cached) return cached;
    const record = this.#opts.store.admission(topic);
    const decoded = record && decodeAdmission(record);
    if (!decoded?.ok) return undefined;
    this.#remember(id, decoded.value.list);
    return decoded.value.list;
  }

  #remember(id: string, list: AdmissionList): void {
    this.#lists.delete(id);
    this.#lists.set(id, list);
    if (this.#lists.size > MAX_CACHED_LISTS) this.#lists.delete(this.#lists.keys().next().value!);
  }

  /** How `endpoint` is served under `topic` now; undefined when it is not. */
  #standing(topic: Uint8Array, endpoint: Uint8Array, invite: Uint8Array | undefined): SessionStanding | undefined {
    if (this.#opts.admission === 'open') return { kind: 'member' };
    const list = this.#list(topic);
    if (!list) return this.#opts.founding === false ? undefined : { kind: 'founding' };
    return standingOf(list, endpoint, invite, this.#opts.now());
  }

  /** A new admission list from a session of its topic: checked, stored, and enforced at once. */
  #admit(c: Connection, peer: Peer, record: Uint8Array): void {
    if (this.#opts.admission === 'open') return this.#reject(c, 'admission-refused', 'relay: admission is open here');
    const decoded = decodeAdmission(record);
    const next = decoded.ok ? nextAdmission(peer.topic, this.#list(peer.topic), decoded.value.list) : decoded;
    if (!next.ok) return this.#reject(c, 'admission-refused', `relay: ${next.error.reason}`);
    this.#opts.store.setAdmission(peer.topic, record);
    this.#remember(peer.topicHex, next.value);
    const { version, endpoints, invites } = next.value;
    this.#opts.log(
      `relay: topic=${short(peer.topic)} admission list version ${version}: ${endpoints.length} endpoints, ${invites.length} invites`,
    );
    this.#enforce(peer.topic);
    // Every member's session of the topic is told (the list's own pusher too), so that each
    // admin numbers its next list above this one; sessions the list removed were closed above.
    for (const session of this.#sessions.values()) {
      const p = session.peer;
      if (p?.topicHex !== peer.topicHex || this.#standing(p.topic, p.endpoint, p.invite)?.kind !== 'member') continue;
      this.#write(session, { t: 'admitted', version });
    }
  }

  /** Closes the sessions and drops the mailboxes the list in force no longer serves. */
  #enforce(topic: Uint8Array): void {
    const topicHex = toHex(topic);
    for (const session of this.#sessions.values()) {
      const p = session.peer;
      if (!p || p.topicHex !== topicHex) continue;
      const standing = this.#standing(topic, p.endpoint, p.invite);
      if (standing) p.standing = standing;
      else this.#fail(session, 'not-admitted', 'relay: this endpoint was removed from the admission list');
    }
    const { store } = this.#opts;
    for (const endpoint of store.endpointsOf(topic)) {
      const invite = store.invitedWith(topic, endpoint);
      const standing = this.#standing(topic, endpoint, invite);
      // A joiner the list now names is a member: the invitation it came in with is not kept.
      if (standing?.kind === 'member' && invite) store.forgetInvited(topic, endpoint);
      if (standing) continue;
      const dropped = store.dropEndpoint(topic, endpoint);
      this.#opts.log(`relay: topic=${short(topic)} dropped endpoint=${short(endpoint)} (${dropped} frames)`);
    }
  }

  /** Commits for the blind sequencer (hub-sequencing.ts). */
  #sequencing(c: Connection, peer: Peer, msg: CommitMessage | CommitsMessage): void {
    const port: SequencingPort = {
      sequencer: this.#opts.sequencer,
      list: (topic) => this.#list(topic),
      write: (m) => this.#write(c, m),
      reject: (code, message) => this.#reject(c, code, message),
      broadcast: (m) => this.#broadcast(peer, m),
      count: (reason) => this.#count(reason),
      log: (line) => this.#opts.log(line.replace('relay: ', `relay: #${c.serial} `)),
    };
    sequence(port, { topic: peer.topic, endpoint: peer.endpoint, member: peer.standing.kind === 'member' }, msg);
  }

  #broadcast(from: Peer, msg: RelayToEndpoint): void {
    for (const session of this.#sessions.values()) {
      const p = session.peer;
      if (p && p !== from && p.topicHex === from.topicHex && p.standing.kind === 'member') this.#write(session, msg);
    }
  }

  /** Whether `endpoint` may use the HTTP mailbox API under `topic`: a member, never a joiner. */
  serves(topic: Uint8Array, endpoint: Uint8Array): boolean {
    if (this.#opts.admission === 'open') return this.#opts.store.isMember(topic, endpoint);
    return this.#standing(topic, endpoint, undefined)?.kind === 'member';
  }

  #replaceSession(key: string, c: Connection): void {
    const old = this.#sessions.get(key);
    this.#sessions.set(key, c);
    if (old === undefined || old === c) return;
    old.endReason = `replaced by #${c.serial}`;
    this.#close(old, CLOSE_REPLACED, 'replaced by a newer session');
  }

  #send(c: Connection, peer: Peer, msg: SendMessage): void {
    const { standing } = peer;
    if (standing.kind === 'founding') return this.#reject(c, 'not-admitted', 'relay: push an admission list first');
    if (standing.kind === 'invited' && toHex(standing.by) !== toHex(msg.to)) {
      return this.#reject(c, 'not-admitted', 'relay: a joiner may write only to its inviter');
    }
    const refused = this.#refusedRecipient(peer.topic, msg.to);
    if (refused) return this.#reject(c, refused.code, refused.message);
    const frame = { topic: peer.topic, recipient: msg.to, sender: peer.endpoint, body: msg.body };
    this.#sends.add({ c, frame }, frame);
  }

  #refusedRecipient(topic: Uint8Array, to: Uint8Array): SubmitError | undefined {
    const { store } = this.#opts;
    if (this.#opts.admission === 'enforce') {
      if (!this.#standing(topic, to, store.invitedWith(topic, to))) {
        return { code: 'unknown-recipient', message: 'relay: recipient is not admitted under this topic' };
      }
    } else if (!this.#opts.allowUnknownRecipients && !store.isMember(topic, to)) {
      return { code: 'unknown-recipient', message: 'relay: recipient never connected under this topic' };
    }
    return undefined;
  }

  #forward(frame: NewFrame, id: number): void {
    const target = this.#sessions.get(`${toHex(frame.topic)}:${toHex(frame.recipient)}`);
    if (target) this.#deliver(target, { t: 'frame', id, from: frame.sender, body: frame.body });
  }

  /**
   * Store-and-forward of one frame from an authenticated sender, whatever carried it (a
   * WebSocket `send` or the HTTP mailbox API): stored durably under (topic, to) first,
   * then forwarded at once if `to` has a live session under the same topic.
   */
  submit(topic: Uint8Array, from: Uint8Array, to: Uint8Array, body: Uint8Array): Result<number, SubmitError> {
    const refused = this.#refusedRecipient(topic, to);
    if (refused) return err(refused);
    // Sends that came in before this one are stored before it, as they arrived.
    this.#sends.flush();
    const stored = this.#opts.store.enqueue(topic, to, from, body);
    if (!stored.ok) return err({ code: 'mailbox-full', message: stored.error.reason });
    this.#forward({ topic, recipient: to, sender: from, body }, stored.value);
    return stored;
  }

  #deliver(c: Connection, frame: Extract<RelayToEndpoint, { t: 'frame' }>): void {
    if (c.closed) return;
    if (c.pumping || c.ws.bufferedAmount > HIGH_WATER) return this.#pump(c);
    c.cursor = frame.id;
    this.#write(c, frame);
  }

  #pump(c: Connection): void {
    if (c.pumping || c.closed) return;
    c.pumping = true;
    this.#pumpPage(c);
  }

  /** Writes one page of stored frames; the last write's callback fetches the next page. */
  #pumpPage(c: Connection): void {
    if (c.closed || this.#closing || !c.peer) return;
    const frames = this.#opts.store.pending(c.peer.topic, c.peer.endpoint, c.cursor, PAGE_FRAMES);
    if (frames.length === 0) {
      c.pumping = false;
      return;
    }
    let bytes = 0;
    for (const [i, f] of frames.entries()) {
      bytes += f.body.length;
      const last = i === frames.length - 1 || bytes >= PAGE_BYTES;
      c.cursor = f.id;
      this.#write(c, { t: 'frame', id: f.id, from: f.sender, body: f.body }, last ? this.#afterPage(c) : undefined);
      if (last) return;
    }
  }

  #afterPage(c: Connection): (e?: Error | null) => void {
    return (e) => {
      if (!e) this.#pumpPage(c);
    };
  }

  #write(c: Connection, msg: RelayToEndpoint, done?: (e?: Error | null) => void): void {
    if (c.closed) return;
    const bytes = encodeRelayMessage(msg);
    this.#opts.tap?.({ direction: 'out', channel: 'ws', conn: c.serial, head: '', bytes });
    c.ws.send(bytes, { binary: true }, done);
  }

  /** Non-fatal: tell the endpoint, keep the connection. */
  #reject(c: Connection, code: RelayErrorCode, message: string): void {
    this.#count(code);
    this.#write(c, { t: 'error', code, message });
  }

  #count(reason: string): void {
    this.#refused.set(reason, (this.#refused.get(reason) ?? 0) + 1);
  }

  /** Messages and connections refused since start, by reason (shown by /api/health). */
  refusals(): Record<string, number> {
    return Object.fromEntries(this.#refused);
  }

  /** Fatal: tell the endpoint, then close. */
  #fail(c: Connection, code: RelayErrorCode, message: string): void {
    if (c.closed) return;
    this.#count(code);
    this.#write(c, { t: 'error', code, message });
    c.endReason = code;
    this.#close(c, CLOSE_POLICY, code);
  }

  #close(c: Connection, code: number, reason: string): void {
    if (c.closed) return;
    c.closed = true;
    clearTimeout(c.authTimer);
    c.ws.close(code, reason);
  }

  #onClose(c: Connection, code: number): void {
    c.closed = true;
    clearTimeout(c.authTimer);
    this.#connections.delete(c);
    if (c.peer && this.#sessions.get(c.peer.key) === c) this.#sessions.delete(c.peer.key);
    const who = c.peer ? ` endpoint=${c.peer.label}` : '';
    this.#opts.log(`relay: #${c.serial} disconnect${who} code=${code} reason=${c.endReason}`);
  }
}
