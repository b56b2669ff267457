/**
 * One endpoint's WebSocket session with its relay (protocol in
 * core/relay-wire.ts): answers the challenge, reports readiness, hands every
 * frame to the owner, and reconnects with capped exponential backoff while it
 * is wanted and the browser believes it is online. Going offline closes the
 * socket for real (an open WebSocket survives DevTools' offline emulation), so
 * the relay sees the endpoint leave and stores frames for it instead.
 */
import { ed25519 } from '@noble/curves/ed25519.js';
import { bytesEqual, toHex } from '../core/bytes.js';
import {
  decodeRelayMessage,
  encodeRelayMessage,
  relayProofPayload,
  type EndpointToRelay,
  type RelayToEndpoint,
} from '../core/relay-wire.js';

export type RelayState = 'offline' | 'connecting' | 'ready';

export type RelayAuth = { topic: Uint8Array; endpoint: Uint8Array; sig: Uint8Array; invite?: Uint8Array };

export type RelayHandlers = {
  /** Signs the challenge with the endpoint key (in the crypto worker); `invite` while joining. */
  authenticate(nonce: Uint8Array): Promise<RelayAuth>;
  /**
   * The relay key this endpoint pinned (a joiner's comes from its ticket), or
   * undefined on a founder's first contact, when the key the relay proves is
   * handed to `onRelayKey` to be pinned from then on.
   */
  pinnedRelayKey(): Uint8Array | undefined;
  onRelayKey(key: Uint8Array): void;
  /**
   * Admission lists to push whenever the session becomes ready (admins only); `inForce` is
   * the version of the list the relay enforces, if it has one.
   */
  admissionRecord?(inForce: number | undefined): Promise<Uint8Array | undefined>;
  /** The relay took an admission list of this topic (anyone's): the version now in force. */
  onAdmitted?(version: number): void;
  onState(state: RelayState, detail?: string): void;
  onFrame(frame: Extract<RelayToEndpoint, { t: 'frame' }>): void;
  /** The blind sequencer's answers and pushes (runtime/sequencer-port.ts). */
  onSequencer?(message: Extract<RelayToEndpoint, { t: 'sequenced' | 'refused' | 'accepted' | 'commit-log' }>): void;
  /** The relay refused something we sent (too large, rate-limited, mailbox full, …). */
  onRelayError(code: string, message: string): void;
};

/** Refusals after which the relay closes the session. */
const FATAL = new Set(['not-admitted', 'auth-failed', 'not-authenticated', 'malformed']);

type PendingAuth = { nonce: Uint8Array; cnonce: Uint8Array; relay: Uint8Array; auth: RelayAuth };

const MIN_BACKOFF_MS = 500;
const MAX_BACKOFF_MS = 15_000;

export class RelayConnection {
  readonly #url: string;
  readonly #handlers: RelayHandlers;
  #socket: WebSocket | undefined;
  #wanted = false;
  #backoff = MIN_BACKOFF_MS;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #state: RelayState = 'offline';
  /** This connection's challenge, our nonce and the relay key it announced, until `ready` proves it. */
  #pending: PendingAuth | undefined;
  /** Why the relay last refused this session (shown until the next successful session). */
  #refusal: string | undefined;

  constructor(url: string, handlers: RelayHandlers) {
    this.#url = url;
    this.#handlers = handlers;
  }

  get state(): RelayState {
    return this.#state;
  }

  start(): void {
    this.#wanted = true;
    this.#connect();
  }

