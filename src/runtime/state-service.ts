/**
 * The state plane's apply path, in the context that holds the keys: the replica
 * (open, verify, admit, record, materialise) and the delivery engine over this
 * machine's store. A browser runs it inside the crypto worker, next to the domain
 * keys, against IndexedDB; a headless node runs it in its own process against
 * SQLite. Either way a frame's envelopes are opened, verified and recorded here in
 * as few store transactions as the batch allows, and the caller gets back a compact
 * change summary — never the envelopes, never a key.
 *
 * What it needs to know of the mesh (anchors, this machine's own privacy choices,
 * the peers it delivers to and which of them are trusted) is pushed in by the
 * composition root with `configure`; it sends sealed frames and reports changes
 * through the outlet the root attaches.
 */
import { fromHex, toHex } from '../core/bytes.js';
import type { Clock, Signer, Verifier } from '../core/ports.js';
import {
  Replica,
  type EnvelopeCrypto,
  type IngestOutcome,
  type WriteError,
  type WriteOutcome,
} from '../core/replica.js';
import type { Result } from '../core/result.js';
import type { ColumnValue } from '../core/schema.js';
import type { ReplicaStore, Resurrection } from '../core/store.js';
import type { Overtaken } from '../core/merge.js';
import { SyncEngine, type DeliveryMessage } from '../core/sync.js';
import { manifestPolicy, type PrivacyClass } from '../core/sync-manifest.js';
import type { PeerAddress } from './crypto-service.js';
import { TablePages, type Page, type PageQuery } from './table-pages.js';

/** What the state plane is told about the mesh; pushed whenever it changes. */
export type StateConfig = {
  /** Signers trusted as admins without a control record (founder, inviter). */
  readonly anchors: readonly string[];
  /** Classes this machine narrowed for itself (never replicated). */
  readonly narrowing: Readonly<Record<string, PrivacyClass>>;
  /** The manifest the admitting admin sent, followed until the signed records arrive. */
  readonly provisional: Readonly<Record<string, PrivacyClass>>;
  /** The peers this machine delivers to: endpoint and bound frame key. */
  readonly peers: readonly PeerAddress[];
  /** Endpoints of peers that may hold trusted-lane entries. */
  readonly trusted: readonly string[];
  /** The signer of each peer endpoint the keyring names: its own events are not offered back to it. */
  readonly signers: Readonly<Record<string, string>>;
};

/** What one call changed, for the UI and the composition root; counts, not contents. */
export type ChangeSummary = {
  /** Envelopes applied (rows changed). */
  readonly applied: number;
  /** Applied envelopes whose signer has since been removed (counted as refusals). */
  readonly revoked: number;
  /** Tables whose rows changed. */
  readonly tables: readonly string[];
  /** Whether a CONTROL row changed (keyring, roles, manifest…): trust must be re-read. */
  readonly control: boolean;
  readonly resurrections: readonly Resurrection[];
  /**
   * Values this machine wrote while it was offline that another machine's edit, made before
   * this one came back, replaced: an offline edit that lost (merge.ts `overtakenCells`).
   */
  readonly overtaken: readonly Overtaken[];
  /** Envelopes refused, by reason. */
  readonly rejected: Readonly<Record<string, number>>;
};

/** How the state plane reaches the rest of the machine. */
export type StateOutlet = {
  /** Hands a sealed frame to the relay session for `peer` (an endpoint, hex). */
  send(peer: string, body: Uint8Array): void;
  /** A frame could not be sealed for a peer: it has no bound frame key. */
  count(type: string): void;
};

/** The crypto a state plane uses, in its own context: sealing, opening and signing stay there. */
export type StateCrypto = EnvelopeCrypto & {
  readonly signer: Signer;
  readonly verifier: Verifier;
  sealMessage(to: PeerAddress, message: DeliveryMessage): Promise<Uint8Array>;
};

export const NO_CHANGE: ChangeSummary = {
  applied: 0,
  revoked: 0,
  tables: [],
  control: false,
  resurrections: [],
  overtaken: [],
  rejected: {},
};

/** Folds ingest outcomes into a change summary. */
export function summarise(outcomes: readonly IngestOutcome[]): ChangeSummary {
  let applied = 0;
  let revoked = 0;
  const tables = new Set<string>();
  const resurrections: Resurrection[] = [];
  const overtaken: Overtaken[] = [];
  const rejected: Record<string, number> = {};
  let control = false;
  for (const o of outcomes) {
    if (o.type === 'Rejected') rejected[o.error.type] = (rejected[o.error.type] ?? 0) + 1;
    if (o.type !== 'Applied') continue;
    applied++;
    if (o.revoked) revoked++;
    tables.add(o.body.table);
    if (o.body.domain === 'CONTROL') control = true;
    resurrections.push(...o.resurrections);
    overtaken.push(...o.overtaken);
  }
  return { applied, revoked, tables: [...tables], control, resurrections, overtaken, rejected };
}

