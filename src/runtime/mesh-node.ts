/**
 * A browser machine of the mesh: the composition root that wires the crypto
 * worker, the IndexedDB replica, the delivery engine and the relay session,
 * plus the behaviour that belongs to none of them — founding a mesh, the
 * pairing exchange, machine removal, and dispatching frames. The UI observes it
 * through `subscribe` and never sees a key.
 */
import { proxy } from 'comlink';
import type { CryptoPort, MlsPort, StatePort } from './ports.js';
import { fromHex, toHex } from '../core/bytes.js';
import type { WriteError, WriteOutcome } from '../core/replica.js';
import { err, ok, type Result } from '../core/result.js';
import { DOMAINS, isDomainName, type ColumnValue, type DomainName } from '../core/schema.js';
import type { DomainItems } from '../core/peer-wire.js';
import { continuesEvents, joinEvents } from '../core/sync.js';
import type { Resurrection } from '../core/store.js';
import { isClassifiable, isPrivacyClass, type LocalClassChoices, type PrivacyClass } from '../core/sync-manifest.js';
import { DexieReplicaStore, NodeDatabase } from '../storage/dexie-store.js';
import { errorName } from '../storage/key-wrap.js';
import type { ChangeSummary, StateConfig } from './state-service.js';
import type { CryptoService, IdentityView, InboundMessage, JoinError, PeerAddress } from './crypto-service.js';
import { InviterCeremony } from './pairing-inviter.js';
import { JoinerCeremony } from './pairing-joiner.js';
import { MeshDomains, type DomainsError } from './mesh-domains.js';
import { MeshObjects, PLACEMENT_TABLE, type ObjectPort, type QueryOptions } from './mesh-objects.js';
import type { ImportProgress, ObjectError, PendingObject } from './object-service.js';
import type { QueryResult } from '../core/query/execute.js';
import type { RelayState } from './relay-connection.js';
import { RelaySession, type InboundFrame } from './relay-session.js';
import type { MachineStore } from './machine-store.js';
import {
  buildSnapshot,
  type MeshStatus,
  type NodeSnapshot,
  type Notice,
  type SnapshotSources,
} from './node-snapshot.js';
import { browserEnv, type MachineEnv, type SessionPort } from './machine-env.js';
import type { Page, PageQuery } from './table-pages.js';
import {
  machinesView,
  manifestView,
  rowView,
  vouchesView,
  vouchThreshold,
  type Machine,
  type ManifestEntry,
  type RowView,
} from './views.js';

type MeshMeta = {
  readonly status: 'joining' | 'member';
  readonly relay: string;
  readonly name: string;
  /** Signers this machine trusts as admins without a control record: the founder and its inviter. */
  readonly anchors: readonly string[];
  /** The inviter's endpoint and frame key, known from the ticket before the keyring arrives. */
  readonly anchorPeers?: readonly PeerAddress[];
  /** The relay's Ed25519 key (hex) this machine pinned: from the ticket, or a founder's first contact. */
  readonly relayKey?: string;
  /** The version of the last admission list this machine pushed (admins). */
  readonly admissionVersion?: number;
  /** Privacy classes this machine narrowed for itself (never replicated; sync-manifest.ts). */
  readonly narrowing?: Readonly<Record<string, PrivacyClass>>;
  /** The manifest the admitting admin sent with the keys, followed until the signed records arrive. */
  readonly provisionalClasses?: Readonly<Record<string, PrivacyClass>>;
};

export type { Machine, ManifestEntry, RowView } from './views.js';
export type { PageQuery } from './table-pages.js';
/** A page of rows as a view shows them (writers by name). */
export type RowPage = Omit<Page, 'rows'> & { readonly rows: readonly RowView[] };
export type { PairingView } from './pairing-inviter.js';
export type { DomainEntry, MeshStatus, NodeSnapshot, Notice } from './node-snapshot.js';
export type { MachineStore } from './machine-store.js';
export type { JoinView } from './pairing-joiner.js';

const META_KEY = 'mesh';
const RECEIPTS_KEY = 'mls-receipts';
const RELAY_KEY_WAIT_MS = 10_000;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const MAX_NOTICES = 30;
/** Longest a snapshot build holds back the next one. */
const SNAPSHOT_WATCHDOG_MS = 3000;

export function defaultRelayUrl(location: Location): string {
  return `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/ws`;
}

export class MeshNode {
  readonly #crypto: CryptoPort;
  readonly #domains: MeshDomains;
  readonly #objects: MeshObjects | undefined;
  readonly #mls: MlsPort;
  readonly #store: MachineStore;
  readonly #env: MachineEnv;
  /** The state plane's apply path: the replica and delivery engine, where the keys are (state-service.ts). */
  readonly #state: StatePort;
  /** Endpoints this machine delivers to, as last configured into the state plane. */
  #peers: readonly string[] = [];
  readonly #tabs: SessionPort;
  #identity: IdentityView;
  #meta: MeshMeta | undefined;
  #machines: Machine[] = [];
  /** Endpoints of trusted machines as last seen; undefined until the keyring was first read. */
  #trusted: Set<string> | undefined;
  /** The relay session, in the tab that leads; undefined in tabs standing by (relay-session.ts). */
  #relay: RelaySession | undefined;
  /** Set until this tab leads: another tab holds the relay session for this machine. */
  #standby = false;
  readonly #transient: Record<string, number> = {};
  readonly #notices: Notice[] = [];
  readonly #inviter: InviterCeremony;
  readonly #joiner: JoinerCeremony;
  #noticeId = 0;
  /** Grows with every change to rows (snapshot `dataVersion`). */
  #dataVersion = 0;
  readonly #rowListeners = new Set<(version: number) => void>();
  readonly #listeners = new Set<(snapshot: NodeSnapshot) => void>();
  /** Snapshots started, and the newest one delivered: an older build that finishes late is dropped. */
  #snapshotsStarted = 0;
  #snapshotDelivered = 0;
  /** The build running (or the watchdog's end), and the one queued behind it (`#publish`). */
  #buildInFlight: Promise<unknown> = Promise.resolve();
  #queuedBuild: Promise<void> | undefined;