  stop(): void {
    this.#wanted = false;
    clearTimeout(this.#timer);
    this.#socket?.close(1000, 'stopped');
    this.#socket = undefined;
    this.#setState('offline');
  }

  /** Drops the current socket (e.g. the browser went offline) and retries later. */
  suspend(reason: string): void {
    clearTimeout(this.#timer);
    this.#socket?.close(1000, reason);
    this.#socket = undefined;
    this.#setState('offline', reason);
  }

  /** Reconnects now if wanted and not connected (e.g. the browser came back online). */
  resume(): void {
    if (this.#wanted && !this.#socket) {
      this.#backoff = MIN_BACKOFF_MS;
      this.#connect();
    }
  }

  send(to: Uint8Array, body: Uint8Array): boolean {
    return this.#send({ t: 'send', to, body });
  }

  /** Pushes an admin-signed admission list for this group to the relay. */
  admit(record: Uint8Array): boolean {
    return this.#send({ t: 'admit', record });
  }

  /** Posts a commit bundle to the blind sequencer, or asks for a group's accepted commits. */
  sequencer(message: Extract<EndpointToRelay, { t: 'commit' | 'commits' }>): boolean {
    return this.#send(message);
  }

  ack(ids: readonly number[]): boolean {
    return ids.length === 0 || this.#send({ t: 'ack', ids });
  }

  #send(message: EndpointToRelay): boolean {
    if (this.#state !== 'ready' || !this.#socket) return false;
    this.#socket.send(encodeRelayMessage(message));
    return true;
  }

  #setState(state: RelayState, detail?: string): void {
    this.#state = state;
    this.#handlers.onState(state, detail);
  }

  #connect(): void {
    if (typeof navigator !== 'undefined' && !navigator.onLine) return this.#setState('offline', 'browser offline');
    clearTimeout(this.#timer);
    const socket = new WebSocket(this.#url);
    socket.binaryType = 'arraybuffer';
    this.#socket = socket;
    this.#setState('connecting');
    socket.onmessage = (event) => {
      if (socket !== this.#socket) return;
      if (!(event.data instanceof ArrayBuffer)) return socket.close(4000, 'text frame');
      void this.#handle(socket, new Uint8Array(event.data));
    };
    // A refused or failed connection is followed by `close`, which reconnects. Without a
    // handler, Node's `ws` (the headless node's WebSocket) throws the error out of the process.
    socket.onerror = () => undefined;
    socket.onclose = () => {
      if (socket !== this.#socket) return;
      this.#socket = undefined;
      this.#setState('offline', this.#refusal ?? 'connection closed');
      this.#scheduleReconnect();
    };
  }

  #scheduleReconnect(): void {
    if (!this.#wanted) return;
    this.#timer = setTimeout(() => this.#connect(), this.#backoff);
    this.#backoff = Math.min(this.#backoff * 2, MAX_BACKOFF_MS);
  }

  async #handle(socket: WebSocket, bytes: Uint8Array): Promise<void> {
    const decoded = decodeRelayMessage(bytes);
    if (!decoded.ok) return socket.close(4000, 'malformed relay message');
    const message = decoded.value;
    switch (message.t) {
      case 'challenge': {
        const pinned = this.#handlers.pinnedRelayKey();
        if (pinned && !bytesEqual(pinned, message.relay)) return this.#unproven(socket, 'announced another key');
        const auth = await this.#handlers.authenticate(message.nonce);
        const cnonce = crypto.getRandomValues(new Uint8Array(32));
        this.#pending = { nonce: message.nonce, cnonce, relay: message.relay, auth };
        if (socket.readyState === WebSocket.OPEN) socket.send(encodeRelayMessage({ t: 'auth', ...auth, cnonce }));
        return;
      }
      case 'ready': {
        const pending = this.#pending;
        this.#pending = undefined;
        if (!pending || !this.#proven(pending, message.proof)) return this.#unproven(socket, 'proof does not verify');
        if (!this.#handlers.pinnedRelayKey()) this.#handlers.onRelayKey(pending.relay);
        this.#backoff = MIN_BACKOFF_MS;
        this.#refusal = undefined;
        // The admission list goes out before anything else this session sends: the relay takes
        // messages in order, so what the list names (this founder, a machine just admitted) is
        // served before its commits or fetches reach the sequencer.
        const record = await this.#handlers.admissionRecord?.(message.admission);
        if (record && socket.readyState === WebSocket.OPEN) socket.send(encodeRelayMessage({ t: 'admit', record }));
        this.#setState('ready', toHex(message.endpoint).slice(0, 8));
        return;
      }
      case 'admitted':
        return this.#handlers.onAdmitted?.(message.version);
      case 'ping':
        // Answered by this code, not the network stack: the relay learns the session is really read.
        if (socket.readyState === WebSocket.OPEN) socket.send(encodeRelayMessage({ t: 'pong', n: message.n }));
        return;
      case 'frame':
        return this.#handlers.onFrame(message);
      case 'sequenced':
      case 'refused':
      case 'accepted':
      case 'commit-log':
        return this.#handlers.onSequencer?.(message);
      case 'error':
        if (FATAL.has(message.code)) this.#refusal = `relay refused: ${message.message}`;
        return this.#handlers.onRelayError(message.code, message.message);
    }
  }

  #proven(pending: PendingAuth, proof: Uint8Array): boolean {
    const { nonce, cnonce, relay, auth } = pending;
    try {
      return ed25519.verify(proof, relayProofPayload(nonce, cnonce, auth.topic, auth.endpoint), relay, {
        zip215: false,
      });
    } catch {
      return false;
    }
  }

  /** A relay that cannot prove the pinned key is never used: close, report, retry later. */
  #unproven(socket: WebSocket, why: string): void {
    this.#refusal = `the relay could not prove its identity (${why})`;
    socket.close(4001, 'relay not proven');
    this.#handlers.onRelayError('relay-unproven', `the relay could not prove its identity (${why})`);
  }
}
