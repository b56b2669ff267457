/**
 * A headless Node peer for the relay benchmarks: a Replica on a memory store,
 * its SyncEngine, and a sov-relay/1 session (src/runtime/node-relay-client.ts)
 * carrying peer-wire messages sealed end to end as frame.ts seals them — the
 * same messages, bytes and rules as the browser, minus IndexedDB and the crypto
 * worker. AES-GCM (frames and envelopes) runs natively (runtime/node-aead.ts).
 *
 * Incoming frames are handed to the engine as they arrive, without waiting for
 * the previous one: Replica.ingest opens a batch while earlier ones are being
 * admitted and admits them in arrival order. A relay frame is acknowledged only
 * after its batch is durably applied (acks are coalesced per event-loop turn).
 */
import { ed25519 } from '@noble/curves/ed25519.js';
import { fromHex, toHex } from '../../src/core/bytes.js';
import type { DomainKeyring } from '../../src/core/domain-keys.js';
import { frameKey } from '../../src/core/frame.js';
import { topicOf } from '../../src/core/identity.js';
import type { EnvelopeOpener } from '../../src/core/open.js';
import { decodePeerMessage, encodePeerMessage, type PeerMessage } from '../../src/core/peer-wire.js';
import type { Clock, Signer, Verifier } from '../../src/core/ports.js';
import { Replica } from '../../src/core/replica.js';
import { SyncEngine, type SyncListener } from '../../src/core/sync.js';
import { nodeEnvelopes, nodeOpenFrame, nodeSealFrame } from '../../src/runtime/node-aead.js';
import { NodeRelayClient, type RelayFrame } from '../../src/runtime/node-relay-client.js';
import { webRandom, webVerifier } from '../../src/runtime/webcrypto.js';
import { MemoryReplicaStore } from '../../src/storage/memory-store.js';

export type Group = {
  readonly secret: Uint8Array;
  readonly keyring: DomainKeyring;
  /** Signer ids (hex) every peer trusts as admins. */
  readonly anchors: string[];
};

export type PeerOptions = {
  readonly relayUrl: string;
  readonly group: Group;
  readonly signer: Signer;
  readonly clock: Clock;
  readonly verifier?: Verifier;
  readonly opener?: EnvelopeOpener;
  readonly listener?: SyncListener;
};

export class NodePeer {
  readonly store = new MemoryReplicaStore();
  readonly replica: Replica;
  readonly engine: SyncEngine;
  readonly endpoint: Uint8Array;
  readonly #endpointKey: Uint8Array;
  readonly #options: PeerOptions;
  readonly #topic: Uint8Array;
  readonly #frameKey: Uint8Array;
  #client: NodeRelayClient | undefined;
  #pendingAcks: number[] = [];

  constructor(options: PeerOptions) {
    this.#options = options;
    this.#endpointKey = ed25519.utils.randomSecretKey();
    this.endpoint = ed25519.getPublicKey(this.#endpointKey);
    this.#topic = topicOf(options.group.secret);
    this.#frameKey = frameKey(options.group.secret);
    const anchors = options.group.anchors;
    this.replica = new Replica({
      store: this.store,
      signer: options.signer,
      verifier: options.verifier ?? webVerifier(),
      envelopes: nodeEnvelopes(options.group.keyring, webRandom),
      ...(options.opener ? { opener: options.opener } : {}),
      trust: { self: toHex(options.signer.publicKey), anchors: () => anchors },
      clock: options.clock,
    });
    this.engine = new SyncEngine(
      this.replica,
      this.store,
      { send: async (peer, message) => this.sendMessage(fromHex(peer)!, message) },
      options.listener,
    );
  }

  get id(): string {
    return toHex(this.endpoint);
  }

  async connect(): Promise<void> {
    this.#client = await NodeRelayClient.connect({
      url: this.#options.relayUrl,
      topic: this.#topic,
      endpoint: this.endpoint,
      sign: (payload) => ed25519.sign(payload, this.#endpointKey),
      onFrame: (frame, client) => this.#onFrame(frame, client),
      onError: (code, message) => process.stderr.write(`bench peer: relay error ${code}: ${message}\n`),
    });
    await this.engine.connected();
  }

  async disconnect(): Promise<void> {
    this.engine.disconnected();
    await this.#client?.close();
    this.#client = undefined;
  }

  /** Seals a peer-wire message to another endpoint and hands it to the relay. */
  sendMessage(to: Uint8Array, message: PeerMessage): void {
    const body = nodeSealFrame(this.#frameKey, this.#topic, this.endpoint, to, encodePeerMessage(message), webRandom);
    this.sendOpaque(to, body);
  }

  sendOpaque(to: Uint8Array, body: Uint8Array): void {
    if (!this.#client) throw new Error('bench peer: not connected');
    this.#client.send(to, body);
  }

  #onFrame(frame: RelayFrame, client: NodeRelayClient): void {
    this.#client ??= client;
    const plain = nodeOpenFrame(this.#frameKey, this.#topic, frame.from, this.endpoint, frame.body);
    const message = plain.ok ? decodePeerMessage(plain.value) : undefined;
    if (!message?.ok || (message.value.t !== 'events' && message.value.t !== 'ack')) return this.#ack(frame.id);
    this.engine.receive(toHex(frame.from), message.value).then(
      () => this.#ack(frame.id),
      (e: unknown) => process.stderr.write(`bench peer: receive failed: ${(e as Error).message}\n`),
    );
  }

  #ack(id: number): void {
    if (this.#pendingAcks.push(id) > 1) return;
    setImmediate(() => {
      const ids = this.#pendingAcks;
      this.#pendingAcks = [];
      if (this.#client?.open) this.#client.ack(ids);
    });
  }
}
