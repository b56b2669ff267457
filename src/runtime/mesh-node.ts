/**
 * A machine of the mesh: the composition root. It wires the key holder, the state plane's
 * apply path, the MLS groups and the object plane to the parts that hold behaviour of their
 * own — the mesh record (mesh-meta.ts), who the machines are (mesh-roster.ts), pairing
 * (mesh-pairing.ts), the relay session (relay-lead.ts), frame dispatch (frame-dispatch.ts),
 * what a human changes (mesh-writes.ts) and what the UI is told (node-feed.ts,
 * node-snapshot.ts) — and offers the UI its actions.
 * The UI observes it through `subscribe` and never sees a key.
 */
import { proxy } from 'comlink';
import type { CryptoPort, MlsPort, StatePort } from './ports.js';
import { RowNotices } from './row-notices.js';
import { meshDomainNames } from '../core/schema.js';
import type { Refusal, RefusalKind, Resurrection } from '../core/store.js';
import type { Overtaken } from '../core/merge.js';
import { DexieReplicaStore, NodeDatabase } from '../storage/dexie-store.js';
import type { ChangeSummary } from './state-service.js';
import type { IdentityView } from './crypto-service.js';
import { DomainAdmin } from './domain-admin.js';
import { FrameDispatch } from './frame-dispatch.js';
import { MeshDomains } from './mesh-domains.js';
import { MeshMetaKeeper } from './mesh-meta.js';
import { MeshObjects, type ObjectPort } from './mesh-objects.js';
import { MeshPairing } from './mesh-pairing.js';
import { ObjectPlane } from './object-plane.js';
import { MeshRecovery } from './mesh-recovery.js';
import { MeshRoster } from './mesh-roster.js';
import { MeshWrites } from './mesh-writes.js';
import { RelayLead } from './relay-lead.js';
import type { MachineStore } from './machine-store.js';
import { NodeFeed } from './node-feed.js';
import { buildSnapshot, type MeshStatus, type NodeSnapshot, type SnapshotSources } from './node-snapshot.js';
import { browserEnv, type MachineEnv, type SessionPort } from './machine-env.js';
import type { Page, PageQuery } from './table-pages.js';
import { manifestView, rowView, type ManifestEntry, type RowView } from './views.js';

export type { Machine, ManifestEntry, RowView } from './views.js';
export type { PageQuery } from './table-pages.js';
/** A page of rows as a view shows them (writers by name). */
export type RowPage = Omit<Page, 'rows'> & { readonly rows: readonly RowView[] };
export type { PairingView } from './pairing-inviter.js';
export type { DomainEntry, MeshStatus, NodeSnapshot, Notice } from './node-snapshot.js';
export type { MachineStore } from './machine-store.js';
export type { JoinView } from './pairing-joiner.js';

export class MeshNode {
  readonly #crypto: CryptoPort;
  readonly #mls: MlsPort;
  /** The state plane's apply path: the replica and delivery engine, where the keys are (state-service.ts). */
  readonly #state: StatePort;
  readonly #store: MachineStore;
  readonly #tabs: SessionPort;
  #identity: IdentityView;
  readonly #meta: MeshMetaKeeper;
  readonly #roster: MeshRoster;
  readonly #feed: NodeFeed;
  readonly #rowNotices: RowNotices;
  readonly #domains: MeshDomains;
  readonly #objects: MeshObjects | undefined;
  /** Founding a mesh, pairing machines into it, and vouching (mesh-pairing.ts). */
  readonly pairing: MeshPairing;
  /** Forming objects, reading them back, SQL over the catalog (object-plane.ts). */
  readonly objects: ObjectPlane;
  /** Creating data domains and choosing their readers (domain-admin.ts). */
  readonly domains: DomainAdmin;
  /** Recovery kits, checkpoints, and restoring a mesh from a kit (mesh-recovery.ts). */
  readonly recovery: MeshRecovery;
  /** What a human changes through this machine: rows, classes, trust, placement, releases, removals. */
  readonly writes: MeshWrites;
  readonly #relay: RelayLead;
  readonly #dispatch: FrameDispatch;