  private constructor(
    crypto: CryptoPort,
    state: StatePort,
    mls: MlsPort,
    identity: IdentityView,
    store: MachineStore,
    meta: MeshMeta | undefined,
    objects: ObjectPort | undefined,
    env: MachineEnv,
    defaultPlacement: '*' | undefined,
  ) {
    this.#env = env;
    this.#tabs = env.session(() => void this.#otherTabChanged());
    this.#crypto = crypto;
    this.#mls = mls;
    this.#domains = new MeshDomains({
      mls,
      groupIdOf: (domain) => crypto.groupIdOf(domain),
      reloadKeys: async () => {
        const added = await crypto.loadNewDomainKeys();
        if (added === 0) return;
        this.#identity = await crypto.view();
        await this.#objects?.keysChanged();
        // A new generation may open rows this machine held without reading: take them in.
        if (this.#meta?.status === 'member') this.#changed(await this.#state.reopen());
      },
      sendTo: async (signer, message) => {
        const machine = this.#machines.find((m) => m.signer === signer && !m.removed);
        const address = machine && this.#addressOf(machine.endpoint);
        if (!machine || !address) return false;
        this.#sendTo(machine.endpoint, await crypto.sealMessage(address, message));
        return true;
      },
      peers: () => this.#machines.filter((m) => !m.removed && m.signer !== this.#identity.signer).map((m) => m.signer),
      standingOf: async (signer) => {
        const value = (await store.row('key_packages', `${signer}:mls`))?.cells['kp']?.value;
        return typeof value === 'string' ? value : undefined;
      },
      loadReceipts: async () => (await store.getMeta<Uint8Array[]>(RECEIPTS_KEY)) ?? [],
      saveReceipts: (receipts) => store.setMeta(RECEIPTS_KEY, receipts),
      notice: (kind, text) => this.#notice(kind, text),
      count: (type) => this.#count(type),
      changed: () => void this.#publish(),
    });
    this.#identity = identity;
    this.#store = store;
    this.#meta = meta;
    this.#objects =
      objects &&
      new MeshObjects({
        service: objects,
        self: () => this.#identity.signer,
        relayUrl: () => this.#meta?.relay,
        write: (table, row, cols) => this.#local(() => this.#state.write(table, row, cols)),
        rows: (table) => store.rows(table),
        online: () => this.#online() && this.#meta?.status === 'member',
        catchUp: () => this.#domains.catchUp(),
        removed: () => this.#machines.some((m) => m.signer === this.#identity.signer && m.removed),
        notice: (kind, text) => this.#notice(kind, text),
        changed: () => void this.#publish(),
        defaultPlacement,
      });
    this.#state = state;
    [this.#inviter, this.#joiner] = this.#ceremonies(crypto);
  }

