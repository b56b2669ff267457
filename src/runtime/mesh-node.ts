/**
 * A browser machine of the mesh: the composition root that wires the crypto
 * worker, the IndexedDB replica, the delivery engine and the relay session,
 * plus the small amount of behaviour that belongs to none of them — founding a
 * mesh, the pairing exchange, and dispatching frames. The UI observes it through
 * `subscribe` and never sees a key.
 */
import type { Remote } from 'comlink';
import { fromHex, toHex } from '../core/bytes.js';
import { rowValues, type RowState } from '../core/merge.js';
import { Replica, type IngestOutcome, type Rejection, type WriteError } from '../core/replica.js';
import type { Result } from '../core/result.js';
import type { ColumnValue } from '../core/schema.js';
import { SyncEngine } from '../core/sync.js';
import { keyringTrust } from '../core/trust.js';
import { systemClock } from './clock.js';
import { DexieReplicaStore, NodeDatabase } from '../storage/dexie-store.js';
import type { CryptoService, IdentityView, InboundMessage, JoinError } from './crypto-service.js';
import { RelayConnection, type RelayState } from './relay-connection.js';
import { TabSession } from './tab-session.js';

export type MeshStatus = 'new' | 'joining' | 'member';

type MeshMeta = {
  readonly status: 'joining' | 'member';
  readonly relay: string;
  readonly name: string;
  /** Signers this machine trusts as admins: itself when it founded the mesh, else its inviter. */
  readonly anchors: readonly string[];
  readonly anchorEndpoints: readonly string[];
};

export type Machine = {
  readonly signer: string;
  readonly endpoint: string;
  readonly name: string;
  readonly role: string;
};
export type ProfileRow = { readonly row: string; readonly values: Record<string, ColumnValue> };

export type NodeSnapshot = {
  readonly identity: IdentityView;
  readonly status: MeshStatus;
  readonly name: string;
  /** `standby`: another tab of this browser holds the relay session for this machine. */
  readonly relay: RelayState | 'standby';
  readonly relayDetail: string;
  readonly pending: number;
  readonly profiles: readonly ProfileRow[];
  readonly machines: readonly Machine[];
  readonly rejections: Readonly<Record<string, number>>;
  readonly notices: readonly string[];
};

const META_KEY = 'mesh';
const BATCH_CYCLE_MS = 15_000;
const MAX_NOTICES = 20;

export function defaultRelayUrl(location: Location): string {
  return `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/ws`;
}

export class MeshNode {
  readonly #crypto: Remote<CryptoService>;
  readonly #store: DexieReplicaStore;
  readonly #replica: Replica;
  readonly #sync: SyncEngine;
  #identity: IdentityView;
  #meta: MeshMeta | undefined;
  #relay: RelayConnection | undefined;
  #relayState: RelayState | 'standby' = 'offline';
  readonly #tabs = new TabSession(() => void this.#otherTabChanged());
  #relayDetail = '';
  #frames: Promise<void> = Promise.resolve();
  #cycle: ReturnType<typeof setInterval> | undefined;
  readonly #counters: Record<string, number> = {};
  readonly #notices: string[] = [];
  readonly #listeners = new Set<(snapshot: NodeSnapshot) => void>();

  private constructor(
    crypto: Remote<CryptoService>,
    identity: IdentityView,
    store: DexieReplicaStore,
    meta: MeshMeta | undefined,
  ) {
    this.#crypto = crypto;
    this.#identity = identity;
    this.#store = store;
    this.#meta = meta;
    const signerKey = fromHex(identity.signer)!;
    this.#replica = new Replica({
      store,
      signer: { publicKey: signerKey, sign: (m) => crypto.sign(m) },
      verifier: { verify: (k, m, s) => crypto.verify(k, m, s) },
      envelopes: { seal: (d, e) => crypto.sealEvent(d, e), open: (s) => crypto.openEvent(s) },
      trust: keyringTrust(identity.signer, () => this.#meta?.anchors ?? []),
      clock: systemClock,
      withWriteLock: (fn) => navigator.locks.request('sov-write', fn) as ReturnType<typeof fn>,
    });
    this.#sync = new SyncEngine(
      this.#replica,
      store,
      { send: async (peer, message) => this.#sendTo(peer, await crypto.sealMessage(peer, message)) },
      { onApplied: (outcomes) => this.#applied(outcomes), onRejected: (_peer, error) => this.#rejected(error) },
    );
  }

  static async open(crypto: Remote<CryptoService>, dbName = 'sov-node'): Promise<MeshNode> {
    const identity = await crypto.init();
    const store = new DexieReplicaStore(new NodeDatabase(dbName));
    const meta = await store.getMeta<MeshMeta>(META_KEY);
    const node = new MeshNode(crypto, identity, store, meta);
    if (meta) await node.#startRelay();
    return node;
  }

  subscribe(listener: (snapshot: NodeSnapshot) => void): () => void {
    this.#listeners.add(listener);
    void this.#publish();
    return () => this.#listeners.delete(listener);
  }

