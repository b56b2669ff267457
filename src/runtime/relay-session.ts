/**
 * A machine's session with its relay, in the one tab of a browser that leads (the others stand
 * by; tab-session.ts elects it): the WebSocket (relay-connection.ts), frames handled strictly one
 * after another and acknowledged only once their effects are durable, the service worker's inbox
 * drained into the same queue, the browser's online and offline events, and the two timers —
 * the batch cycle (the correctness backstop behind realtime push) and the re-evaluation of
 * parked envelopes.
 *
 * What a frame means, and what the machine does when the session comes up or goes down, is the
 * machine's business: `SessionPort` (mesh-node.ts wires it).
 */
import { fromHex, toHex } from '../core/bytes.js';
import type { EndpointToRelay } from '../core/relay-wire.js';
import type { BackgroundPort, MachineEnv } from './machine-env.js';
import { RelayConnection, type RelayAuth, type RelayHandlers, type RelayState } from './relay-connection.js';
import type { SequencerMessage } from './sequencer-port.js';
import { isStorageFull, STORAGE_FULL_INBOUND_TEXT, storeFailedText } from './storage-full.js';

export const BATCH_CYCLE_MS = 15_000;
/** Most frames handed to the machine at once (a catch-up delivers thousands). */
export const MAX_FRAMES_PER_BATCH = 64;

/** A frame as the machine receives it: the sender's endpoint (hex) and the sealed body. */
export type InboundFrame = { readonly from: string; readonly body: Uint8Array };
/** How handing frames to the machine ended. */
type Handed = 'handled' | 'failed' | 'full';
export const REEVALUATE_MS = 30_000;

export type SessionPort = {
  /** The relay's WebSocket URL. */
  url(): string;
  /** The group topic (hex) whose inbox the service worker fetches; undefined before a mesh exists. */
  topic(): string | undefined;
  authenticate(nonce: Uint8Array): Promise<RelayAuth>;
  pinnedRelayKey(): Uint8Array | undefined;
  pinRelayKey(key: Uint8Array): void;
  /** The admission list to push as the session's first message (admins), if any; `inForce`: the relay's version. */
  admissionRecord(inForce: number | undefined): Promise<Uint8Array | undefined>;
  /** The relay now enforces an admission list of this version (pushed by any admin). */
  admitted?(version: number): void;
  /** Runs before the first connection: another tab may have led before (MLS state to reload). */
  prepare(): Promise<void>;
  /**
   * Frames from peers, in the order they arrived; their effects are durable once it
   * resolves. Frames that arrived while earlier ones were handled come as one batch.
   */
  frames(frames: readonly InboundFrame[]): Promise<void>;
  /** The service worker's inbox may be drained now (a member only). */
  drainable(): boolean;
  stateChanged(state: RelayState, detail: string): void;
  sequencer(message: SequencerMessage): void;
  relayError(code: string, message: string): void;
  batchCycle(online: boolean): Promise<void>;
  reevaluate(): Promise<void>;
  notice(kind: 'info' | 'warning', text: string): void;
};

/** What the session uses of its connection (relay-connection.ts; a fake in tests). */
export type Connection = Pick<
  RelayConnection,
  'start' | 'stop' | 'resume' | 'suspend' | 'send' | 'admit' | 'sequencer' | 'ack'
>;
export type Connect = (url: string, handlers: RelayHandlers) => Connection;
const connectRelay: Connect = (url, handlers) => new RelayConnection(url, handlers);

export class RelaySession {
  readonly #port: SessionPort;
  readonly #connection: Connection;
  #background: BackgroundPort | undefined;
  #frames: Promise<void> = Promise.resolve();
  /** Frames arrived and not yet handed to the machine. */
  readonly #pending: { readonly id: number; readonly frame: InboundFrame }[] = [];
  #timers: ReturnType<typeof setInterval>[] = [];
  #state: RelayState = 'offline';
  #detail = '';
  #lastBatchAt: number | undefined;
  /** How the last frames handed failed, said once until frames are handled again. */
  #failing: 'full' | 'failed' | undefined;

