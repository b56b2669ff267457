/**
 * A sov-relay/1 WebSocket client for tests: queues every relay message and the close, and
 * joins a topic with any signing function (noble secret keys or a WebCrypto endpoint key).
 */
import { expect } from 'vitest';
import { ed25519 } from '@noble/curves/ed25519.js';
import { randomBytes as nodeRandomBytes } from 'node:crypto';
import { WebSocket } from 'ws';
import { bytesEqual, toHex } from '../../src/core/bytes.js';
import {
  decodeRelayMessage,
  encodeRelayMessage,
  relayAuthPayload,
  relayProofPayload,
  type EndpointToRelay,
  type RelayToEndpoint,
} from '../../src/core/relay-wire.js';

export type RelayMsg<T extends RelayToEndpoint['t']> = Extract<RelayToEndpoint, { t: T }>;

/** A test endpoint: a noble secret key and its public key, which is the endpoint id. */
export interface Key {
  readonly secret: Uint8Array;
  readonly id: Uint8Array;
}

export const key = (seed: number): Key => {
  const secret = new Uint8Array(32).fill(seed);
  return { secret, id: ed25519.getPublicKey(secret) };
};
const randomBytes = (n: number): Uint8Array => new Uint8Array(nodeRandomBytes(n));
export const bytes = (text: string): Uint8Array => new TextEncoder().encode(text);
export const text = (b: Uint8Array): string => new TextDecoder().decode(b);

export class RelayTestClient {
  readonly #inbox: RelayToEndpoint[] = [];
  readonly #waiters: Array<() => void> = [];
  closeCode: number | undefined;
  /** The relay key this session verified in `ready` (set by `joinRelay`). */
  relayKey: Uint8Array | undefined;
  readonly closed: Promise<number>;
  readonly ws: WebSocket;

  private constructor(ws: WebSocket) {
    this.ws = ws;
    ws.on('message', (data: Buffer) => {
      const decoded = decodeRelayMessage(new Uint8Array(data));
      if (!decoded.ok) throw new Error(`test client: ${decoded.error.reason}`);
      this.#inbox.push(decoded.value);
      this.#wake();
    });
    this.closed = new Promise((resolve) =>
      ws.on('close', (code: number) => {
        this.closeCode = code;
        this.#wake();
        resolve(code);
      }),
    );
  }

  /** Listeners are attached before the socket opens: the challenge may arrive in the same tick. */
  static async open(url: string): Promise<RelayTestClient> {
    const client = new RelayTestClient(new WebSocket(url));
    await new Promise<void>((resolve, reject) => {
      client.ws.once('open', () => resolve());
      client.ws.once('error', reject);
    });
    return client;
  }

  #wake(): void {
    for (const w of this.#waiters.splice(0)) w();
  }

  get queued(): number {
    return this.#inbox.length;
  }

  async next(): Promise<RelayToEndpoint> {
    while (this.#inbox.length === 0) {
      if (this.closeCode !== undefined) throw new Error(`test client: closed (${this.closeCode}) with empty inbox`);
      await new Promise<void>((resolve) => this.#waiters.push(resolve));
    }
    return this.#inbox.shift()!;
  }

  async expect<T extends RelayToEndpoint['t']>(t: T): Promise<RelayMsg<T>> {
    const msg = await this.next();
    expect(msg.t).toBe(t);
    return msg as RelayMsg<T>;
  }

  async expectError(code: string): Promise<void> {
    const msg = await this.expect('error');
    expect(msg.code).toBe(code);
  }

  send(msg: EndpointToRelay): void {
    this.ws.send(encodeRelayMessage(msg));
  }

  sendTo(to: Key, body: Uint8Array): void {
    this.send({ t: 'send', to: to.id, body });
  }

  async close(): Promise<void> {
    this.ws.close();
    await this.closed;
  }
}

/**
 * Opens a session and authenticates `endpoint` under `topic`; `sign` holds the
 * endpoint key. Checks the relay's proof against the key it announced (and
 * against `relayKey` when given), as every real client does.
 */
export async function joinRelay(
  wsUrl: string,
  topic: Uint8Array,
  endpoint: Uint8Array,
  sign: (payload: Uint8Array) => Uint8Array | Promise<Uint8Array>,
  options: { invite?: Uint8Array; relayKey?: Uint8Array } = {},
): Promise<RelayTestClient> {
  const client = await RelayTestClient.open(wsUrl);
  const challenge = await client.expect('challenge');
  if (options.relayKey) expect(toHex(challenge.relay)).toBe(toHex(options.relayKey));
  const sig = await sign(relayAuthPayload(challenge.nonce, topic, endpoint));
  const cnonce = randomBytes(32);
  client.send({ t: 'auth', topic, endpoint, sig, cnonce, ...(options.invite ? { invite: options.invite } : {}) });
  const ready = await client.expect('ready');
  expect(bytesEqual(ready.endpoint, endpoint)).toBe(true);
  const payload = relayProofPayload(challenge.nonce, cnonce, topic, endpoint);
  expect(ed25519.verify(ready.proof, payload, challenge.relay)).toBe(true);
  client.relayKey = challenge.relay;
  return client;
}
