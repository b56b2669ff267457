/**
 * Sealing and opening end-to-end frames (format and header checks: core/frame.ts).
 *
 * Keys: each machine holds an X25519 frame key pair whose private half is a
 * non-extractable WebCrypto key. To write to a peer, the channel runs HPKE in
 * auth mode (RFC 9180, via @hpke/core over WebCrypto) against the peer's frame
 * key, exports a 32-byte AES-256-GCM key from the context and reuses it — with
 * a fresh random nonce per frame — until it rotates (every ROTATE_MS or
 * ROTATE_FRAMES). The recipient derives the same key once per `enc` and caches
 * it. Per-frame HPKE would cost several milliseconds here (four X25519
 * operations plus the HKDF steps through WebCrypto), which the realtime path
 * cannot afford; export-then-AEAD keeps every frame one native AES-GCM call.
 *
 * Opening order: decode → header (group, addressee, relay-authenticated
 * sender, time window) → replay → binding of `kid` to the sender's endpoint →
 * key → AES-GCM. Every refusal is a typed `FrameRejection`; a request id is
 * remembered only once its frame has been authenticated.
 */
import { Aes256Gcm, CipherSuite, DhkemX25519HkdfSha256, HkdfSha256 } from '@hpke/core';
import { bytesEqual, concat, toHex, utf8 } from '../core/bytes.js';
import {
  checkHeader,
  decodeFrame,
  encodeFrame,
  encodeHeader,
  FRAME_KEY_LABEL,
  FRAME_LABEL,
  FRAME_VERSION,
  frameAad,
  frameTime,
  MAX_PADDED_MESSAGE,
  MAX_FRAME_AGE_MS,
  ReplayGuard,
  type FrameHeader,
  type FrameRejection,
} from '../core/frame.js';
import { pad, unpad } from '../core/padding.js';
import type { Clock, Random } from '../core/ports.js';
import { err, ok, type Result } from '../core/result.js';
import { retryingKeyGeneration } from '../storage/key-wrap.js';

const ROTATE_MS = 10 * 60 * 1000;
const ROTATE_FRAMES = 100_000;
const MAX_CACHED_KEYS = 1024;
const NONCE_BYTES = 12;

export type FrameKeyPair = { readonly keys: CryptoKeyPair; readonly publicKey: Uint8Array };

/** A new X25519 frame key pair; the private key never leaves WebCrypto. */
export async function generateFrameKey(extractable = false): Promise<FrameKeyPair> {
  const keys = (await retryingKeyGeneration(() =>
    crypto.subtle.generateKey({ name: 'X25519' }, extractable, ['deriveBits']),
  )) as CryptoKeyPair;
  return { keys, publicKey: new Uint8Array(await crypto.subtle.exportKey('raw', keys.publicKey)) };
}

/** Counts of what a channel sealed (FrameChannel.sent). */
export type FrameTraffic = { readonly frames: number; readonly messageBytes: number; readonly paddedBytes: number };

/** A peer as frames address it: its endpoint id and the frame key the keyring binds to it. */
export type FramePeer = { readonly endpoint: Uint8Array; readonly kid: Uint8Array };

/**
 * What the receiver knows about a sender endpoint: the frame key bound to it,
 * or `unbound` when the frame may come from a machine not yet in the keyring
 * (a pairing request), in which case the caller must check the opened message.
 */
export type SenderBinding = { readonly kid: Uint8Array } | 'unbound' | undefined;

export type OpenedFrame = { readonly header: FrameHeader; readonly message: Uint8Array };

type SendContext = { readonly enc: Uint8Array; readonly key: CryptoKey };
/**
 * The context frames to one recipient use, held as a promise from the moment
 * it is first asked for: frames sealed concurrently (a batch cycle offering a
 * whole log) share one encapsulation instead of each running HPKE — which the
 * recipient would then have to open once per frame.
 */
type SendSlot = { readonly context: Promise<SendContext>; readonly createdAt: number; frames: number };

const suite = new CipherSuite({ kem: new DhkemX25519HkdfSha256(), kdf: new HkdfSha256(), aead: new Aes256Gcm() });

const buffer = (bytes: Uint8Array): ArrayBuffer =>
  bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;

function importAesKey(raw: ArrayBuffer): Promise<CryptoKey> {
  return crypto.subtle.importKey('raw', raw, { name: 'AES-GCM' }, false, ['encrypt', 'decrypt']);
}

export type FrameChannelOptions = {
  readonly endpoint: Uint8Array;
  readonly frameKey: FrameKeyPair;
  readonly topic: Uint8Array;
  readonly clock: Clock;
  readonly random: Random;
  readonly replay?: ReplayGuard;
};

export class FrameChannel {
  readonly #opts: FrameChannelOptions;
  readonly #info: Uint8Array;
  readonly #exporterContext = buffer(utf8(FRAME_KEY_LABEL));
  readonly #sending = new Map<string, SendSlot>();
  readonly #receiving = new Map<string, Promise<CryptoKey | undefined>>();
  readonly #sent = { frames: 0, messageBytes: 0, paddedBytes: 0 };
  readonly replay: ReplayGuard;

  constructor(options: FrameChannelOptions) {
    this.#opts = options;
    this.#info = concat(utf8(FRAME_LABEL), options.topic);
    this.replay = options.replay ?? new ReplayGuard();
  }

  get publicKey(): Uint8Array {
    return this.#opts.frameKey.publicKey;
  }

