/**
 * One endpoint's WebSocket session with its relay (protocol in
 * core/relay-wire.ts): answers the challenge, reports readiness, hands every
 * frame to the owner, and reconnects with capped exponential backoff while it
 * is wanted and the browser believes it is online. Going offline closes the
 * socket for real (an open WebSocket survives DevTools' offline emulation), so
 * the relay sees the endpoint leave and stores frames for it instead.
 */
import { toHex } from '../core/bytes.js';
import {
  decodeRelayMessage,
  encodeRelayMessage,
  type EndpointToRelay,
  type RelayToEndpoint,
} from '../core/relay-wire.js';

export type RelayState = 'offline' | 'connecting' | 'ready';

export type RelayHandlers = {
  /** Signs the challenge with the endpoint key (in the crypto worker). */
  authenticate(nonce: Uint8Array): Promise<{ topic: Uint8Array; endpoint: Uint8Array; sig: Uint8Array }>;
  onState(state: RelayState, detail?: string): void;
  onFrame(frame: Extract<RelayToEndpoint, { t: 'frame' }>): void;
  /** The relay refused something we sent (too large, rate-limited, mailbox full, …). */
  onRelayError(code: string, message: string): void;
};

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
    socket.onclose = () => {
      if (socket !== this.#socket) return;
      this.#socket = undefined;
      this.#setState('offline', 'connection closed');
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
        const auth = await this.#handlers.authenticate(message.nonce);
        if (socket.readyState === WebSocket.OPEN) socket.send(encodeRelayMessage({ t: 'auth', ...auth }));
        return;
      }
      case 'ready':
        this.#backoff = MIN_BACKOFF_MS;
        return this.#setState('ready', toHex(message.endpoint).slice(0, 8));
      case 'frame':
        return this.#handlers.onFrame(message);
      case 'error':
        return this.#handlers.onRelayError(message.code, message.message);
    }
  }
}
