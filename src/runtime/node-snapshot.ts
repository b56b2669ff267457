/**
 * What the UI shows of a machine, built from its store and state in one pass (mesh-node.ts
 * rebuilds it after changes): rows, machines, sync progress, pairing, domains,
 * objects. Everything is read through `SnapshotSources`, so a test can build one from fakes.
 */
import { DOMAINS, type DomainName } from '../core/schema.js';
import type { IdentityView } from './crypto-service.js';
import type { MachineStore } from './machine-store.js';
import { deletableTables, OBJECT_TABLES, PLACEMENT_TABLE, type ObjectEntry } from './mesh-objects.js';
import { RELEASES_TABLE, type SignedRelease } from './code-check.js';
import type { RewrapProgress } from './rewrap-job.js';
import type { CheckpointMark, RecoveryStatus } from './recovery-status.js';
import type { DomainView } from './mls-service.js';
import type { PairingView } from './pairing-inviter.js';
import type { JoinView } from './pairing-joiner.js';
import type { RelayState } from './relay-connection.js';
import {
  addCounts,
  rowView,
  splitDuplicates,
  type Machine,
  type ManifestEntry,
  type RowView,
  type SyncView,
} from './views.js';

export type MeshStatus = 'new' | 'joining' | 'member' | 'recovering';

export type Notice = {
  readonly id: number;
  readonly at: number;
  readonly kind: 'info' | 'warning' | 'resurrection';
  readonly text: string;
  /** What the notice is about, for notices a person dismisses for good (a resurrection: its delete's id). */
  readonly key?: string;
  /** Shown again at start from what was recorded before: not news (the headless node does not print it). */
  readonly standing?: boolean;
};

export type NodeSnapshot = {
  readonly identity: IdentityView;
  readonly status: MeshStatus;
  readonly name: string;
  readonly isAdmin: boolean;
  /** `standby`: another tab of this browser holds the relay session for this machine. */
  readonly relay: RelayState | 'standby';
  readonly relayDetail: string;
  readonly pending: number;
  /**
   * Grows whenever rows of this machine's tables change: views that page a table
   * (MeshNode.page) ask for their window again. Tables are never in a snapshot whole.
   */
  readonly dataVersion: number;
  readonly machines: readonly Machine[];
  readonly sync: SyncView;
  readonly notices: readonly Notice[];
  readonly pairings: readonly PairingView[];
  readonly join: JoinView;
  /** Vouches that let an admin admit a machine without comparing codes itself. */
  readonly vouchK: number;
  /** Each data table's privacy class: who may hold a copy of its rows. */
  readonly manifest: readonly ManifestEntry[];
  /** Every domain this machine is (or was, or waits to be) a member of, and the created domains it knows. */
  readonly domains: readonly DomainEntry[];
  /** Receipts that prove the relay signed two commits for one epoch (or broke a chain). */
  readonly misbehaviour: number;
  /** Rows of `field_notes` this machine can read. */
  readonly notes: readonly RowView[];
  /** Objects this machine formed, reads in the catalog, or stores (SOP/1). */
  readonly objects: readonly ObjectEntry[];
  /** Which domains' objects each machine stores, by signer (admins' `placement` records). */
  readonly placement: Readonly<Record<string, string>>;
  /** Object tables whose rows may be deleted (admins' `object_tables` records, for good). */
  readonly deletableTables: readonly string[];
  /** Builds of the app the mesh's admins signed (`releases` records; runtime/code-check.ts). */
  readonly releases: readonly SignedRelease[];
  /** A restore from a recovery kit, while this machine is (or once it was) recovering. */
  readonly recovery: RecoveryStatus | undefined;
  /** The last checkpoint this machine wrote (admins with recovery kits). */
  readonly checkpoint: CheckpointMark | undefined;
};

/** A domain as the Domains page shows it. */
export type DomainEntry = {
  readonly domain: DomainName;
  readonly purpose: string;
  /** This machine's view of the group, when it is (or was) a member. */
  readonly mls: DomainView | undefined;
  /** An accepted commit keeps failing here: the machine is resyncing by external commit. */
  readonly stuck: boolean;
  /** The rewrap under its current generation, when this machine (an admin) runs or ran one. */
  readonly rewrap: RewrapProgress | undefined;
};

