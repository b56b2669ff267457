/**
 * A sov-relay/1 endpoint session for Node (headless peers, benchmarks), over the
 * `ws` package; the browser's is relay-connection.ts over the WebSocket global.
 * Protocol in core/relay-wire.ts: answer the challenge with the endpoint key,
 * wait for `ready`, then send opaque bodies and receive frames in id order.
 *
 * One connection, no reconnect: the owner decides when to come back. Frames
 * are handed over as they arrive; the owner acknowledges them (`ack`) once
 * their effects are durable, and the relay keeps unacknowledged ones for the
 * next session.
 */
import { ed25519 } from '@noble/curves/ed25519.js';
import { randomBytes as nodeRandomBytes } from 'node:crypto';
import { WebSocket, type RawData } from 'ws';
import { bytesEqual } from '../core/bytes.js';
import {
  decodeRelayMessage,
  encodeRelayMessage,
  MAX_RELAY_MESSAGE,
  relayAuthPayload,
  relayProofPayload,
  type EndpointToRelay,
  type RelayToEndpoint,
} from '../core/relay-wire.js';

export type RelayFrame = Extract<RelayToEndpoint, { t: 'frame' }>;

export type NodeRelayOptions = {
  readonly url: string;
  readonly topic: Uint8Array;
  /** The endpoint id: its Ed25519 public key. */
  readonly endpoint: Uint8Array;
  /** Signs with the endpoint key. */
  readonly sign: (payload: Uint8Array) => Uint8Array | Promise<Uint8Array>;
  /** Called for every frame, also for stored ones that arrive before `connect` resolves. */
  readonly onFrame: (frame: RelayFrame, client: NodeRelayClient) => void;
  /** Non-fatal relay errors (rate-limited, mailbox-full, …). */
  readonly onError?: (code: string, message: string) => void;
  /** The relay key to insist on; without it the key the relay proves is accepted (first contact). */
  readonly relayKey?: Uint8Array;
  /** An invitation id, for a joiner the admission list does not name yet. */
  readonly invite?: Uint8Array;
  /** Called with the relay's proven key once the session is ready. */
  readonly onRelayKey?: (key: Uint8Array) => void;
  /** Blind-sequencer answers and pushes (runtime/sequencer-port.ts). */
  readonly onSequencer?: (
    message: Extract<RelayToEndpoint, { t: 'sequenced' | 'refused' | 'accepted' | 'commit-log' }>,
  ) => void;
};

function verifyProof(proof: Uint8Array, payload: Uint8Array, relay: Uint8Array): boolean {
  try {
    return ed25519.verify(proof, payload, relay, { zip215: false });
  } catch {
    return false;
  }
}

function toBytes(data: RawData): Uint8Array {
  const buffer = Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data as ArrayBuffer);
  return new Uint8Array(buffer.buffer, buffer.byteOffset, buffer.byteLength);
}

export class NodeRelayClient {
  readonly #ws: WebSocket;
  readonly #closed: Promise<void>;

  private constructor(ws: WebSocket) {
    this.#ws = ws;
    this.#closed = new Promise((resolve) => ws.once('close', () => resolve()));
  }

  /** Opens a session and resolves once the relay has accepted the endpoint (`ready`). */
  static connect(options: NodeRelayOptions): Promise<NodeRelayClient> {
    const ws = new WebSocket(options.url, { perMessageDeflate: false, maxPayload: MAX_RELAY_MESSAGE });
    const client = new NodeRelayClient(ws);
    return new Promise((resolve, reject) => {
      let ready = false;
      let challenge: { nonce: Uint8Array; cnonce: Uint8Array; relay: Uint8Array } | undefined;
      const fail = (reason: string) => {
        if (ready) return;
        ws.terminate();
        reject(new Error(`node-relay-client: ${reason}`));
      };
      ws.once('error', (e) => fail(e.message));
      ws.once('close', (code) => fail(`closed before ready (${code})`));
      ws.on('message', (data, isBinary) => {
        if (!isBinary) return fail('text message from relay');
        const decoded = decodeRelayMessage(toBytes(data));
        if (!decoded.ok) {
          ws.close(4000, 'malformed relay message');
          return fail(decoded.error.reason);
        }
        const message = decoded.value;
        switch (message.t) {
          case 'challenge': {
            if (options.relayKey && !bytesEqual(options.relayKey, message.relay))
              return fail('relay announced another key');
            const cnonce = new Uint8Array(nodeRandomBytes(32));
            challenge = { nonce: message.nonce, cnonce, relay: message.relay };
            const { topic, endpoint, invite } = options;
            return void Promise.resolve(options.sign(relayAuthPayload(message.nonce, topic, endpoint)))
              .then((sig) => client.#send({ t: 'auth', topic, endpoint, sig, cnonce, ...(invite ? { invite } : {}) }))
              .catch((e: unknown) => fail(`signing failed: ${(e as Error).message}`));
          }
          case 'ready': {
            const proven =
              challenge !== undefined &&
              verifyProof(
                message.proof,
                relayProofPayload(challenge.nonce, challenge.cnonce, options.topic, options.endpoint),
                challenge.relay,
              );
            if (!proven) {
              ws.close(4001, 'relay not proven');
              return fail('the relay could not prove its identity');
            }
            ready = true;
            options.onRelayKey?.(challenge!.relay);
            return resolve(client);
          }
          case 'admitted':
            return;
          case 'ping':
            return client.#send({ t: 'pong', n: message.n });
          case 'frame':
            return options.onFrame(message, client);
          case 'error':
            return options.onError?.(message.code, message.message);
          case 'sequenced':
          case 'refused':
          case 'accepted':
          case 'commit-log':
            return options.onSequencer?.(message);
        }
      });
    });
  }

  /** Store-and-forward of an opaque body to another endpoint of the same topic. */
  send(to: Uint8Array, body: Uint8Array): void {
    this.#send({ t: 'send', to, body });
  }

  /** Pushes an admin-signed admission list (core/admission.ts) for this topic. */
  admit(record: Uint8Array): void {
    this.#send({ t: 'admit', record });
  }

  /** Sends a sequencer message (`commit`, `commits`) to the relay. */
  sequencer(message: Extract<EndpointToRelay, { t: 'commit' | 'commits' }>): void {
    this.#send(message);
  }

  /** Drops delivered frames from this endpoint's mailbox. */
  ack(ids: readonly number[]): void {
    if (ids.length > 0) this.#send({ t: 'ack', ids });
  }

  get open(): boolean {
    return this.#ws.readyState === WebSocket.OPEN;
  }

  close(): Promise<void> {
    if (this.#ws.readyState === WebSocket.CLOSED) return Promise.resolve();
    this.#ws.close(1000, 'done');
    return this.#closed;
  }

  #send(message: EndpointToRelay): void {
    if (this.#ws.readyState !== WebSocket.OPEN) throw new Error('node-relay-client: not connected');
    this.#ws.send(encodeRelayMessage(message), { binary: true });
  }
}
