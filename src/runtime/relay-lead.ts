/**
 * The relay session of a machine, from the machine's side: which tab holds it (the others
 * stand by; tab-session.ts elects), what the machine does when it comes up or goes down,
 * the batch cycle's work, and the admission list an admin has the relay enforce. The
 * session itself — the socket, the frame queue, the timers — is relay-session.ts.
 */
import { fromHex, toHex } from '../core/bytes.js';
import type { CryptoPort, MlsPort, StatePort } from './ports.js';
import type { IdentityView } from './crypto-service.js';
import type { MachineEnv, SessionPort as TabSession } from './machine-env.js';
import type { MeshDomains } from './mesh-domains.js';
import type { MeshMetaKeeper } from './mesh-meta.js';
import type { MeshRoster } from './mesh-roster.js';
import type { NodeFeed } from './node-feed.js';
import type { RelayState } from './relay-connection.js';
import { RelaySession, type InboundFrame } from './relay-session.js';

export type RelayLeadWiring = {
  readonly crypto: Pick<CryptoPort, 'relayAuth' | 'signAdmission'>;
  readonly mls: Pick<MlsPort, 'init'>;
  readonly meta: MeshMetaKeeper;
  readonly roster: MeshRoster;
  readonly domains: Pick<
    MeshDomains,
    'refresh' | 'attach' | 'detach' | 'onSequencer' | 'refused' | 'catchUp' | 'gossip'
  >;
  readonly state: Pick<StatePort, 'resend' | 'disconnected'>;
  readonly feed: Pick<NodeFeed, 'count' | 'notice' | 'publish' | 'publishSoon'>;
  readonly tabs: TabSession;
  readonly env: MachineEnv;
  identity(): IdentityView;
  frames(frames: readonly InboundFrame[]): Promise<void>;
  /** The session is up: a joiner (re)sends its request, a member catches up. */
  ready(): Promise<void>;
  /** Publishes, uploads and places objects (the object plane's own cycle). */
  syncObjects(): void;
  /** Parked envelopes whose reason may have passed get another look. */
  reevaluate(): Promise<void>;
};

export type RelayView = {
  readonly state: RelayState | 'standby';
  readonly detail: string;
  readonly lastBatchAt: number | undefined;
};

export class RelayLead {
  readonly #w: RelayLeadWiring;
  /** The relay session, in the tab that leads; undefined in tabs standing by. */
  #session: RelaySession | undefined;
  /** Set until this tab leads: another tab holds the relay session for this machine. */
  #standby = false;
  /** The highest admission-list version the relay has said it enforces (`#admissionRecord`). */
  #inForce = 0;

  constructor(wiring: RelayLeadWiring) {
    this.#w = wiring;
  }

  get online(): boolean {
    return this.#session?.state === 'ready';
  }

  get leading(): boolean {
    return this.#session !== undefined;
  }

  get view(): RelayView {
    return {
      state: this.#session?.state ?? (this.#standby ? 'standby' : 'offline'),
      detail: this.#session?.detail ?? '',
      lastBatchAt: this.#session?.lastBatchAt,
    };
  }