  /** What this channel has sealed: frames, their messages' bytes, and those bytes padded (what padding costs). */
  get sent(): FrameTraffic {
    return { ...this.#sent };
  }

  /** Seals one peer message to `to`. */
  async seal(to: FramePeer, message: Uint8Array): Promise<Uint8Array> {
    const context = await this.#sendContext(to.kid);
    const { endpoint, frameKey, topic, clock, random } = this.#opts;
    const header: FrameHeader = {
      v: FRAME_VERSION,
      topic,
      from: endpoint,
      to: to.endpoint,
      kid: frameKey.publicKey,
      enc: context.enc,
      rid: random.bytes(16),
      ts: frameTime(clock.now()),
    };
    const headerBytes = encodeHeader(header);
    const nonce = random.bytes(NONCE_BYTES);
    const padded = pad(message, MAX_PADDED_MESSAGE);
    const sealed = await crypto.subtle.encrypt(
      { name: 'AES-GCM', iv: buffer(nonce), additionalData: buffer(frameAad(headerBytes)) },
      context.key,
      buffer(padded),
    );
    this.#sent.frames++;
    this.#sent.messageBytes += message.length;
    this.#sent.paddedBytes += padded.length;
    return encodeFrame(headerBytes, concat(nonce, new Uint8Array(sealed)));
  }

  /**
   * Opens a frame the relay delivered from `relayFrom`. `binding` resolves the
   * sender endpoint to its bound frame key. `maxAgeMs` narrows the time window.
   */
  async open(
    body: Uint8Array,
    relayFrom: Uint8Array,
    binding: (endpoint: Uint8Array) => SenderBinding,
    maxAgeMs = MAX_FRAME_AGE_MS,
  ): Promise<Result<OpenedFrame, FrameRejection>> {
    const frame = decodeFrame(body);
    if (!frame.ok) return frame;
    const now = this.#opts.clock.now();
    const { topic, endpoint } = this.#opts;
    const header = checkHeader(frame.value.header, { topic, self: endpoint, relayFrom, now, maxAgeMs });
    if (!header.ok) return header;
    const { kid, enc, rid, ts } = header.value;
    if (this.replay.has(rid)) return err({ type: 'ReplayedRequest' });
    const bound = binding(header.value.from);
    if (bound === undefined) return err({ type: 'UnknownEndpoint' });
    if (bound !== 'unbound' && !bytesEqual(bound.kid, kid)) {
      return err({ type: 'BindingMismatch', reason: 'frame key is not the one bound to this endpoint' });
    }
    const key = await this.#receiveKey(kid, enc);
    if (!key) return err({ type: 'FrameUndecryptable' });
    const { ct, headerBytes } = frame.value;
    let message: Uint8Array;
    try {
      const plain = await crypto.subtle.decrypt(
        { name: 'AES-GCM', iv: buffer(ct.subarray(0, NONCE_BYTES)), additionalData: buffer(frameAad(headerBytes)) },
        key,
        buffer(ct.subarray(NONCE_BYTES)),
      );
      message = new Uint8Array(plain);
    } catch {
      return err({ type: 'FrameUndecryptable' });
    }
    if (header.value.v === FRAME_VERSION) {
      // Authentic but badly padded: only a faulty sender writes that.
      const unpadded = unpad(message);
      if (!unpadded.ok) return err({ type: 'MalformedFrame', reason: 'padding' });
      message = unpadded.value;
    }
    if (!this.replay.remember(rid, ts, now)) return err({ type: 'ReplayedRequest' });
    return ok({ header: header.value, message });
  }

  #sendContext(kid: Uint8Array): Promise<SendContext> {
    const id = toHex(kid);
    const now = this.#opts.clock.now();
    const current = this.#sending.get(id);
    if (current && now - current.createdAt < ROTATE_MS && current.frames < ROTATE_FRAMES) {
      current.frames++;
      return current.context;
    }
    const slot: SendSlot = { context: this.#newSendContext(kid), createdAt: now, frames: 1 };
    this.#sending.set(id, slot);
    // A failed setup is not kept: the next frame tries again.
    slot.context.catch(() => {
      if (this.#sending.get(id) === slot) this.#sending.delete(id);
    });
    return slot.context;
  }

  async #newSendContext(kid: Uint8Array): Promise<SendContext> {
    const recipientPublicKey = await suite.kem.deserializePublicKey(buffer(kid));
    // Each attempt encapsulates to a fresh ephemeral key (webcrypto.ts: retryingKeyGeneration).
    const sender = await retryingKeyGeneration(() =>
      suite.createSenderContext({ recipientPublicKey, senderKey: this.#opts.frameKey.keys, info: buffer(this.#info) }),
    );
    return {
      enc: new Uint8Array(sender.enc),
      key: await importAesKey(await sender.export(this.#exporterContext, 32)),
    };
  }

  /** The AES key of (sender kid, enc); undefined when the encapsulation does not open. */
  #receiveKey(kid: Uint8Array, enc: Uint8Array): Promise<CryptoKey | undefined> {
    const id = `${toHex(kid)}:${toHex(enc)}`;
    let key = this.#receiving.get(id);
    if (!key) {
      key = this.#deriveReceiveKey(kid, enc);
      if (this.#receiving.size >= MAX_CACHED_KEYS) this.#receiving.delete(this.#receiving.keys().next().value!);
      this.#receiving.set(id, key);
      // A failed derivation is not cached: the next frame may carry a valid one.
      void key.then((k) => {
        if (!k) this.#receiving.delete(id);
      });
    }
    return key;
  }

  async #deriveReceiveKey(kid: Uint8Array, enc: Uint8Array): Promise<CryptoKey | undefined> {
    try {
      const recipient = await suite.createRecipientContext({
        recipientKey: this.#opts.frameKey.keys,
        enc: buffer(enc),
        senderPublicKey: await suite.kem.deserializePublicKey(buffer(kid)),
        info: buffer(this.#info),
      });
      return await importAesKey(await recipient.export(this.#exporterContext, 32));
    } catch {
      return undefined;
    }
  }
}
