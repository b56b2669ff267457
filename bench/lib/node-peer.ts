/**
 * A headless Node peer for the relay benchmarks: a Replica on a memory store (or the one given),
 * its SyncEngine, and a sov-relay/1 session (src/runtime/node-relay-client.ts)
 * carrying peer-wire messages sealed end to end by runtime/frame-channel.ts
 * (HPKE-derived keys, WebCrypto AES-GCM) — the same messages, bytes and rules as
 * the browser, minus IndexedDB and the crypto worker. Envelope AES-GCM runs
 * through node:crypto (runtime/node-aead.ts). The group's `frameKeys` stands in
 * for the keyring's endpoint → frame-key bindings.
 *
 * Incoming frames are handed to the engine as they arrive, without waiting for
 * the previous one: Replica.ingest opens a batch while earlier ones are being
 * admitted and admits them in arrival order. A relay frame is acknowledged only
 * after its batch is durably applied (acks are coalesced per event-loop turn).
 * The relay enforces admission (bench/lib/admission.ts): an admin peer pushes
 * the group's list with `admit` before the group's other sessions open.
 */
import { everyTablePublic } from '../../src/core/sync-manifest.js';
import { ed25519 } from '@noble/curves/ed25519.js';
import { fromHex, toHex } from '../../src/core/bytes.js';
import type { DomainKeyring } from '../../src/core/domain-keys.js';
import { topicOf } from '../../src/core/identity.js';
import type { EnvelopeOpener } from '../../src/core/open.js';
import { decodePeerMessage, encodePeerMessage, type PeerMessage } from '../../src/core/peer-wire.js';
import type { Clock, Signer, Verifier } from '../../src/core/ports.js';
import { Replica } from '../../src/core/replica.js';
import type { ReplicaStore } from '../../src/core/store.js';
import { isDeliveryMessage, SyncEngine, type SyncListener } from '../../src/core/sync.js';
import { FrameChannel, generateFrameKey } from '../../src/runtime/frame-channel.js';
import { nodeEnvelopes } from '../../src/runtime/node-aead.js';
import { NodeRelayClient, type RelayFrame } from '../../src/runtime/node-relay-client.js';
import { webRandom, webVerifier } from '../../src/runtime/webcrypto.js';
import { MemoryReplicaStore } from '../../src/storage/memory-store.js';
import { pushAdmission } from './admission.ts';

export type Group = {
  readonly secret: Uint8Array;
  readonly keyring: DomainKeyring;
  /** Signer ids (hex) every peer trusts as admins. */
  readonly anchors: string[];
  /** Endpoint id (hex) → frame public key of every peer of the group. */
  readonly frameKeys: Map<string, Uint8Array>;
};

export type PeerOptions = {
  readonly relayUrl: string;
  readonly group: Group;
  readonly signer: Signer;
  readonly clock: Clock;
  readonly verifier?: Verifier;
  readonly opener?: EnvelopeOpener;
  readonly listener?: SyncListener;
  /** The peer's replica store: memory unless given (catchup-node gives SQLite). */
  readonly store?: ReplicaStore;
};

export class NodePeer {
  readonly store: ReplicaStore;
  readonly replica: Replica;
  readonly engine: SyncEngine;
  readonly endpoint: Uint8Array;
  readonly #endpointKey: Uint8Array;
  readonly #options: PeerOptions;
  readonly #topic: Uint8Array;
  readonly #channel: FrameChannel;
  #client: NodeRelayClient | undefined;
  #pendingAcks: number[] = [];
  /** Frames leave in the order they were sent and are handed on in the order they arrived. */
  #outbound: Promise<void> = Promise.resolve();
  #inbound: Promise<void> = Promise.resolve();

  /** A peer with fresh endpoint and frame keys, registered in the group's `frameKeys`. */
  static async create(options: PeerOptions): Promise<NodePeer> {
    return new NodePeer(options, await generateFrameKey());
  }

  private constructor(options: PeerOptions, frameKey: Awaited<ReturnType<typeof generateFrameKey>>) {
    this.#options = options;
    this.store = options.store ?? new MemoryReplicaStore();
    this.#endpointKey = ed25519.utils.randomSecretKey();
    this.endpoint = ed25519.getPublicKey(this.#endpointKey);
    this.#topic = topicOf(options.group.secret);
    this.#channel = new FrameChannel({
      endpoint: this.endpoint,
      frameKey,
      topic: this.#topic,
      clock: options.clock,
      random: webRandom,
    });
    options.group.frameKeys.set(toHex(this.endpoint), frameKey.publicKey);
    const anchors = options.group.anchors;
    this.replica = new Replica({
      store: this.store,
      signer: options.signer,
      verifier: options.verifier ?? webVerifier(),
      envelopes: nodeEnvelopes(options.group.keyring, webRandom),
      ...(options.opener ? { opener: options.opener } : {}),
      trust: { self: toHex(options.signer.publicKey), anchors: () => anchors },
      privacy: everyTablePublic,
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

  /** Pushes an admin-signed admission list from this peer's endpoint and waits until it is in force; not while connected. */
  admit(record: Uint8Array): Promise<void> {
    if (this.#client) throw new Error('bench peer: admit before connecting (one session per endpoint)');
    return pushAdmission(this.#options.relayUrl, this.#topic, this.#endpointKey, record);
  }

  async disconnect(): Promise<void> {
    this.engine.disconnected();
    await this.#client?.close();
    this.#client = undefined;
  }

  /** Seals a peer-wire message to another endpoint and hands it to the relay; resolves once handed over. */
  sendMessage(to: Uint8Array, message: PeerMessage): Promise<void> {
    const kid = this.#options.group.frameKeys.get(toHex(to));
    if (!kid) throw new Error('bench peer: no frame key for that endpoint');
    const sealed = this.#channel.seal({ endpoint: to, kid }, encodePeerMessage(message));
    this.#outbound = this.#outbound.then(async () => this.sendOpaque(to, await sealed));
    return this.#outbound;
  }

  /** Hands a sealed body to the relay; dropped while disconnected (delivery re-offers it, as in the app). */
  sendOpaque(to: Uint8Array, body: Uint8Array): void {
    if (!this.#client?.open) return;
    this.#client.send(to, body);
  }

  #onFrame(frame: RelayFrame, client: NodeRelayClient): void {
    this.#client ??= client;
    const frameKeys = this.#options.group.frameKeys;
    const opened = this.#channel.open(frame.body, frame.from, (endpoint) => {
      const kid = frameKeys.get(toHex(endpoint));
      return kid && { kid };
    });
    this.#inbound = this.#inbound.then(async () => {
      const plain = await opened;
      const message = plain.ok ? decodePeerMessage(plain.value.message) : undefined;
      if (!message?.ok || !isDeliveryMessage(message.value)) return this.#ack(frame.id);
      this.engine.receive(toHex(frame.from), message.value).then(
        () => this.#ack(frame.id),
        (e: unknown) => process.stderr.write(`bench peer: receive failed: ${(e as Error).message}\n`),
      );
    });
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