/** Where a snapshot's parts come from: the machine's parts, each by what a snapshot reads of it. */
export type SnapshotSources = {
  readonly store: MachineStore;
  identity(): IdentityView;
  readonly meta: {
    readonly status: MeshStatus;
    readonly value:
      { readonly name: string; readonly recovery?: RecoveryStatus; readonly checkpoint?: CheckpointMark } | undefined;
  };
  /** Who the machines are (mesh-roster.ts); `peers` are the endpoints this machine syncs with. */
  readonly roster: { readonly machines: readonly Machine[]; readonly peers: readonly string[]; isAdmin(): boolean };
  /** What the machine counted and noticed (node-feed.ts); counts are refusals never stored, by reason. */
  readonly feed: {
    readonly counts: Readonly<Record<string, number>>;
    readonly notices: readonly Notice[];
    readonly dataVersion: number;
  };
  relay(): {
    readonly state: RelayState | 'standby';
    readonly detail: string;
    readonly lastBatchAt: number | undefined;
  };
  /** Ceremonies under way and the vouches that admit (mesh-pairing.ts). */
  readonly pairing: {
    views(vouchers: ReadonlyMap<string, readonly string[]>): PairingView[];
    readonly joinView: JoinView;
    vouchers(): Promise<ReadonlyMap<string, readonly string[]>>;
    vouchThreshold(): Promise<number>;
  };
  manifest(): Promise<ManifestEntry[]>;
  readonly domains: {
    readonly views: readonly DomainView[];
    stuck(): readonly string[];
    misbehaviour(): readonly unknown[];
  };
  objects(): Promise<ObjectEntry[]>;
  rewraps(): readonly RewrapProgress[];
};

export async function buildSnapshot(src: SnapshotSources): Promise<NodeSnapshot> {
  const machines = src.roster.machines;
  const names = new Map(machines.map((m) => [m.signer, m.name]));
  const sync = await syncView(src);
  const { domains, feed, pairing } = src;
  return {
    identity: src.identity(),
    status: src.meta.status,
    name: src.meta.value?.name ?? '',
    isAdmin: src.roster.isAdmin(),
    relay: src.relay().state,
    relayDetail: src.relay().detail,
    pending: Math.max(0, ...sync.peers.map((p) => p.pending)),
    dataVersion: feed.dataVersion,
    machines,
    sync,
    notices: [...feed.notices],
    pairings: pairing.views(await pairing.vouchers()),
    join: pairing.joinView,
    vouchK: await pairing.vouchThreshold(),
    manifest: await src.manifest(),
    domains: await domainEntries(src.store, domains, src.rewraps()),
    misbehaviour: domains.misbehaviour().length,
    notes: (await src.store.rows('field_notes')).map((r) => rowView(r, names)),
    objects: await src.objects(),
    placement: Object.fromEntries(
      (await src.store.rows(PLACEMENT_TABLE)).map((r) => [r.row, String(r.cells['domains']?.value ?? '')]),
    ),
    deletableTables: deletableTables(await src.store.rows(OBJECT_TABLES)),
    releases: (await src.store.rows(RELEASES_TABLE)).map((r) => {
      const { values, cells } = rowView(r, names);
      return { digest: r.row, version: String(values['version'] ?? ''), by: cells['version']?.by ?? '' };
    }),
    recovery: src.meta.value?.recovery,
    checkpoint: src.meta.value?.checkpoint,
  };
}

async function syncView(src: SnapshotSources): Promise<SyncView> {
  const { store } = src;
  const names = new Map(src.roster.machines.map((m) => [m.endpoint, m.name]));
  const last = await store.lastPos();
  const peers = [];
  for (const endpoint of src.roster.peers) {
    const cursor = await store.cursor(endpoint);
    const watermark = await store.watermark(endpoint);
    peers.push({ endpoint, name: names.get(endpoint) ?? '', cursor, watermark, pending: Math.max(0, last - cursor) });
  }
  const counts = await store.reasonCounts();
  const { refused, duplicates } = splitDuplicates(src.feed.counts);
  const { state, lastBatchAt } = src.relay();
  return {
    mode: state === 'ready' ? 'realtime' : state === 'standby' ? 'standby' : lastBatchAt ? 'batch' : 'offline',
    lastBatchAt,
    logLength: last,
    peers,
    // Counted in the store: a machine may hold many thousands of these. The entries are paged
    // from the store when someone opens a list (MeshNode.refusals), never carried here.
    parked: counts.parked,
    withheld: counts.withheld,
    rejected: addCounts(counts.rejected, refused),
    rejectedRecorded: Object.values(counts.rejected).reduce((a, b) => a + b, 0),
    duplicates,
  };
}

async function domainEntries(
  store: MachineStore,
  domains: SnapshotSources['domains'],
  rewraps: readonly RewrapProgress[],
): Promise<DomainEntry[]> {
  const purposes = new Map(
    (await store.rows('domains')).map((r) => [r.row, String(rowView(r, new Map()).values['purpose'] ?? '')]),
  );
  const names = new Set<string>([...DOMAINS, ...purposes.keys(), ...domains.views.map((v) => v.domain)]);
  return [...names].map((domain) => ({
    domain,
    purpose:
      purposes.get(domain) ??
      (domain === 'CONTROL' ? 'mesh control records' : domain === 'GENERAL' ? 'shared data' : ''),
    mls: domains.views.find((v) => v.domain === domain),
    stuck: domains.stuck().includes(domain),
    rewrap: rewraps.find((r) => r.domain === domain),
  }));
}