/** Two summaries as one. */
export function mergeSummaries(a: ChangeSummary, b: ChangeSummary): ChangeSummary {
  if (b === NO_CHANGE) return a;
  if (a === NO_CHANGE) return b;
  const rejected: Record<string, number> = { ...a.rejected };
  for (const [k, n] of Object.entries(b.rejected)) rejected[k] = (rejected[k] ?? 0) + n;
  return {
    applied: a.applied + b.applied,
    revoked: a.revoked + b.revoked,
    tables: [...new Set([...a.tables, ...b.tables])],
    control: a.control || b.control,
    resurrections: [...a.resurrections, ...b.resurrections],
    overtaken: [...a.overtaken, ...b.overtaken],
    rejected,
  };
}

/** How long a burst of local writes gathers before it is offered: well under what a person notices. */
const OFFER_COALESCE_MS = 20;

const EMPTY_CONFIG: StateConfig = {
  anchors: [],
  narrowing: {},
  provisional: {},
  peers: [],
  trusted: [],
  signers: {},
};

/** What a checkpoint's envelopes became on a restoring machine (StateService.restore). */
export type RestoredLog = {
  readonly applied: number;
  readonly parked: number;
  readonly rejected: number;
};

/** The peer a checkpoint's envelopes are taken in from (its watermark means nothing). */
const CHECKPOINT_PEER = 'checkpoint';
const CHECKPOINT_BATCH = 1024;

export type StateServiceDeps = {
  readonly store: ReplicaStore;
  /** This machine's crypto; called only once `self` is known (after the identity exists). */
  readonly crypto: () => Promise<StateCrypto>;
  /** This machine's signer id (hex). */
  readonly self: () => Promise<string>;
  readonly clock: Clock;
  /** Serialises applying across every context sharing the store. */
  readonly withLock: <T>(fn: () => Promise<T>) => Promise<T>;
};

type Engine = { readonly replica: Replica; readonly sync: SyncEngine; readonly self: string };

export class StateService {
  readonly #deps: StateServiceDeps;
  readonly #pages: TablePages;
  #config: StateConfig = EMPTY_CONFIG;
  #outlet: StateOutlet | undefined;
  #engine: Promise<Engine> | undefined;
  /** What the delivery engine applied during the current call, handed back when it returns. */
  #changes: ChangeSummary = NO_CHANGE;
  /** The offer a burst of local writes waits for (`offerSoon`). */
  #offering: Promise<void> | undefined;
  /**
   * The last time offline, as the relay session tells it: from when (at start, the start)
   * until when it was connected again (undefined while still offline). A value written in
   * that window reached no one before its end, so an edit made before its end that
   * replaces it was made without knowing it: the offline edit lost.
   */
  #offline: { from: number; until: number | undefined };

  constructor(deps: StateServiceDeps) {
    this.#deps = deps;
    this.#pages = new TablePages(deps.store);
    this.#offline = { from: deps.clock.now(), until: undefined };
  }

  /** A window of a table's rows, sorted and filtered here (table-pages.ts). */
  page(query: PageQuery): Promise<Page> {
    return this.#pages.page(query);
  }

  /** The newest resurrections recorded, newest first. */
  resurrections(limit: number): Promise<Resurrection[]> {
    return this.#deps.store.resurrections(limit);
  }

