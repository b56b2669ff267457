/**
 * What the UI shows, derived from the replica: rows with who changed each cell
 * and when, machines with their roles and removal state, and the sync panel.
 * Pure functions over store data; MeshNode gathers the data, the UI renders.
 */
import { toHex } from '../core/bytes.js';
import { isAlive, rowValues, type RowState } from '../core/merge.js';
import { TABLES, type ColumnValue } from '../core/schema.js';
import { isClassifiable, isPrivacyClass, narrower, type PrivacyClass } from '../core/sync-manifest.js';

export type CellView = { readonly value: ColumnValue; readonly by: string; readonly at: number };

export type RowView = {
  readonly row: string;
  readonly alive: boolean;
  /** Tombstoned by a delete that no later edit overtook. */
  readonly deleted: boolean;
  readonly values: Record<string, ColumnValue>;
  readonly cells: Record<string, CellView>;
};

export type Machine = {
  readonly signer: string;
  readonly endpoint: string;
  /** The X25519 frame key (hex) the keyring binds to this machine's endpoint. */
  readonly frame: string;
  readonly name: string;
  readonly role: 'admin' | 'member';
  /** May hold Trusted tables: marked trusted by an admin, or an admin itself. */
  readonly trusted: boolean;
  /** The machine of a recovery kit (core/recovery/kit.ts): admitted at the relay, never a delivery peer. */
  readonly recovery: boolean;
  readonly removed: boolean;
};

/** One data table's privacy class as the sync panel shows it (sync-manifest.ts). */
export type ManifestEntry = {
  readonly table: string;
  /** The admin-signed class (`local` when no record names the table). */
  readonly mesh: PrivacyClass;
  /** Whether `mesh` comes from a signed record, or only from what the admitting admin said. */
  readonly recorded: boolean;
  /** This machine's own narrowing, if any. */
  readonly narrowed: PrivacyClass | undefined;
  /** What this machine applies: the narrower of the two. */
  readonly effective: PrivacyClass;
};

export type PeerView = {
  readonly endpoint: string;
  readonly name: string;
  /** Our log position the peer acknowledged. */
  readonly cursor: number;
  /** The peer's log position we applied or recorded. */
  readonly watermark: number;
  readonly pending: number;
};

export type SyncView = {
  readonly mode: 'realtime' | 'batch' | 'offline' | 'standby';
  readonly lastBatchAt: number | undefined;
  readonly logLength: number;
  readonly peers: readonly PeerView[];
  /** Parked envelopes by what they wait for. */
  readonly parked: Readonly<Record<string, number>>;
  /** Envelopes this machine may not hold by their table's class, by reason (identity kept only). */
  readonly withheld: Readonly<Record<string, number>>;
  /** Envelopes refused for good, by reason: those recorded, and frames refused before any import. */
  readonly rejected: Readonly<Record<string, number>>;
  /** Of those, how many are recorded (and can be listed: MeshNode.refusals). */
  readonly rejectedRecorded: number;
  /**
   * Frames received again after they were taken in (the relay redelivers what an ack did not
   * reach before a reconnect): dropped quietly, not rejections.
   */
  readonly duplicates: number;
};

/** The frame refusal that only means "already taken in" (core/frame.ts `ReplayedRequest`). */
const DUPLICATE_FRAME = 'ReplayedRequest';

/** Frame refusals counted by type, less the duplicates, which are counted apart. */
export function splitDuplicates(counts: Readonly<Record<string, number>>): {
  readonly refused: Readonly<Record<string, number>>;
  readonly duplicates: number;
} {
  const { [DUPLICATE_FRAME]: duplicates = 0, ...refused } = counts;
  return { refused, duplicates };
}

export function machinesView(keyring: readonly RowState[], roles: readonly RowState[]): Machine[] {
  const roleOf = new Map(roles.map((r) => [r.row, r.cells['role']?.value]));
  return keyring.map((row) => {
    const v = rowValues(row);
    return {
      signer: row.row,
      endpoint: String(v['endpoint'] ?? ''),
      frame: String(v['frame'] ?? ''),
      name: String(v['name'] ?? ''),
      role: roleOf.get(row.row) === 'admin' ? 'admin' : 'member',
      trusted: roleOf.get(row.row) === 'admin' || v['trusted'] === true,
      recovery: v['recovery'] === true,
      removed: row.removed !== undefined,
    };
  });
}

/** Every data table with its class: the signed record, else the provisional one, else local. */
export function manifestView(
  records: readonly RowState[],
  provisional: ReadonlyMap<string, PrivacyClass>,
  narrowing: ReadonlyMap<string, PrivacyClass>,
): ManifestEntry[] {
  const signed = new Map(records.map((r) => [r.row, r.cells['class']?.value]));
  return Object.keys(TABLES)
    .filter(isClassifiable)
    .map((table) => {
      const value = signed.get(table);
      const recorded = isPrivacyClass(value);
      const mesh = recorded ? value : (provisional.get(table) ?? 'local');
      const narrowed = narrowing.get(table);
      return { table, mesh, recorded, narrowed, effective: narrowed ? narrower(mesh, narrowed) : mesh };
    });
}

/** Vouching threshold when no `settings` row says otherwise. */
export const DEFAULT_VOUCH_K = 2;

export function vouchThreshold(settings: readonly RowState[]): number {
  const row = settings.find((r) => r.row === 'vouch_k' && isAlive(r));
  const value = row?.cells['value']?.value;
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 1 ? value : DEFAULT_VOUCH_K;
}

/**
 * Who vouched for each candidate fingerprint: distinct vouchers that are live
 * (not removed) machines of the keyring. A removed machine's vouches stop
 * counting the moment its removal arrives.
 */
export function vouchesView(vouches: readonly RowState[], machines: readonly Machine[]): Map<string, string[]> {
  const live = new Set(machines.filter((m) => !m.removed).map((m) => m.signer));
  const byCandidate = new Map<string, Set<string>>();
  for (const row of vouches) {
    if (!isAlive(row)) continue;
    const [voucher] = row.row.split(':');
    const candidate = row.cells['candidate']?.value;
    if (!voucher || typeof candidate !== 'string' || !live.has(voucher)) continue;
    const set = byCandidate.get(candidate) ?? new Set<string>();
    set.add(voucher);
    byCandidate.set(candidate, set);
  }
  return new Map([...byCandidate].map(([c, v]) => [c, [...v]]));
}

export function rowView(state: RowState, names: ReadonlyMap<string, string>): RowView {
  const cells: Record<string, CellView> = {};
  for (const [column, cell] of Object.entries(state.cells)) {
    const signer = toHex(cell.stamp.node);
    cells[column] = { value: cell.value, by: names.get(signer) ?? signer.slice(0, 8), at: cell.stamp.ms };
  }
  const alive = isAlive(state);
  return { row: state.row, alive, deleted: !alive && state.deleted !== undefined, values: rowValues(state), cells };
}

/** Two sets of counts by reason, added. */
export function addCounts(
  a: Readonly<Record<string, number>>,
  b: Readonly<Record<string, number>>,
): Record<string, number> {
  const counts: Record<string, number> = { ...a };
  for (const [reason, n] of Object.entries(b)) counts[reason] = (counts[reason] ?? 0) + n;
  return counts;
}