  get status(): MeshStatus {
    return this.#meta?.status ?? 'new';
  }

  /** Founds a mesh on this machine, which becomes its first admin. */
  async createMesh(name: string, relay: string): Promise<void> {
    const created = await this.#crypto.createMesh();
    if (!created.ok) throw new Error('mesh: this machine already belongs to a mesh');
    this.#identity = created.value;
    await this.#saveMeta({ status: 'member', relay, name, anchors: [this.#identity.signer], anchorEndpoints: [] });
    const self = await this.#replica.write('keyring', this.#identity.signer, {
      endpoint: this.#identity.endpoint,
      name,
      role: 'admin',
    });
    if (!self.ok) throw new Error(`mesh: could not record this machine in the keyring (${self.error.type})`);
    this.#announce();
    await this.#startRelay();
  }

  /** Issues a pairing ticket (admins only). */
  invite(): Promise<string> {
    if (!this.#meta || !this.#isAdmin()) throw new Error('mesh: only an admin can invite');
    return this.#crypto.createInvitation(this.#meta.relay);
  }

  /** Starts joining with a pasted ticket; completes when the inviter's answer arrives. */
  async join(ticket: string, name: string): Promise<Result<unknown, JoinError>> {
    const started = await this.#crypto.beginJoin(ticket);
    if (!started.ok) return started;
    await this.#saveMeta({
      status: 'joining',
      relay: started.value.relay,
      name,
      anchors: [],
      anchorEndpoints: [started.value.inviter],
    });
    this.#identity = await this.#crypto.view();
    this.#announce();
    await this.#startRelay();
    return started;
  }

  /**
   * Gives up a join that has not completed (wrong or expired ticket, inviter
   * gone): forgets the group secret and the pending ticket. Every tab of this
   * browser reloads, so no relay session for the abandoned group survives.
   */
  async cancelJoin(): Promise<void> {
    if (this.#meta?.status !== 'joining') return;
    await this.#crypto.abandonJoin();
    await this.#store.deleteMeta(META_KEY);
    this.#tabs.reloadAll();
  }

  async editProfile(row: string, cols: Record<string, ColumnValue>): Promise<Result<unknown, WriteError>> {
    const written = await this.#replica.write('device_profiles', row, cols);
    if (written.ok) {
      this.#announce();
      await this.#sync.offerAll();
      await this.#publish();
    }
    return written;
  }

  async #saveMeta(meta: MeshMeta): Promise<void> {
    this.#meta = meta;
    await this.#store.setMeta(META_KEY, meta);
  }

  #isAdmin(): boolean {
    return (
      this.#meta?.anchors.includes(this.#identity.signer) === true ||
      this.#machinesCache.some((m) => m.signer === this.#identity.signer && m.role === 'admin')
    );
  }

  #machinesCache: Machine[] = [];

  /** Joins the queue for the relay session; other tabs of this browser stay on standby meanwhile. */
  async #startRelay(): Promise<void> {
    if (!this.#meta) return;
    await this.#refreshPeers();
    if (!this.#relay) this.#relayState = 'standby';
    this.#tabs.requestLeadership(() => this.#lead());
  }

  /** This tab was elected: connect to the relay and run the batch cycle. */
  #lead(): void {
    if (!this.#meta) return;
    const relay = new RelayConnection(this.#meta.relay, {
      authenticate: (nonce) => this.#crypto.relayAuth(nonce),
      onState: (state, detail) => this.#relayChanged(state, detail ?? ''),
      onFrame: (frame) => {
        this.#frames = this.#frames
          .then(() => this.#onFrame(frame.id, toHex(frame.from), frame.body))
          .catch((e: unknown) => this.#notice(`frame handling failed: ${String(e)}`));
      },
    });
    this.#relay = relay;
    addEventListener('offline', () => relay.suspend('browser offline'));
    addEventListener('online', () => relay.resume());
    relay.start();
    this.#cycle = setInterval(() => void this.#sync.resend().then(() => this.#publish()), BATCH_CYCLE_MS);
  }

  /** Stops the relay session and the batch cycle (tests and page teardown). */
  close(): void {
    clearInterval(this.#cycle);
    this.#relay?.stop();
    this.#tabs.close();
  }

  #announce(): void {
    this.#tabs.announceChange();
  }

  async #otherTabChanged(): Promise<void> {
    this.#meta = await this.#store.getMeta<MeshMeta>(META_KEY);
    this.#identity = await this.#crypto.init();
    await this.#startRelay();
    if (this.#relay) await this.#sync.offerAll();
    await this.#publish();
  }

  #relayChanged(state: RelayState, detail: string): void {
    this.#relayState = state;
    this.#relayDetail = detail;
    if (state === 'ready') {
      void this.#onReady();
    } else if (state === 'offline') {
      this.#sync.disconnected();
    }
    void this.#publish();
  }

  async #onReady(): Promise<void> {
    if (this.#meta?.status === 'joining') {
      const request = await this.#crypto.joinRequest(this.#meta.name);
      if (request.ok) this.#sendTo(request.value.to, request.value.body);
      else this.#notice(`join: ${request.error.type}`);
      return;
    }
    await this.#sync.connected();
    await this.#publish();
  }

  #sendTo(peer: string, body: Uint8Array): void {
    const to = fromHex(peer);
    if (to && this.#relay?.send(to, body) !== true) this.#count('NotSentOffline');
  }

  async #onFrame(id: number, from: string, body: Uint8Array): Promise<void> {
    const opened = await this.#crypto.openMessage(from, body);
    if (!opened.ok) this.#count(opened.error.type);
    else await this.#dispatch(from, opened.value);
    this.#relay?.ack([id]);
    await this.#publish();
  }

  async #dispatch(from: string, message: InboundMessage): Promise<void> {
    switch (message.t) {
      case 'join-request':
        return this.#admit(from, message);
      case 'join-accept':
        return this.#joined(from, toHex(message.signer));
      case 'join-refused':
        if (this.#meta?.status === 'joining') this.#notice(`join refused: ${message.reason}`);
        return;
      case 'events':
      case 'ack':
        if (this.#meta?.status !== 'member') return this.#count('NotYetMember');
        if (!this.#sync.peers.includes(from)) return this.#count('UnknownEndpoint');
        return this.#sync.receive(from, message);
    }
  }

  async #admit(from: string, request: Extract<InboundMessage, { t: 'join-request' }>): Promise<void> {
    const refuse = (reason: string): void => {
      this.#notice(`refused a join request: ${reason}`);
      void this.#crypto
        .sealMessage(from, { t: 'join-refused', inv: request.inv, reason })
        .then((b) => this.#sendTo(from, b));
    };
    if (toHex(request.endpoint) !== from) return refuse('endpoint does not match the sender');
    if (!this.#isAdmin()) return refuse('this machine is not an admin');
    const accept = await this.#crypto.admitJoin({ inv: request.inv, endpoint: request.endpoint });
    if (!accept.ok) return refuse(accept.error.type);
    const name = request.name || 'machine';
    const added = await this.#replica.write('keyring', toHex(request.signer), { endpoint: from, name, role: 'member' });
    if (!added.ok) return refuse(added.error.type);
    this.#sendTo(from, accept.value);
    this.#announce();
    this.#notice(`${name} joined the mesh`);
    await this.#refreshPeers();
    await this.#sync.offerAll();
  }

  async #joined(from: string, inviter: string): Promise<void> {
    if (!this.#meta) return;
    await this.#saveMeta({ ...this.#meta, status: 'member', anchors: [inviter], anchorEndpoints: [from] });
    this.#identity = await this.#crypto.view();
    this.#announce();
    this.#notice('joined the mesh');
    await this.#refreshPeers();
    await this.#sync.connected();
  }

  async #refreshPeers(): Promise<void> {
    const keyring = await this.#store.rows('keyring');
    this.#machinesCache = keyring.map(toMachine);
    const endpoints = new Set([...this.#machinesCache.map((m) => m.endpoint), ...(this.#meta?.anchorEndpoints ?? [])]);
    endpoints.delete(this.#identity.endpoint);
    endpoints.delete('');
    this.#sync.setPeers(endpoints);
  }

  #applied(outcomes: readonly IngestOutcome[]): void {
    if (outcomes.some((o) => o.type === 'Applied')) this.#announce();
    if (outcomes.some((o) => o.type === 'Applied' && o.body.table === 'keyring')) {
      void this.#refreshPeers().then(() => this.#sync.offerAll());
    }
  }

  #rejected(error: Rejection): void {
    this.#count(error.type);
  }

  #count(type: string): void {
    this.#counters[type] = (this.#counters[type] ?? 0) + 1;
  }

  #notice(text: string): void {
    this.#notices.unshift(`${new Date().toLocaleTimeString()} ${text}`);
    this.#notices.length = Math.min(this.#notices.length, MAX_NOTICES);
  }

  async #pending(): Promise<number> {
    let pending = 0;
    for (const peer of this.#sync.peers) pending = Math.max(pending, await this.#replica.pendingFor(peer));
    return pending;
  }

  async #publish(): Promise<void> {
    if (this.#listeners.size === 0) return;
    const profiles = (await this.#store.rows('device_profiles')).map((r) => ({ row: r.row, values: rowValues(r) }));
    const snapshot: NodeSnapshot = {
      identity: this.#identity,
      status: this.status,
      name: this.#meta?.name ?? '',
      relay: this.#relayState,
      relayDetail: this.#relayDetail,
      pending: await this.#pending(),
      profiles,
      machines: (await this.#store.rows('keyring')).map(toMachine),
      rejections: { ...this.#counters },
      notices: [...this.#notices],
    };
    for (const listener of this.#listeners) listener(snapshot);
  }
}

function toMachine(row: RowState): Machine {
  const v = rowValues(row);
  return {
    signer: row.row,
    endpoint: String(v['endpoint'] ?? ''),
    name: String(v['name'] ?? ''),
    role: String(v['role'] ?? ''),
  };
}