  private constructor(
    services: { crypto: CryptoPort; state: StatePort; mls: MlsPort; objects: ObjectPort | undefined },
    identity: IdentityView,
    store: MachineStore,
    env: MachineEnv,
    defaultPlacement: '*' | undefined,
  ) {
    const { crypto, state, mls } = services;
    this.#crypto = crypto;
    this.#state = state;
    this.#mls = mls;
    this.#store = store;
    this.#identity = identity;
    this.#tabs = env.session(() => void this.#otherTabChanged());
    const feed = (this.#feed = new NodeFeed(() => buildSnapshot(this.#snapshotSources())));
    this.#rowNotices = new RowNotices(feed, state, () => this.#roster.names());
    const meta = (this.#meta = new MeshMetaKeeper(store, () => this.#configureState()));
    const roster = (this.#roster = new MeshRoster({
      store,
      self: () => this.#identity,
      anchors: () => meta.anchors,
      anchorPeers: () => meta.anchorPeers,
      setKeyring: (keyring) => mls.setKeyring(keyring),
    }));
    const writes = (this.writes = new MeshWrites({
      state,
      feed,
      tabs: this.#tabs,
      meta,
      member: () => this.#identity.member,
      reads: (domain) => this.domains.reads(domain),
      isLive: (signer) => roster.isLive(signer),
      resurrected: (resurrections) => this.#resurrected(resurrections),
      refreshPeers: () => this.#refreshPeers(),
      removed: async () => {
        await this.#refreshPeers();
        await this.#relay.pushAdmission();
        await this.#reconcileDomains();
      },
    }));
    const domains = (this.#domains = new MeshDomains({
      mls,
      groupIdOf: (domain) => crypto.groupIdOf(domain),
      domainNames: async () => meshDomainNames(await store.rows('domains')),
      reloadKeys: async () => {
        const added = await crypto.loadNewDomainKeys();
        if (added === 0) return;
        this.#identity = await crypto.view();
        await this.#objects?.keysChanged();
        // A new generation may open rows this machine held without reading: take them in.
        if (meta.status === 'member') this.#changed(await state.reopen());
      },
      sendTo: async (signer, message) => {
        const machine = roster.live().find((m) => m.signer === signer);
        const address = machine && roster.addressOf(machine.endpoint);
        if (!machine || !address) return false;
        this.#relay.send(machine.endpoint, await crypto.sealMessage(address, message));
        return true;
      },
      peers: () => roster.others(),
      store,
      notice: (kind, text) => feed.notice(kind, text),
      count: (type) => feed.count(type),
      changed: () => feed.publishSoon(),
    }));
    this.#objects =
      services.objects &&
      new MeshObjects({
        service: services.objects,
        self: () => this.#identity.signer,
        relayUrl: () => meta.value?.relay,
        write: (table, row, cols) => writes.local(() => state.write(table, row, cols)),
        rows: (table) => store.rows(table),
        online: () => this.#relay.online && meta.status === 'member',
        catchUp: () => domains.catchUp(),
        removed: () => roster.isRemoved(this.#identity.signer),
        notice: (kind, text) => feed.notice(kind, text),
        changed: () => feed.publishSoon(),
        defaultPlacement,
        views: () => domains.views,
        isAdmin: () => roster.isAdmin(),
      });
    this.pairing = new MeshPairing({
      crypto,
      meta,
      roster,
      domains,
      feed,
      identity: () => this.#identity,
      reloadIdentity: async (identity) => void (this.#identity = identity ?? (await crypto.view())),
      sendTo: (endpoint, body) => this.#relay.send(endpoint, body),
      online: () => this.#relay.online,
      classes: async () => (await this.#manifest()).map((e) => [e.table, e.mesh] as const),
      rows: (table) => store.rows(table),
      write: (table, row, cols) => writes.local(() => state.write(table, row, cols)),
      pushAdmission: (joining) => this.#relay.pushAdmission(joining),
      recordMachine: async (signer, cols) => {
        const written = await state.write('keyring', signer, cols);
        if (written.ok) await this.#refreshPeers();
        return written;
      },
      refreshPeers: () => this.#refreshPeers(),
      offerAll: () => state.offerAll(),
      announce: () => this.#tabs.announceChange(),
      startRelay: () => this.#startRelay(),
      becameMember: () => this.#onMember(),
      reloadAll: () => this.#tabs.reloadAll(),
    });
    this.domains = new DomainAdmin({
      domains,
      roster,
      store,
      crypto,
      online: () => this.#relay.online,
      record: (domain, purpose) => writes.local(() => state.write('domains', domain, { purpose })),
      changed: () => feed.publish(),
    });
    this.objects = new ObjectPlane(this.#objects, (domain) => this.domains.reads(domain));
    this.recovery = new MeshRecovery({
      crypto,
      state,
      meta,
      roster,
      objects: () => this.#objects,
      logEnd: () => store.lastPos(),
      write: (table, row, cols) => writes.local(() => state.write(table, row, cols)),
      pushAdmission: () => this.#relay.pushAdmission(),
      becameMember: async () => {
        this.#tabs.announceChange();
        await this.#startRelay();
      },
      changed: () => void feed.publish(),
      now: () => Date.now(),
    });
    this.#relay = new RelayLead({
      crypto,
      mls,
      meta,
      roster,
      domains,
      state,
      feed,
      tabs: this.#tabs,
      env,
      identity: () => this.#identity,
      frames: async (frames) => {
        await this.#dispatch.frames(frames);
        // The frame queue goes on while the snapshot builds (coalesced with the next frames').
        feed.publishSoon();
      },
      ready: () => this.#onReady(),
      syncObjects: () => {
        void this.#objects?.sync();
        void this.recovery.maybeCheckpoint();
      },
      reevaluate: async () => {
        this.#changed(await state.reevaluate());
        await feed.publish();
      },
    });
    this.#dispatch = new FrameDispatch({
      crypto,
      status: () => meta.status,
      roster,
      pairing: (from, message) => this.pairing.message(from, message),
      // A Welcome made this machine a member of a group: its standing key package is used up.
      mls: async (signer, message) => {
        if (await domains.message(signer, message)) await this.#publishStanding();
      },
      state: async (endpoint, message) => this.#changed(await state.receive(endpoint, message)),
      count: (type) => feed.count(type),
    });
  }

  /**
   * Opens this machine on its services. A browser needs no options; a headless machine
   * passes its SQLite store and `soloEnv`.
   */
  static async open(
    services: {
      readonly crypto: CryptoPort;
      /** The apply path, beside the keys: the crypto worker in a browser, in-process in Node. */
      readonly state: StatePort;
      readonly mls: MlsPort;
      /** The Parquet worker; without it this machine has no object plane. */
      readonly objects?: ObjectPort;
    },
    options: {
      readonly store?: MachineStore;
      readonly env?: MachineEnv;
      /** An archive stores every domain's objects unless a placement record says otherwise. */
      readonly defaultPlacement?: '*';
    } = {},
  ): Promise<MeshNode> {
    const { crypto, state, mls, objects } = services;
    const identity = await crypto.init();
    await mls.init();
    const store = options.store ?? new DexieReplicaStore(new NodeDatabase('sov-node'));
    const node = new MeshNode(
      { crypto, state, mls, objects },
      identity,
      store,
      options.env ?? browserEnv,
      options.defaultPlacement,
    );
    const meta = await node.#meta.load();
    if (meta?.status === 'member') await node.#rowNotices.load();
    await state.attach(
      proxy({
        send: (peer: string, body: Uint8Array) => node.#relay.send(peer, body),
        count: (type: string) => node.#feed.count(type),
      }),
    );
    await node.#configureState();
    await node.#objects?.keysChanged();
    await mls.setSequencer(proxy((bundle: Uint8Array) => node.#domains.sequence(bundle)));
    await node.#domains.refresh();
    // A machine restoring from a recovery kit talks to the relay's object store only, until restored.
    if (meta?.status === 'recovering') void node.recovery.restore();
    else if (meta) await node.#startRelay();
    return node;
  }

  /**
   * Calls back at once whenever rows change, with the new data version: views that page a
   * table ask for their window again without waiting for the next snapshot.
   */
  onRowsChanged(listener: (version: number) => void): () => void {
    return this.#feed.onRowsChanged(listener);
  }

  subscribe(listener: (snapshot: NodeSnapshot) => void): () => void {
    return this.#feed.subscribe(listener);
  }

  get status(): MeshStatus {
    return this.#meta.status;
  }

  /** A window of a table's rows for a view: sorted, filtered and counted beside the store (table-pages.ts). */
  async page(query: PageQuery): Promise<RowPage> {
    const page = await this.#state.page(query);
    const names = this.#roster.names();
    return { ...page, rows: page.rows.map((r) => rowView(r, names)) };
  }

  /** A page of envelopes not applied (parked, withheld or rejected), newest first, for the Sync panel. */
  refusals(kind: RefusalKind, offset: number, limit: number): Promise<Refusal[]> {
    return this.#store.refusals(kind, Math.max(0, Math.floor(offset)), Math.min(Math.max(0, Math.floor(limit)), 100));
  }

  /**
   * A sync cycle now: everything unacknowledged offered again, the domains caught up, objects
   * published and placed. False when the relay is out of reach (the cycle ran locally only).
   */
  syncNow(): Promise<boolean> {
    return this.#relay.syncNow();
  }

  /** Stops the relay session and the timers (tests and page teardown). */
  close(): void {
    this.pairing.stop();
    this.#relay.close();
    this.#tabs.close();
  }

  /** Tells the state plane what it must know of the mesh (state-service.ts `StateConfig`). */
  async #configureState(): Promise<void> {
    const meta = this.#meta.value;
    await this.#state.configure({
      anchors: meta?.anchors ?? [],
      narrowing: meta?.narrowing ?? {},
      provisional: meta?.provisionalClasses ?? {},
      peers: this.#roster.peers.map((endpoint) => this.#roster.addressOf(endpoint) ?? { endpoint, frame: '' }),
      trusted: this.#roster.trustedEndpoints(),
      signers: Object.fromEntries(this.#roster.live().map((m) => [m.endpoint, m.signer])),
    });
  }

  async #startRelay(): Promise<void> {
    // A machine restoring from a kit reaches only the relay's object store until it is restored.
    if (!this.#meta.value || this.#meta.status === 'recovering') return;
    await this.#refreshPeers();
    this.#relay.start();
  }

  async #otherTabChanged(): Promise<void> {
    await this.#state.invalidate();
    this.#feed.rowsChanged();
    await this.#meta.load();
    this.#identity = await this.#crypto.init();
    // Only the leading tab changes MLS state; the others re-read it to show it.
    if (!this.#relay.leading) await this.#mls.init();
    await this.#domains.refresh();
    await this.#startRelay();
    if (this.#relay.leading) await this.#state.offerAll();
    await this.#feed.publish();
  }

  async #onReady(): Promise<void> {
    if (this.#meta.status === 'joining') return this.pairing.resume();
    await this.#onMember();
    await this.#feed.publish();
    void this.#objects?.sync();
  }

  /**
   * Re-reads the keyring (mesh-roster.ts) and reconfigures delivery. When a machine became
   * trusted (this one among them, perhaps), each machine asks its peers again for what it
   * may hold now (sync.ts `askAgain`).
   */
  async #refreshPeers(): Promise<void> {
    const trustGrew = await this.#roster.refresh();
    await this.#configureState();
    await this.#roster.syncKeyring();
    if (trustGrew) await this.#state.askAgain();
  }

  /** Admins: machines the keyring removed leave every group we share with them. */
  async #reconcileDomains(): Promise<void> {
    if (!this.#roster.isAdmin() || !this.#relay.online) return;
    await this.#domains.reconcileRemovals(this.#roster.removedSigners());
  }

  /** Publishes this machine's standing key package when the record does not hold the current one. */
  async #publishStanding(): Promise<void> {
    if (this.#meta.status !== 'member') return;
    const row = `${this.#identity.signer}:mls`;
    const kp = await this.#domains.standingKeyPackage();
    if ((await this.#store.row('key_packages', row))?.cells['kp']?.value === kp) return;
    await this.writes.local(() => this.#state.write('key_packages', row, { kp }));
  }

  /**
   * The session is ready and this machine is a member: coming back, it first catches up on
   * every group's commits (a rotation while it was away hands it the new generation), then
   * removes what the keyring removed, then publishes.
   */
  async #onMember(): Promise<void> {
    await this.#domains.catchUp();
    await this.#reconcileDomains();
    await this.#publishStanding();
    await this.#state.connected();
  }

  /** What the state plane changed: counts, notices, and trust re-read when a control row moved. */
  #changed(changes: ChangeSummary): void {
    for (let i = 0; i < changes.revoked; i++) this.#feed.count('SignerRemoved');
    if (changes.applied === 0) return;
    this.#feed.rowsChanged();
    this.#tabs.announceChange();
    this.#resurrected(changes.resurrections, changes.overtaken);
    if (changes.control) {
      void this.#refreshPeers()
        .then(() => this.#relay.pushAdmission())
        .then(() => this.#state.offerAll())
        // A commit refused for a leaf the keyring did not name yet is in the log: take it now.
        .then(() => (this.#relay.online ? this.#domains.catchUp() : undefined))
        .then(() => this.#reconcileDomains());
    }
  }

  #resurrected(resurrections: readonly Resurrection[], lost: readonly Overtaken[] = []): void {
    if (resurrections.length + lost.length > 0)
      void this.#rowNotices.announce(resurrections, lost).then(() => this.#feed.publish());
  }

  async #manifest(): Promise<ManifestEntry[]> {
    const { provisional, narrowing } = this.#meta.classChoices;
    return manifestView(await this.#store.rows('sync_manifest'), provisional, narrowing);
  }

  #snapshotSources(): SnapshotSources {
    return {
      store: this.#store,
      identity: () => this.#identity,
      meta: this.#meta,
      roster: this.#roster,
      feed: this.#feed,
      relay: () => this.#relay.view,
      pairing: this.pairing,
      manifest: () => this.#manifest(),
      domains: this.#domains,
      objects: async () => (await this.#objects?.entries()) ?? [],
      rewraps: () => this.#objects?.rewraps() ?? [],
    };
  }
}