  /** A row's name (its `name` column), when it has one that is text. */
  async rowName(table: string, row: string): Promise<string | undefined> {
    const name = (await this.#deps.store.row(table, row))?.cells['name']?.value;
    return typeof name === 'string' && name !== '' ? name : undefined;
  }

  /** Another context (a tab) wrote to the store: what was read of it may be stale. */
  invalidate(): void {
    this.#pages.invalidate();
  }

  /** Where sealed frames and counts go (a comlink proxy of the composition root's outlet in browsers). */
  attach(outlet: StateOutlet): void {
    this.#outlet = outlet;
  }

  /** Tells the state plane what it must know of the mesh; the peers it delivers to follow. */
  async configure(config: StateConfig): Promise<void> {
    this.#config = config;
    (await this.#ready()).sync.setPeers(config.peers.map((p) => p.endpoint));
  }

  async write(
    table: string,
    row: string,
    cols: Record<string, ColumnValue>,
  ): Promise<Result<WriteOutcome, WriteError>> {
    const written = await (await this.#ready()).replica.write(table, row, cols);
    this.#wrote(table, row, written);
    return written;
  }

  async delete(table: string, row: string): Promise<Result<WriteOutcome, WriteError>> {
    const deleted = await (await this.#ready()).replica.delete(table, row);
    this.#wrote(table, row, deleted);
    return deleted;
  }

  /** Removes a machine for good (a signed removal with this machine's marks). */
  async remove(signer: string): Promise<Result<WriteOutcome, WriteError>> {
    const removed = await (await this.#ready()).replica.remove(signer);
    // Its events are revoked wherever they are: any row of any table may change.
    if (removed.ok) this.#pages.invalidate();
    return removed;
  }

  /** Opens held envelopes a new key generation may open. */
  async reopen(): Promise<ChangeSummary> {
    return this.#lostOffline(this.#track(await (await this.#ready()).replica.reopen()));
  }

  /** Parked envelopes whose reason may have passed get another look. */
  async reevaluate(): Promise<ChangeSummary> {
    return this.#lostOffline(this.#track(await (await this.#ready()).replica.reevaluate()));
  }

  #wrote(table: string, row: string, written: Result<WriteOutcome, WriteError>): void {
    if (!written.ok) return;
    this.#pages.changed(table, [row]);
    for (const r of written.value.resurrections) this.#pages.changed(r.table, [r.row]);
  }

  /** Outcomes as a summary, with the rows they changed marked for the pages. */
  #track(outcomes: readonly IngestOutcome[]): ChangeSummary {
    const byTable = new Map<string, string[]>();
    for (const o of outcomes) {
      if (o.type !== 'Applied') continue;
      // A removal revokes its signer's events: rows of every table may change.
      if (o.body.op === 'remove') this.#pages.invalidate();
      const rows = byTable.get(o.body.table) ?? [];
      rows.push(o.body.row);
      byTable.set(o.body.table, rows);
    }
    for (const [table, rows] of byTable) this.#pages.changed(table, rows);
    return summarise(outcomes);
  }

  /** A delivery message a peer sent (already opened from its frame); durable once it resolves. */
  async receive(peer: string, message: DeliveryMessage): Promise<ChangeSummary> {
    const { sync } = await this.#ready();
    return this.#collect(() => sync.receive(peer, message));
  }

  /** Offers every peer what it has not acknowledged. */
  async offerAll(): Promise<void> {
    await (await this.#ready()).sync.offerAll();
  }

  /**
   * Offers soon, once for a burst of local writes: the first write of a burst starts a
   * short wait, and everything written until it ends goes out in the same frames. One
   * frame per edit would fill an away peer's relay mailbox with single-event frames.
   * Resolves when that offer has been handed to the transport.
   */
  offerSoon(): Promise<void> {
    return (this.#offering ??= new Promise<void>((resolve) => setTimeout(resolve, OFFER_COALESCE_MS))
      .then(() => {
        this.#offering = undefined;
        return this.offerAll();
      })
      .catch((e: unknown) => {
        this.#offering = undefined;
        throw e;
      }));
  }

  /** The batch cycle's backstop: re-offer unacknowledged batches, ask again for what was withheld. */
  async resend(): Promise<void> {
    await (await this.#ready()).sync.resend();
  }

  async connected(): Promise<void> {
    this.#offline.until ??= this.#deps.clock.now();
    await (await this.#ready()).sync.connected();
  }

  async disconnected(): Promise<void> {
    if (this.#offline.until !== undefined) this.#offline = { from: this.#deps.clock.now(), until: undefined };
    (await this.#ready()).sync.disconnected();
  }

  /** Asks every peer again for what it may hold now (trust or classes changed). */
  async askAgain(): Promise<void> {
    await (await this.#ready()).sync.askAgain();
  }

  /**
   * Every envelope a checkpoint carries (core/recovery/checkpoint.ts): the public lane's, in
   * log order, without the revoked (a removal revokes them again wherever they land).
   */
  async checkpointEntries(): Promise<Uint8Array[]> {
    const { store } = this.#deps;
    const through = await store.lastPos();
    const out: Uint8Array[] = [];
    for (let after = 0; after < through;) {
      const batch = await store.sealedAfter(after, through, CHECKPOINT_BATCH);
      if (batch.length === 0) break;
      for (const e of batch) if (e.lane === undefined && !e.revoked) out.push(e.sealed);
      after = batch[batch.length - 1]!.pos;
    }
    return out;
  }

  /** Takes in a checkpoint's envelopes as from a peer (opened, verified, admitted like any). */
  async restore(entries: readonly Uint8Array[]): Promise<RestoredLog> {
    const { replica } = await this.#ready();
    const outcomes: IngestOutcome[] = [];
    for (let i = 0; i < entries.length; i += CHECKPOINT_BATCH) {
      outcomes.push(...(await replica.ingest(CHECKPOINT_PEER, entries.slice(i, i + CHECKPOINT_BATCH))));
    }
    this.#track(outcomes);
    const count = (type: IngestOutcome['type']) => outcomes.filter((o) => o.type === type).length;
    return { applied: count('Applied'), parked: count('Parked'), rejected: count('Rejected') };
  }

  /** Envelopes held that no generation held here opened, by `DOMAIN.gen`: the key history this machine lacks. */
  async unopened(): Promise<Record<string, number>> {
    const { store } = this.#deps;
    const through = await store.lastPos();
    const opaque: Record<string, number> = {};
    for (let after = 0; after < through;) {
      const batch = await store.entriesAfter(after, CHECKPOINT_BATCH);
      if (batch.length === 0) break;
      for (const e of batch) {
        if (e.eventId !== undefined) continue;
        const at = e.outerId.split('.').slice(1, 3).join('.');
        opaque[at] = (opaque[at] ?? 0) + 1;
      }
      after = batch[batch.length - 1]!.pos;
    }
    return opaque;
  }

  async #collect(run: () => Promise<void>): Promise<ChangeSummary> {
    await run();
    const changes = this.#changes;
    this.#changes = NO_CHANGE;
    return this.#lostOffline(changes);
  }

  /** `changes` with only the overtaken values that were offline edits lost (see `#offline`). */
  #lostOffline(changes: ChangeSummary): ChangeSummary {
    if (changes.overtaken.length === 0) return changes;
    const { from, until = Infinity } = this.#offline;
    const lost = changes.overtaken.filter((o) => o.mineMs >= from && o.mineMs < until && o.theirsMs < until);
    return { ...changes, overtaken: lost };
  }

  #ready(): Promise<Engine> {
    return (this.#engine ??= this.#build().catch((e: unknown) => {
      this.#engine = undefined;
      throw e;
    }));
  }

  async #build(): Promise<Engine> {
    const { store, clock, withLock } = this.#deps;
    const [self, crypto] = [await this.#deps.self(), await this.#deps.crypto()];
    const trust = { self, anchors: () => this.#config.anchors };
    const replica = new Replica({
      store,
      signer: crypto.signer,
      verifier: crypto.verifier,
      envelopes: crypto,
      trust,
      privacy: manifestPolicy(trust, () => ({
        narrowing: new Map(Object.entries(this.#config.narrowing)),
        provisional: new Map(Object.entries(this.#config.provisional)),
      })),
      clock,
      withLock,
    });
    const sync = new SyncEngine(
      replica,
      store,
      {
        send: async (peer, message) => {
          const address = this.#config.peers.find((p) => p.endpoint === peer);
          if (!address || address.frame === '') return this.#outlet?.count('NoFrameKey');
          this.#outlet?.send(peer, await crypto.sealMessage(address, message));
        },
      },
      {
        onApplied: (outcomes) => (this.#changes = mergeSummaries(this.#changes, this.#track(outcomes))),
        trusted: (peer) => this.#config.trusted.includes(peer),
        signerOf: (peer) => this.#config.signers[peer],
        trustGrant: () => this.#trustGrant(self),
      },
    );
    return { replica, sync, self };
  }

  /**
   * The grant that makes this machine trusted, named so a new grant (after trust
   * was withdrawn) starts a new sweep: "admin" for admins, else the stamp of the
   * keyring cell that set `trusted`; undefined while not trusted.
   */
  async #trustGrant(self: string): Promise<string | undefined> {
    const { store } = this.#deps;
    if (this.#config.anchors.includes(self)) return 'admin';
    if ((await store.row('roles', self))?.cells['role']?.value === 'admin') return 'admin';
    const cell = (await store.row('keyring', self))?.cells['trusted'];
    if (cell?.value !== true) return undefined;
    return `${cell.stamp.ms}.${cell.stamp.counter}.${toHex(cell.stamp.node).slice(0, 16)}`;
  }
}

/** The state crypto of a crypto service in the same context: calls stay in-process. */
export function stateCryptoOf(crypto: {
  view(): { readonly signer: string };
  sign(message: Uint8Array): Promise<Uint8Array>;
  verify(publicKey: Uint8Array, message: Uint8Array, signature: Uint8Array): Promise<boolean>;
  sealEvent: EnvelopeCrypto['seal'];
  openEvent: EnvelopeCrypto['open'];
  domainGeneration: EnvelopeCrypto['generation'];
  sealMessage(to: PeerAddress, message: DeliveryMessage): Promise<Uint8Array>;
}): StateCrypto {
  return {
    signer: { publicKey: fromHex(crypto.view().signer)!, sign: (m) => crypto.sign(m) },
    verifier: { verify: (k, m, s) => crypto.verify(k, m, s) },
    seal: (d, e, lane, gen) => crypto.sealEvent(d, e, lane, gen),
    open: (s) => crypto.openEvent(s),
    generation: (d) => crypto.domainGeneration(d),
    sealMessage: (to, message) => crypto.sealMessage(to, message),
  };
}