  /** The two sides of pairing, wired to this machine (pairing-inviter.ts, pairing-joiner.ts). */
  #ceremonies(crypto: CryptoPort): [InviterCeremony, JoinerCeremony] {
    const common = {
      sendTo: (endpoint: string, body: Uint8Array) => this.#sendTo(endpoint, body),
      notice: (kind: 'info' | 'warning', text: string) => this.#notice(kind, text),
      count: (type: string) => this.#count(type),
      changed: () => this.#publish(),
    };
    const inviter = new InviterCeremony({
      ...common,
      crypto,
      self: () => this.#identity.signer,
      isAdmin: () => this.#meta !== undefined && this.#isAdmin(),
      anchors: () => this.#meta?.anchors ?? [],
      classes: async () => (await this.#manifest()).map((e) => [e.table, e.mesh] as const),
      vouchers: () => this.#vouchers(),
      vouchThreshold: () => this.#vouchK(),
      names: () => new Map(this.#machines.map((m) => [m.signer, m.name])),
      pushAdmission: (joining) => this.#pushAdmission(joining),
      syncKeyring: (extra) => this.#syncKeyring(extra),
      addJoiner: async (kps) => {
        const added = await this.#domains.addJoiner(kps);
        return added.ok ? added : err({ type: added.error.type, text: domainErrorText(added.error) });
      },
      recordMachine: async (signer, cols) => {
        const written = await this.#state.write('keyring', signer, cols);
        if (written.ok) await this.#refreshPeers();
        return written;
      },
      joined: async () => {
        this.#announce();
        await this.#refreshPeers();
        await this.#state.offerAll();
      },
      now: () => Date.now(),
      random: (n) => globalThis.crypto.getRandomValues(new Uint8Array(n)),
    });
    const joiner = new JoinerCeremony({
      ...common,
      crypto,
      joinOffers: () => this.#domains.joinOffers(),
      inviter: () => (this.#meta?.status === 'joining' ? this.#meta.anchorPeers?.[0] : undefined),
      name: () => this.#meta?.name ?? '',
      online: () => this.#online(),
      abandon: () => this.cancelJoin(),
    });
    return [inviter, joiner];
  }

  #classChoices(): LocalClassChoices {
    return {
      narrowing: new Map(Object.entries(this.#meta?.narrowing ?? {})),
      provisional: new Map(Object.entries(this.#meta?.provisionalClasses ?? {})),
    };
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
    const meta = await store.getMeta<MeshMeta>(META_KEY);
    const node = new MeshNode(
      crypto,
      state,
      mls,
      identity,
      store,
      meta,
      objects,
      options.env ?? browserEnv,
      options.defaultPlacement,
    );
    await state.attach(
      proxy({
        send: (peer: string, body: Uint8Array) => node.#sendTo(peer, body),
        count: (type: string) => node.#count(type),
      }),
    );
    await node.#configureState();
    await node.#objects?.keysChanged();
    await mls.setSequencer(proxy((bundle: Uint8Array) => node.#domains.sequence(bundle)));
    await node.#domains.refresh();
    if (meta) await node.#startRelay();
    return node;
  }

  /**
   * Calls back at once whenever rows change, with the new data version: views that page a
   * table ask for their window again without waiting for the next snapshot.
   */
  onRowsChanged(listener: (version: number) => void): () => void {
    this.#rowListeners.add(listener);
    return () => this.#rowListeners.delete(listener);
  }

  #rowsChanged(): void {
    this.#dataVersion++;
    for (const listener of this.#rowListeners) listener(this.#dataVersion);
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
    const created = await during('create the mesh secret', () => this.#crypto.createMesh());
    if (!created.ok) throw new Error('mesh: this machine already belongs to a mesh');
    this.#identity = created.value;
    const self = this.#identity.signer;
    await during('save the mesh', async () => {
      await this.#saveMeta({ status: 'member', relay, name, anchors: [self], anchorPeers: [] });
      await this.#syncKeyring();
    });
    const founded = await during('found the domains', () => this.#domains.found());
    if (!founded.ok) throw new Error(`mesh: could not found the domains (${founded.error.type})`);
    const kp = await during('make a standing key package', () => this.#domains.standingKeyPackage());
    for (const [table, row, cols] of [
      ['keyring', self, { endpoint: this.#identity.endpoint, frame: this.#identity.frame, name }],
      ['roles', self, { role: 'admin' }],
      // The founder classifies the product's data tables; everything unregistered stays local.
      ['sync_manifest', 'device_profiles', { class: 'public' }],
      ['sync_manifest', 'field_notes', { class: 'public' }],
      ['sync_manifest', 'object_catalog', { class: 'public' }],
      ['sync_manifest', 'object_access', { class: 'public' }],
      ['key_packages', `${self}:mls`, { kp }],
    ] as const) {
      const written = await during(`record ${table}`, () => this.#state.write(table, row, cols));
      if (!written.ok) throw new Error(`mesh: could not record this machine (${written.error.type})`);
    }
    this.#announce();
    await during('start the relay session', () => this.#startRelay());
  }

  /**
   * Issues a pairing ticket (admins only), once the relay's key is pinned, and
   * pushes an admission list naming the new invitation so the relay will serve
   * the joiner (and let it write to this machine only).
   */
  async invite(): Promise<string> {
    if (!this.#meta || !this.#isAdmin()) throw new Error('mesh: only an admin can invite');
    // A founder pins the relay's key on first contact, moments after creating the mesh.
    for (let waited = 0; !this.#meta.relayKey && waited < RELAY_KEY_WAIT_MS; waited += 100) await sleep(100);
    if (!this.#meta.relayKey) throw new Error('mesh: connect to the relay once before inviting');
    const ticket = await this.#crypto.createInvitation(this.#meta.relay, this.#meta.relayKey);
    await this.#pushAdmission();
    return ticket;
  }

  /** Starts joining with a pasted ticket; completes when the inviter's answer arrives. */
  async join(ticket: string, name: string): Promise<Result<unknown, JoinError>> {
    const started = await this.#crypto.beginJoin(ticket);
    if (!started.ok) return started;
    const { relay, relayKey, inviter, inviterFrame } = started.value;
    const anchorPeers = [{ endpoint: inviter, frame: inviterFrame }];
    await this.#saveMeta({ status: 'joining', relay, relayKey, name, anchors: [], anchorPeers });
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

  /** A window of a table's rows for a view: sorted, filtered and counted beside the store (table-pages.ts). */
  async page(query: PageQuery): Promise<RowPage> {
    const page = await this.#state.page(query);
    const names = new Map(this.#machines.map((m) => [m.signer, m.name]));
    return { ...page, rows: page.rows.map((r) => rowView(r, names)) };
  }

  editProfile(row: string, cols: Record<string, ColumnValue>): Promise<Result<WriteOutcome, WriteError>> {
    return this.#local(() => this.#state.write('device_profiles', row, cols));
  }

  deleteProfile(row: string): Promise<Result<WriteOutcome, WriteError>> {
    return this.#local(() => this.#state.delete('device_profiles', row));
  }

  /** Admin: sets a data table's mesh-wide privacy class (a signed control record). */
  setTableClass(table: string, privacy: PrivacyClass): Promise<Result<WriteOutcome, WriteError>> {
    if (!isClassifiable(table) || !isPrivacyClass(privacy)) {
      return Promise.resolve(err({ type: 'InvalidEdit', reason: `${table} takes no privacy class` }));
    }
    return this.#local(() => this.#state.write('sync_manifest', table, { class: privacy }));
  }

  /**
   * Narrows a table's class on this machine only (`undefined` lifts the
   * narrowing). It can never widen: the narrower of this and the mesh's class
   * applies. Rows withheld while a table was local here are asked for again
   * once it no longer is.
   */
  async narrowTable(table: string, privacy: PrivacyClass | undefined): Promise<void> {
    const meta = this.#meta;
    if (!meta || !isClassifiable(table)) return;
    const others = Object.entries(meta.narrowing ?? {}).filter(([t]) => t !== table);
    const chosen = privacy && isPrivacyClass(privacy) ? [[table, privacy] as const] : [];
    await this.#saveMeta({ ...meta, narrowing: Object.fromEntries([...others, ...chosen]) });
    this.#announce();
    await this.#publish();
    await this.#state.askAgain();
  }

  /** Admin: marks a machine trusted (it may then hold Trusted tables) or not. */
  setTrusted(signer: string, trusted: boolean): Promise<Result<WriteOutcome, WriteError>> {
    if (!this.#machines.some((m) => m.signer === signer && !m.removed)) {
      return Promise.resolve(err({ type: 'InvalidEdit', reason: 'not a machine of this mesh' }));
    }
    return this.#local(async () => {
      const written = await this.#state.write('keyring', signer, { trusted });
      // Re-reads the keyring: a peer trusted now is offered the trusted lane from here on.
      if (written.ok) await this.#refreshPeers();
      return written;
    });
  }

  /**
   * Inviter: the human compared the string with the joining machine's and
   * confirmed (or declined), or admits by members' vouches (pairing-inviter.ts).
   */
  answerPairing(inv: string, confirmed: boolean, by: 'code' | 'vouches' = 'code'): Promise<void> {
    return this.#inviter.answer(inv, confirmed, by);
  }

  /** Joiner: the human compared the string with the inviting machine's and confirmed (or declined). */
  answerJoin(confirmed: boolean): Promise<void> {
    return this.#joiner.answer(confirmed);
  }

  /**
   * Vouches for a machine that asks to join, by the fingerprint its own screen
   * shows (the human checked it in person): a signed control record that lets
   * an admin admit it once enough members vouched.
   */
  vouch(fingerprint: string): Promise<Result<WriteOutcome, WriteError>> {
    const fp = fingerprint.trim().toLowerCase();
    if (!/^[0-9a-f]{4}(-[0-9a-f]{4}){3}$/.test(fp)) {
      return Promise.resolve(err({ type: 'InvalidEdit', reason: 'not a fingerprint (xxxx-xxxx-xxxx-xxxx)' }));
    }
    return this.#local(() =>
      this.#state.write('vouches', `${this.#identity.signer}:${fp}`, { candidate: fp, note: '' }),
    );
  }

  /** Admins: how many members' vouches let an admin admit a machine (k, per mesh; default 2). */
  setVouchThreshold(k: number): Promise<Result<WriteOutcome, WriteError>> {
    if (!Number.isSafeInteger(k) || k < 1 || k > 16) {
      return Promise.resolve(
        err({ type: 'InvalidEdit', reason: 'vouches needed must be a whole number from 1 to 16' }),
      );
    }
    return this.#local(() => this.#state.write('settings', 'vouch_k', { value: k }));
  }

  async #vouchers(): Promise<Map<string, string[]>> {
    return vouchesView(await this.#store.rows('vouches'), this.#machines);
  }

  async #vouchK(): Promise<number> {
    return vouchThreshold(await this.#store.rows('settings'));
  }

  /**
   * Admin: creates a data domain that only `readers` (and this machine) may
   * read — every other machine of the mesh still stores and forwards its
   * sealed rows, and can open none of them. Recorded in CONTROL `domains`;
   * readers join its MLS group by their standing key packages.
   */
  async createDomain(name: string, purpose: string, readers: readonly string[]): Promise<Result<void, DomainsError>> {
    const domain = name.trim().toUpperCase();
    const invalid = (reason: string) => Promise.resolve(err({ type: 'InvalidDomain' as const, reason }));
    if (!this.#isAdmin()) return invalid('only an admin creates a domain');
    if (!isDomainName(domain) || DOMAINS.includes(domain)) {
      return invalid('a domain name is 2-32 capital letters, digits or _, and not CONTROL or GENERAL');
    }
    if (this.#domains.views.some((v) => v.domain === domain) || (await this.#store.row('domains', domain))) {
      return invalid(`domain ${domain} exists already`);
    }
    if (!this.#online()) return invalid('connect to the relay first: the sequencer orders the change');
    const live = new Set(this.#machines.filter((m) => !m.removed).map((m) => m.signer));
    const members = readers.filter((r) => r !== this.#identity.signer && live.has(r));
    const recorded = await this.#local(() => this.#state.write('domains', domain, { purpose: purpose.slice(0, 200) }));
    if (!recorded.ok) return invalid(recorded.error.type);
    const created = await this.#domains.create(domain, members);
    await this.#publish();
    return created;
  }

  /** Admin: lets one more machine read a domain, with a history policy. */
  async addDomainReader(
    domain: DomainName,
    signer: string,
    history: 'forward' | 'full' | 'fresh',
  ): Promise<Result<void, DomainsError>> {
    const added = await this.#domains.add(domain, [signer], history);
    await this.#publish();
    return added;
  }

  /** Admin: stops a machine reading a domain from now on (a new generation it cannot open). */
  async removeFromDomain(domain: DomainName, signer: string): Promise<Result<void, DomainsError>> {
    const removed = await this.#domains.remove(domain, [signer]);
    await this.#publish();
    return removed;
  }

  /** Writes a note into a domain this machine can read. */
  writeNote(domain: DomainName, title: string, text: string, id?: string): Promise<Result<WriteOutcome, WriteError>> {
    const row = `${domain}:${id ?? crypto.randomUUID()}`;
    if (!this.#identity.member || !this.#domains.views.some((v) => v.domain === domain && !v.removed && !v.awaiting)) {
      return Promise.resolve(err({ type: 'InvalidEdit', reason: `this machine cannot write into ${domain}` }));
    }
    return this.#local(() => this.#state.write('field_notes', row, { title, text }));
  }

  deleteNote(row: string): Promise<Result<WriteOutcome, WriteError>> {
    return this.#local(() => this.#state.delete('field_notes', row));
  }

  #objectPlane(): Result<MeshObjects, ObjectError> {
    return this.#objects ? ok(this.#objects) : err({ type: 'NotReady', reason: 'this page runs no Parquet worker' });
  }

  #canProduce(domain: DomainName): Result<MeshObjects, ObjectError> {
    if (!this.#domains.views.some((v) => v.domain === domain && !v.removed && !v.awaiting)) {
      return err({ type: 'NoDomainKey', domain });
    }
    return this.#objectPlane();
  }

  /** Forms one encrypted object of a CSV file in `domain`; it is published when the relay is reachable. */
  async importCsv(
    file: File,
    domain: DomainName,
    progress?: ImportProgress,
  ): Promise<Result<PendingObject, ObjectError>> {
    const plane = this.#canProduce(domain);
    return plane.ok ? plane.value.importCsv(file, domain, progress) : plane;
  }

  /** Forms an object of generated sample measurements in `domain`. */
  async importSample(
    domain: DomainName,
    rows: number,
    progress?: ImportProgress,
  ): Promise<Result<PendingObject, ObjectError>> {
    const plane = this.#canProduce(domain);
    return plane.ok ? plane.value.importSample(domain, rows, progress) : plane;
  }

  /** An object decrypted as CSV or plaintext Parquet, for the user to save. */
  async downloadObject(id: string, format: 'csv' | 'parquet'): Promise<Result<Uint8Array, ObjectError>> {
    const plane = this.#objectPlane();
    return plane.ok ? plane.value.download(id, format) : plane;
  }

  /** Every key this machine holds, tried on an object it stores: `NoKeyOpens` unless it reads the domain. */
  async tryKeysOnObject(id: string): Promise<Result<{ readonly opened: true }, ObjectError>> {
    const plane = this.#objectPlane();
    return plane.ok ? plane.value.tryEveryKey(id) : plane;
  }

  /** SQL over this machine's catalog (core/query/sql.ts); `id` lets `cancelQuery` stop it. */
  async query(sql: string, options: QueryOptions = {}): Promise<Result<QueryResult, ObjectError>> {
    const plane = this.#objectPlane();
    return plane.ok ? plane.value.query(sql, options) : plane;
  }

  async cancelQuery(id: string): Promise<void> {
    await this.#objects?.cancelQuery(id);
  }

  /** Publishes, uploads and places objects now rather than at the next batch cycle. */
  async syncObjects(): Promise<void> {
    await this.#objects?.sync();
  }

  /** Admin: which domains' objects a machine stores (`*`, names separated by commas, or '' for none). */
  setPlacement(signer: string, domains: string): Promise<Result<WriteOutcome, WriteError>> {
    return this.#local(() => this.#state.write(PLACEMENT_TABLE, signer, { domains }));
  }

  /**
   * Storage is not reading: the sealed rows this machine holds but cannot open,
   * counted by domain, and what trying every key it holds on them gives — a
   * typed `NoKeyOpens` unless one opens (which would be a bug).
   */
  async unreadable(): Promise<{
    byDomain: Record<string, number>;
    attempt: Awaited<ReturnType<CryptoService['tryEveryKey']>>;
  }> {
    const held = await this.#store.opaque(5000);
    const byDomain: Record<string, number> = {};
    for (const entry of held) byDomain[entry.domain] = (byDomain[entry.domain] ?? 0) + 1;
    return { byDomain, attempt: await this.#crypto.tryEveryKey(held.map((e) => e.sealed)) };
  }

  /** Removes a machine for good: its later events, bindings and sessions fail closed everywhere. */
  async removeMachine(signer: string): Promise<Result<WriteOutcome, WriteError>> {
    const removed = await this.#local(() => this.#state.remove(signer));
    if (removed.ok) {
      await this.#refreshPeers();
      await this.#pushAdmission();
      await this.#reconcileDomains();
    }
    return removed;
  }

  async #local(write: () => Promise<Result<WriteOutcome, WriteError>>): Promise<Result<WriteOutcome, WriteError>> {
    const written = await write();
    if (written.ok) {
      this.#rowsChanged();
      this.#resurrected(written.value.resurrections);
      this.#announce();
      // Offered with the rest of a burst of writes, not one frame each (state-service.ts).
      void this.#state.offerSoon().catch((e: unknown) => this.#notice('warning', `sync: ${String(e)}`));
      // Durable now; the screen follows with the next snapshot (coalesced with the burst's others).
      void this.#publish().catch(() => this.#count('SnapshotFailed'));
    }
    return written;
  }

  async #saveMeta(meta: MeshMeta): Promise<void> {
    this.#meta = meta;
    await this.#store.setMeta(META_KEY, meta);
    await this.#configureState();
  }

  /** Tells the state plane what it must know of the mesh (state-service.ts `StateConfig`). */
  async #configureState(): Promise<void> {
    const config: StateConfig = {
      anchors: this.#meta?.anchors ?? [],
      narrowing: this.#meta?.narrowing ?? {},
      provisional: this.#meta?.provisionalClasses ?? {},
      peers: this.#peers.map((endpoint) => this.#addressOf(endpoint) ?? { endpoint, frame: '' }),
      trusted: this.#machines.filter((m) => m.trusted && !m.removed).map((m) => m.endpoint),
    };
    await this.#state.configure(config);
  }

  #isAdmin(): boolean {
    const self = this.#identity.signer;
    return (
      this.#meta?.anchors.includes(self) === true || this.#machines.some((m) => m.signer === self && m.role === 'admin')
    );
  }

  /** Joins the queue for the relay session; other tabs of this browser stay on standby meanwhile. */
  async #startRelay(): Promise<void> {
    if (!this.#meta) return;
    await this.#refreshPeers();
    if (!this.#relay) this.#standby = true;
    this.#tabs.requestLeadership(() => this.#lead());
  }

  #online(): boolean {
    return this.#relay?.state === 'ready';
  }

  /** This tab was elected: the relay session, its frame queue and timers (relay-session.ts). */
  #lead(): void {
    if (!this.#meta) return;
    this.#standby = false;
    this.#relay = new RelaySession(
      {
        url: () => this.#meta?.relay ?? '',
        topic: () => this.#identity.topic,
        authenticate: (nonce) => this.#crypto.relayAuth(nonce),
        pinnedRelayKey: () => (this.#meta?.relayKey ? fromHex(this.#meta.relayKey) : undefined),
        pinRelayKey: (key) => {
          if (this.#meta && !this.#meta.relayKey) void this.#saveMeta({ ...this.#meta, relayKey: toHex(key) });
        },
        admissionRecord: () => this.#admissionRecord(),
        // Another tab may have led before: take the MLS states up from the key store, then connect.
        prepare: async () => {
          await this.#mls.init();
          await this.#domains.refresh();
        },
        frames: (frames) => this.#onFrames(frames),
        drainable: () => this.#meta?.status === 'member',
        stateChanged: (state) => this.#relayChanged(state),
        sequencer: (message) => this.#domains.onSequencer(message),
        relayError: (code, message) => {
          this.#count(`relay:${code}`);
          if (code === 'not-a-member') this.#domains.refused(message);
        },
        batchCycle: (online) => this.#batchCycle(online),
        reevaluate: () => this.#reevaluate(),
        notice: (kind, text) => this.#notice(kind, text),
      },
      this.#env,
    );
  }

  /** The correctness backstop behind realtime push: re-offer everything unacknowledged. */
  async #batchCycle(online: boolean): Promise<void> {
    await this.#state.resend();
    if (online && this.#meta?.status === 'member') {
      await this.#domains.catchUp();
      void this.#objects?.sync();
      for (const m of this.#machines)
        if (!m.removed && m.signer !== this.#identity.signer) void this.#domains.gossip(m.signer);
    }
    await this.#publish();
  }

  /** Parked envelopes whose reason may have passed (the clock moved on) get another look. */
  async #reevaluate(): Promise<void> {
    this.#changed(await this.#state.reevaluate());
    await this.#publish();
  }

  /** Stops the relay session and the timers (tests and page teardown). */
  close(): void {
    this.#joiner.stop();
    this.#relay?.close();
    this.#tabs.close();
  }

  #announce(): void {
    this.#tabs.announceChange();
  }

  async #otherTabChanged(): Promise<void> {
    await this.#state.invalidate();
    this.#rowsChanged();
    this.#meta = await this.#store.getMeta<MeshMeta>(META_KEY);
    this.#identity = await this.#crypto.init();
    // Only the leading tab changes MLS state; the others re-read it to show it.
    if (!this.#relay) await this.#mls.init();
    await this.#domains.refresh();
    await this.#startRelay();
    if (this.#relay) await this.#state.offerAll();
    await this.#publish();
  }

  #relayChanged(state: RelayState): void {
    if (state === 'ready') void this.#attachSequencer().then(() => this.#onReady());
    else if (state === 'offline') {
      this.#domains.detach();
      void this.#state.disconnected();
    }
    void this.#publish();
  }

  async #attachSequencer(): Promise<void> {
    const relay = this.#relay;
    const key = this.#meta?.relayKey && fromHex(this.#meta.relayKey);
    if (relay && key) await this.#domains.attach((m) => void relay.sequencerSend(m), key);
  }

  async #onReady(): Promise<void> {
    if (this.#meta?.status === 'joining') return this.#joiner.start();
    await this.#onMember();
    await this.#publish();
    void this.#objects?.sync();
  }

  #sendTo(peer: string, body: Uint8Array): void {
    if (this.#relay?.send(peer, body) !== true) this.#count('NotSentOffline');
  }

  /**
   * Handles frames from peers, arrived live or through the inbox, in order; durable once
   * it resolves. The crypto worker refuses a frame before anything is imported unless its
   * sender is bound in the keyring (or it is a pairing message this machine is waiting
   * for); each refusal is counted by reason. Consecutive `events` messages of one peer
   * that continue each other are taken in as one (a catch-up delivers thousands of small
   * frames): one ingest, one store transaction, one acknowledgement.
   */
  async #onFrames(frames: readonly InboundFrame[]): Promise<void> {
    const opened = await this.#crypto.openMessages(
      frames.map((f) => ({ from: f.from, body: f.body, bound: this.#addressOf(f.from)?.frame })),
    );
    let run: { from: string; message: EventsMessage } | undefined;
    const flush = async (): Promise<void> => {
      const taken = run;
      run = undefined;
      if (taken) await this.#dispatch(taken.from, taken.message, '');
    };
    for (const [i, result] of opened.entries()) {
      const from = frames[i]!.from;
      if (!result.ok) {
        this.#count(result.error.type);
        continue;
      }
      const message = result.value.message;
      if (message.t === 'events' && run?.from === from && continuesEvents(run.message, message)) {
        run.message = joinEvents(run.message, message);
        continue;
      }
      await flush();
      if (message.t === 'events') run = { from, message };
      else await this.#dispatch(from, message, result.value.frame);
    }
    await flush();
    await this.#crypto.rememberAll(opened.flatMap((r) => (r.ok ? [{ rid: r.value.rid, ts: r.value.ts }] : [])));
    // The frame queue goes on while the snapshot builds (coalesced with the next frames').
    void this.#publish().catch(() => this.#count('SnapshotFailed'));
  }

  /** The endpoint and bound frame key of a peer: from the keyring, else from the ticket we joined with. */
  #addressOf(endpoint: string): PeerAddress | undefined {
    const machine = this.#machines.find((m) => m.endpoint === endpoint && !m.removed && m.frame !== '');
    if (machine) return { endpoint, frame: machine.frame };
    if (this.#machines.some((m) => m.endpoint === endpoint && m.removed)) return undefined;
    return this.#meta?.anchorPeers?.find((p) => p.endpoint === endpoint);
  }

  async #dispatch(from: string, message: InboundMessage, frame: string): Promise<void> {
    switch (message.t) {
      case 'join-request':
        return this.#inviter.request({ endpoint: from, frame }, message);
      case 'join-challenge':
        if (this.#meta?.status !== 'joining') return this.#count('UnexpectedPairingMessage');
        return this.#joiner.challenged(message);
      case 'join-reveal':
        return this.#inviter.revealed({ endpoint: from, frame }, message);
      case 'join-confirm':
        return this.#inviter.joinerConfirmed({ endpoint: from, frame }, message);
      case 'join-accept':
        return this.#joined(
          { endpoint: from, frame },
          toHex(message.signer),
          message.anchors.map(toHex),
          Object.fromEntries(message.classes),
          message.welcomes,
        );
      case 'mls-welcome':
      case 'mls-heads':
      case 'mls-groupinfo-request':
      case 'mls-groupinfo': {
        if (this.#meta?.status !== 'member') return this.#count('NotYetMember');
        const sender = this.#machines.find((m) => m.endpoint === from && !m.removed);
        if (!sender || !this.#peers.includes(from)) return this.#count('UnknownEndpoint');
        if (message.t === 'mls-heads') return this.#domains.heads(message.receipts);
        if (message.t === 'mls-groupinfo-request')
          return this.#domains.groupInfoRequested(sender.signer, message.domain);
        if (message.t === 'mls-groupinfo') return this.#domains.groupInfoArrived(message.domain, message.info);
        await this.#domains.welcomed(message.domain, message.bundle);
        return this.#publishStanding();
      }
      case 'join-refused':
        if (this.#meta?.status === 'joining') return this.#joiner.refused(from, message.reason);
        await this.#inviter.joinerDeclined({ endpoint: from, frame }, message.inv, message.reason);
        return;
      case 'events':
      case 'ack':
      case 'want':
      case 'sweep':
      case 'resent':
        if (this.#meta?.status !== 'member') return this.#count('NotYetMember');
        // Removed machines are not peers: their frames fail closed here, before any import.
        if (!this.#peers.includes(from)) return this.#count('UnknownEndpoint');
        return this.#changed(await this.#state.receive(from, message));
    }
  }

  async #joined(
    from: PeerAddress,
    inviter: string,
    inviterAnchors: readonly string[],
    provisionalClasses: Record<string, PrivacyClass>,
    welcomes: DomainItems,
  ): Promise<void> {
    if (this.#meta?.status !== 'joining') return;
    const anchors = [...new Set([...inviterAnchors, inviter])];
    // Until the keyring arrives (over CONTROL, which this opens), the anchors are the admins.
    await this.#saveMeta({ ...this.#meta, anchors });
    await this.#syncKeyring();
    const joined = await this.#domains.joinFrom(welcomes);
    if (!joined.ok) return this.#notice('warning', `join: ${joined.error.type}: ${domainErrorText(joined.error)}`);
    await this.#saveMeta({ ...this.#meta, status: 'member', anchors, anchorPeers: [from], provisionalClasses });
    this.#announce();
    this.#notice('info', 'joined the mesh');
    await this.#refreshPeers();
    // Not awaited: this runs inside the frame queue, and catching up waits on the relay.
    void this.#onMember();
  }

  /**
   * Peers are the endpoints of machines in the keyring that were not removed.
   * When the trusted set changes (this machine among them, perhaps), each
   * machine asks its peers again for what it may hold now (sync.ts `askAgain`).
   */
  async #refreshPeers(): Promise<void> {
    this.#machines = machinesView(await this.#store.rows('keyring'), await this.#store.rows('roles'));
    const trusted = new Set(this.#machines.filter((m) => m.trusted && !m.removed).map((m) => m.endpoint));
    const before = this.#trusted;
    this.#trusted = trusted;
    const changed = before !== undefined && [...trusted].some((e) => !before.has(e));
    const endpoints = new Set((this.#meta?.anchorPeers ?? []).map((p) => p.endpoint));
    for (const machine of this.#machines) {
      if (machine.removed) endpoints.delete(machine.endpoint);
      else endpoints.add(machine.endpoint);
    }
    endpoints.delete(this.#identity.endpoint);
    endpoints.delete('');
    this.#peers = [...endpoints];
    await this.#configureState();
    await this.#syncKeyring();
    if (changed) await this.#state.askAgain();
  }

  /**
   * Tells the MLS worker who may hold a leaf (live keyring machines, anchors,
   * this machine, and `extra` about to be added) and whose KEK packages count
   * (anchors and admins).
   */
  async #syncKeyring(extra: readonly string[] = []): Promise<void> {
    const live = this.#machines.filter((m) => !m.removed);
    const anchors = this.#meta?.anchors ?? [];
    const removed = new Set(this.#machines.filter((m) => m.removed).map((m) => m.signer));
    const admitted = [...new Set([...live.map((m) => m.signer), ...anchors, this.#identity.signer, ...extra])];
    await this.#mls.setKeyring({
      admitted: admitted.filter((s) => !removed.has(s)),
      admins: [...anchors, ...live.filter((m) => m.role === 'admin').map((m) => m.signer)],
    });
  }

  /** Admins: machines the keyring removed leave every group we share with them. */
  async #reconcileDomains(): Promise<void> {
    if (!this.#isAdmin() || !this.#online()) return;
    await this.#domains.reconcileRemovals(new Set(this.#machines.filter((m) => m.removed).map((m) => m.signer)));
  }

  /** Publishes this machine's standing key package when the record does not hold the current one. */
  async #publishStanding(): Promise<void> {
    if (this.#meta?.status !== 'member') return;
    const row = `${this.#identity.signer}:mls`;
    const kp = await this.#domains.standingKeyPackage();
    if ((await this.#store.row('key_packages', row))?.cells['kp']?.value === kp) return;
    await this.#local(() => this.#state.write('key_packages', row, { kp }));
  }

  /**
   * The session is ready and this machine is a member: coming back, it first
   * catches up on every group's commits (a rotation while it was away hands it
   * the new generation), then removes what the keyring removed, then publishes.
   */
  async #onMember(): Promise<void> {
    await this.#domains.catchUp();
    await this.#reconcileDomains();
    await this.#publishStanding();
    await this.#state.connected();
  }

  /**
   * The admission list this machine would have the relay enforce (admins only):
   * every machine of the keyring not removed, the admins among them, and our open
   * invitations. Versions only grow, so a later list always wins at the relay.
   */
  async #admissionRecord(joining?: string): Promise<Uint8Array | undefined> {
    const meta = this.#meta;
    if (!meta || meta.status !== 'member' || !this.#isAdmin()) return undefined;
    const live = this.#machines.filter((m) => !m.removed);
    const endpoints = [this.#identity.endpoint, ...live.map((m) => m.endpoint), ...(joining ? [joining] : [])];
    const admins = [...meta.anchors, ...live.filter((m) => m.role === 'admin').map((m) => m.signer)];
    const version = Math.max(Date.now(), (meta.admissionVersion ?? 0) + 1);
    await this.#saveMeta({ ...meta, admissionVersion: version });
    // Only admins' machines may post membership changes to the sequencer (members may still resync).
    const adminSet = new Set(admins);
    const stewards = [this.#identity.endpoint, ...live.filter((m) => adminSet.has(m.signer)).map((m) => m.endpoint)];
    return this.#crypto.signAdmission(admins, endpoints, version, stewards);
  }

  /** Pushes the admission list in force, naming also `joining`, a machine being admitted now. */
  async #pushAdmission(joining?: string): Promise<void> {
    if (this.#relay?.state !== 'ready') return;
    const record = await this.#admissionRecord(joining);
    if (record) this.#relay.admit(record);
  }

  /** What the state plane changed: counts, notices, and trust re-read when a control row moved. */
  #changed(changes: ChangeSummary): void {
    for (let i = 0; i < changes.revoked; i++) this.#count('SignerRemoved');
    if (changes.applied === 0) return;
    this.#rowsChanged();
    this.#announce();
    this.#resurrected(changes.resurrections);
    if (changes.control) {
      void this.#refreshPeers()
        .then(() => this.#pushAdmission())
        .then(() => this.#state.offerAll())
        // A commit refused for a leaf the keyring did not name yet is in the log: take it now.
        .then(() => (this.#online() ? this.#domains.catchUp() : undefined))
        .then(() => this.#reconcileDomains());
    }
  }

  #resurrected(resurrections: readonly Resurrection[]): void {
    for (const r of resurrections) {
      this.#notice('resurrection', `row ${r.row} of ${r.table} came back: an edit was newer than its deletion`);
    }
  }

  #count(type: string): void {
    this.#transient[type] = (this.#transient[type] ?? 0) + 1;
  }

  #notice(kind: Notice['kind'], text: string): void {
    this.#notices.unshift({ id: ++this.#noticeId, at: Date.now(), kind, text });
    this.#notices.length = Math.min(this.#notices.length, MAX_NOTICES);
  }

  async #manifest(): Promise<ManifestEntry[]> {
    const { provisional, narrowing } = this.#classChoices();
    return manifestView(await this.#store.rows('sync_manifest'), provisional, narrowing);
  }

  /**
   * Builds and delivers a snapshot, coalesced: while one build runs, every request joins
   * the one queued after it, so a burst of frames or writes costs two builds, not one each.
   * Resolves once a build that started after the request was delivered. A build that hangs
   * (a worker busy at start-up) holds the queue for at most SNAPSHOT_WATCHDOG_MS; one that
   * finishes after a newer one was delivered is dropped, so the UI never steps back.
   */
  #publish(): Promise<void> {
    if (this.#listeners.size === 0) return Promise.resolve();
    return (this.#queuedBuild ??= this.#buildInFlight.then(() => {
      this.#queuedBuild = undefined;
      const n = ++this.#snapshotsStarted;
      const build = buildSnapshot(this.#snapshotSources()).then((snapshot) => {
        if (n < this.#snapshotDelivered) return;
        this.#snapshotDelivered = n;
        for (const listener of this.#listeners) listener(snapshot);
      });
      this.#buildInFlight = Promise.race([build, sleep(SNAPSHOT_WATCHDOG_MS)]).catch(() => undefined);
      return build;
    }));
  }

  #snapshotSources(): SnapshotSources {
    return {
      store: this.#store,
      identity: () => this.#identity,
      status: () => this.status,
      name: () => this.#meta?.name ?? '',
      isAdmin: () => this.#isAdmin(),
      relay: () => ({
        state: this.#relay?.state ?? (this.#standby ? 'standby' : 'offline'),
        detail: this.#relay?.detail ?? '',
        lastBatchAt: this.#relay?.lastBatchAt,
      }),
      transient: () => this.#transient,
      machines: () => this.#machines,
      peers: () => this.#peers,
      notices: () => this.#notices,
      dataVersion: () => this.#dataVersion,
      pairings: (vouchers) => this.#inviter.views(vouchers),
      join: () => this.#joiner.view,
      vouchers: () => this.#vouchers(),
      vouchK: () => this.#vouchK(),
      manifest: () => this.#manifest(),
      domains: () => this.#domains,
      objects: async () => (await this.#objects?.entries()) ?? [],
    };
  }
}

function domainErrorText(e: DomainsError): string {
  return 'reason' in e ? e.reason : e.type;
}

/**
 * Runs one step of a longer action; an exception it throws says which step and what kind
 * of error (the engine's DOMException messages alone, such as WebKit's "The operation
 * failed for an operation-specific reason", do not say where they came from).
 */
async function during<T>(doing: string, run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (e) {
    const message = e instanceof Error ? e.message : String(e);
    throw new Error(`mesh: could not ${doing}: ${errorName(e)}: ${message}`, { cause: e });
  }
}

type EventsMessage = Extract<InboundMessage, { t: 'events' }>;