  /** Connects (after `prepare`) and starts the timers: this tab was elected to lead. */
  constructor(port: SessionPort, env: MachineEnv, connect: Connect = connectRelay) {
    this.#port = port;
    const connection = connect(port.url(), {
      authenticate: (nonce) => port.authenticate(nonce),
      pinnedRelayKey: () => port.pinnedRelayKey(),
      onRelayKey: (key) => port.pinRelayKey(key),
      admissionRecord: (inForce) => port.admissionRecord(inForce),
      onAdmitted: (version) => port.admitted?.(version),
      onState: (state, detail) => {
        this.#state = state;
        this.#detail = detail ?? '';
        port.stateChanged(state, this.#detail);
      },
      onSequencer: (message) => port.sequencer(message),
      onRelayError: (code, message) => {
        this.#detail = `relay refused: ${message}`;
        port.relayError(code, message);
      },
      onFrame: (frame) => {
        this.#pending.push({ id: frame.id, frame: { from: toHex(frame.from), body: frame.body } });
        this.#frames = this.#frames.then(() => this.#handlePending());
      },
    });
    this.#connection = connection;
    const topic = port.topic();
    if (topic && env.background) {
      this.#background = env.background(topic, () => void this.drainInbox());
      void this.#background.request();
      void this.drainInbox();
    }
    env.onNetwork(
      () => {
        connection.resume();
        void this.#background?.request();
      },
      () => {
        connection.suspend('browser offline');
        void this.#background?.request();
      },
    );
    void port.prepare().then(() => connection.start());
    this.#timers.push(
      setInterval(() => void this.#batchCycle(), BATCH_CYCLE_MS),
      setInterval(() => void port.reevaluate(), REEVALUATE_MS),
    );
  }

  get state(): RelayState {
    return this.#state;
  }

  get detail(): string {
    return this.#detail;
  }

  get lastBatchAt(): number | undefined {
    return this.#lastBatchAt;
  }

  /** Sends a frame to a peer's endpoint (hex); false when the session is not up. */
  send(endpoint: string, body: Uint8Array): boolean {
    const to = fromHex(endpoint);
    return to !== undefined && this.#connection.send(to, body);
  }

  admit(record: Uint8Array): boolean {
    return this.#connection.admit(record);
  }

  sequencerSend(message: Extract<EndpointToRelay, { t: 'commit' | 'commits' }>): boolean {
    return this.#connection.sequencer(message);
  }

  /** Applies what the service worker fetched while no page was connected, in the frame queue. */
  async drainInbox(): Promise<void> {
    const background = this.#background;
    if (!background || !this.#port.drainable()) return;
    // The drain itself waits its turn: inbox frames are handled one at a time like live ones.
    const drained = this.#frames.then(() => background.drain((from, body) => this.#port.frames([{ from, body }])));
    this.#frames = drained.then(
      () => undefined,
      (e: unknown) => this.#port.notice('warning', `inbox drain failed: ${String(e)}`),
    );
    await this.#frames;
  }

  close(): void {
    for (const timer of this.#timers) clearInterval(timer);
    this.#timers = [];
    this.#background?.close();
    this.#connection.stop();
  }

  /**
   * Hands every frame waiting (up to a batch) to the machine, and acknowledges them to the
   * relay once their effects are durable; a failure means redelivery. When a batch fails,
   * its frames are tried again one by one, so one bad frame does not hold back the others.
   */
  async #handlePending(): Promise<void> {
    const batch = this.#pending.splice(0, MAX_FRAMES_PER_BATCH);
    if (batch.length === 0) return;
    const handled = await this.#hand(batch);
    if (handled !== 'failed' || batch.length === 1) return;
    for (const one of batch) if ((await this.#hand([one])) === 'full') return;
  }

  /**
   * Hands frames over, and acknowledges them once handled. A frame that fails stays
   * unacknowledged (the relay keeps it and delivers it again). Frames are refused by count,
   * never thrown (frame-dispatch.ts), so a failure is the store's: a full one fails every
   * frame alike, and a closed one too. The person is told once, until frames are stored again.
   */
  async #hand(batch: readonly { readonly id: number; readonly frame: InboundFrame }[]): Promise<Handed> {
    try {
      await this.#port.frames(batch.map((b) => b.frame));
      this.#connection.ack(batch.map((b) => b.id));
      this.#failing = undefined;
      return 'handled';
    } catch (e) {
      const full = isStorageFull(e);
      if (!full && batch.length > 1) return 'failed'; // one frame's fault, perhaps: each alone
      const failing = full ? 'full' : 'failed';
      if (this.#failing !== failing) {
        this.#port.notice('warning', full ? STORAGE_FULL_INBOUND_TEXT : storeFailedText(e));
        this.#failing = failing;
      }
      return failing;
    }
  }

  async #batchCycle(): Promise<void> {
    const online = this.#state === 'ready';
    if (online) this.#lastBatchAt = Date.now();
    await this.#port.batchCycle(online);
  }
}