  /** Joins the queue for the relay session; other tabs of this browser stay on standby meanwhile. */
  start(): void {
    if (!this.#w.meta.value) return;
    if (!this.#session) this.#standby = true;
    this.#w.tabs.requestLeadership(() => this.#lead());
  }

  /** Sends a sealed frame to a peer; counted as `NotSentOffline` when this tab has no session up. */
  send(peer: string, body: Uint8Array): void {
    if (this.#session?.send(peer, body) !== true) this.#w.feed.count('NotSentOffline');
  }

  /** Pushes the admission list in force, naming also `joining`, a machine being admitted now. */
  async pushAdmission(joining?: string): Promise<void> {
    if (this.#session?.state !== 'ready') return;
    const record = await this.#admissionRecord(joining);
    if (record) this.#session.admit(record);
  }

  close(): void {
    this.#session?.close();
  }

  /**
   * The admission list this machine would have the relay enforce (admins only): every machine
   * of the keyring not removed, the admins among them, and our open invitations. Versions only
   * grow, so a later list always wins at the relay. A version is a counter, one above the
   * highest this machine knows of — its own last list, or the relay's list in force (`#inForce`:
   * told at every session start, and to every session whenever any admin's list is taken) —
   * never a clock reading, which would tell the relay when each change was made (issue 26). Two
   * admins numbering a list alike in the same instant: the relay takes the first and refuses the
   * second, which counts on from the first at its next push or session.
   */
  async #admissionRecord(joining?: string): Promise<Uint8Array | undefined> {
    const { meta, roster, crypto } = this.#w;
    const current = meta.value;
    if (!current || current.status !== 'member' || !roster.isAdmin()) return undefined;
    const lists = roster.admission(joining);
    const version = Math.max(current.admissionVersion ?? 0, this.#inForce) + 1;
    await meta.save({ ...current, admissionVersion: version });
    return crypto.signAdmission(lists.admins, lists.endpoints, version, lists.stewards);
  }

  /** This tab was elected: the relay session, its frame queue and timers (relay-session.ts). */
  #lead(): void {
    const w = this.#w;
    if (!w.meta.value) return;
    this.#standby = false;
    this.#session = new RelaySession(
      {
        url: () => w.meta.value?.relay ?? '',
        topic: () => w.identity().topic,
        authenticate: (nonce) => w.crypto.relayAuth(nonce),
        pinnedRelayKey: () => (w.meta.value?.relayKey ? fromHex(w.meta.value.relayKey) : undefined),
        pinRelayKey: (key) => {
          const meta = w.meta.value;
          if (meta && !meta.relayKey) void w.meta.save({ ...meta, relayKey: toHex(key) });
        },
        admissionRecord: (inForce) => {
          this.#inForce = Math.max(this.#inForce, inForce ?? 0);
          return this.#admissionRecord();
        },
        admitted: (version) => {
          this.#inForce = Math.max(this.#inForce, version);
        },
        // Another tab may have led before: take the MLS states up from the key store, then connect.
        prepare: async () => {
          await w.mls.init();
          await w.domains.refresh();
        },
        frames: (frames) => w.frames(frames),
        drainable: () => w.meta.value?.status === 'member',
        stateChanged: (state) => this.#changed(state),
        sequencer: (message) => w.domains.onSequencer(message),
        relayError: (code, message) => {
          w.feed.count(`relay:${code}`);
          // A refusal is shown when it happens (a joiner's refused request would publish nothing else).
          w.feed.publishSoon();
          if (code === 'not-a-member') w.domains.refused(message);
        },
        batchCycle: (online) => this.#batchCycle(online),
        reevaluate: () => w.reevaluate(),
        notice: (kind, text) => {
          w.feed.notice(kind, text);
          w.feed.publishSoon();
        },
      },
      w.env,
    );
  }

  #changed(state: RelayState): void {
    const w = this.#w;
    // What a new session starts must not fail unseen, nor one part stop the next: a join's
    // request needs no sequencer, and a member's catch-up goes on without one.
    if (state === 'ready')
      void this.#started('the sequencer', () => this.#attachSequencer()).then(() =>
        this.#started('the session', () => w.ready()),
      );
    else if (state === 'offline') {
      w.domains.detach();
      void w.state.disconnected();
    }
    w.feed.publishSoon();
  }

  async #started(what: string, step: () => Promise<void>): Promise<void> {
    try {
      await step();
    } catch (e) {
      this.#w.feed.notice('warning', `relay: could not start ${what} (${e instanceof Error ? e.name : String(e)})`);
      this.#w.feed.publishSoon();
    }
  }

  async #attachSequencer(): Promise<void> {
    const session = this.#session;
    const key = this.#w.meta.value?.relayKey && fromHex(this.#w.meta.value.relayKey);
    if (session && key) await this.#w.domains.attach((m) => void session.sequencerSend(m), key);
  }

  /** A batch cycle now rather than at the next timer (an API client's `sync-push`); false while offline. */
  async syncNow(): Promise<boolean> {
    const online = this.online;
    await this.#batchCycle(online);
    return online;
  }

  /** The correctness backstop behind realtime push: re-offer everything unacknowledged. */
  async #batchCycle(online: boolean): Promise<void> {
    const w = this.#w;
    await w.state.resend();
    if (online && w.meta.value?.status === 'member') {
      await w.domains.catchUp();
      w.syncObjects();
      for (const signer of w.roster.others()) void w.domains.gossip(signer);
    }
    await w.feed.publish();
  }
}
