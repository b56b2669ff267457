/**
 * Materialisation of rows from events (SSP/1 "Syncing mutable state", merge rules).
 *
 * A row keeps, per column, the value and the stamp (HLC + signer) that wrote it;
 * a put replaces exactly the cells whose stored stamp is lower. A delete keeps
 * the highest delete stamp as the row's tombstone; the row is visible while no
 * tombstone exists or some cell was written after it (a resurrection), and then
 * shows every cell, including edits that arrived while it was tombstoned. A
 * keyring removal is a permanent tombstone: nothing makes the row visible again,
 * and concurrent removals keep the lowest high-water mark (per lane).
 *
 * Every rule is a join (per-cell max, max tombstone, min mark), so the state
 * depends only on the set of events applied: commutative, associative and
 * idempotent, whatever the delivery order or duplication.
 */
import { internedHex } from './bytes.js';
import { compareStamps, type Stamp } from './hlc.js';
import { tableSpec, type ColumnValue } from './schema.js';

export type Cell = { readonly value: ColumnValue; readonly stamp: Stamp };

export type RowState = {
  readonly table: string;
  readonly row: string;
  readonly cells: Readonly<Record<string, Cell>>;
  /** Stamp of the newest delete, if any. */
  readonly deleted?: Stamp;
  /**
   * Set once by a removal; the lowest marks of all removals seen, one per lane
   * that crosses the wire (public `hwm`, `trustedHwm`).
   */
  readonly removed?: {
    readonly hwm: number;
    readonly trustedHwm: number;
    /** Marks of the created-domain chains (`chainSuffix` → seq); a chain not named keeps none. */
    readonly domains?: Readonly<Record<string, number>>;
  };
};

export type RowChange =
  | {
      readonly op: 'put';
      readonly table: string;
      readonly row: string;
      readonly cols: Readonly<Record<string, ColumnValue>>;
      readonly stamp: Stamp;
    }
  | { readonly op: 'del'; readonly table: string; readonly row: string; readonly stamp: Stamp }
  | {
      readonly op: 'remove';
      readonly table: string;
      readonly row: string;
      readonly hwm: number;
      readonly trustedHwm: number;
      readonly domainHwms?: Readonly<Record<string, number>>;
      readonly stamp: Stamp;
    };

/** Orders two writes of one cell: rank first for ranked columns (`ranks`), then stamp. */
function cellWins(ranks: readonly string[] | undefined, value: ColumnValue, stamp: Stamp, existing: Cell): boolean {
  if (ranks) {
    const diff = ranks.indexOf(value as string) - ranks.indexOf(existing.value as string);
    if (diff !== 0) return diff > 0;
  }
  return compareStamps(stamp, existing.stamp) > 0;
}

/** `base` with new cells; a row never deleted or removed (nearly all) is built in one fixed shape. */
function withCells(base: RowState, cells: Readonly<Record<string, Cell>>): RowState {
  if (base.deleted === undefined && base.removed === undefined) return { table: base.table, row: base.row, cells };
  return { ...base, cells };
}

function empty(table: string, row: string): RowState {
  return { table, row, cells: {} };
}

/**
 * Two removals' created-domain marks merged, as the lower per chain; a chain
 * only one names keeps no mark from the other, which is 0 (fail closed), so the
 * merged removal names only chains both name.
 */
function lowerMarks(
  a: Readonly<Record<string, number>> | undefined,
  b: Readonly<Record<string, number>>,
): Record<string, number> {
  if (a === undefined) return { ...b };
  const out: Record<string, number> = {};
  for (const [k, v] of Object.entries(a)) if (Object.hasOwn(b, k)) out[k] = Math.min(v, b[k]!);
  return out;
}

function marksEqual(a: Readonly<Record<string, number>>, b: Readonly<Record<string, number>>): boolean {
  const ka = Object.keys(a);
  return ka.length === Object.keys(b).length && ka.every((k) => b[k] === a[k]);
}

/** The merged row; returns `current` itself when the change alters nothing. */
export function applyChange(current: RowState | undefined, change: RowChange): RowState {
  const base = current ?? empty(change.table, change.row);
  switch (change.op) {
    case 'put': {
      // The hottest path of a replica: no entry arrays, no cell built before it wins.
      const { cols, stamp } = change;
      const ranked = tableSpec(change.table)?.ranked;
      let cells: Record<string, Cell> | undefined;
      for (const column of Object.keys(cols)) {
        const value = cols[column]!;
        const existing = base.cells[column];
        if (existing && !cellWins(ranked?.[column], value, stamp, existing)) continue;
        cells ??= { ...base.cells };
        cells[column] = { value, stamp };
      }
      return cells ? withCells(base, cells) : (current ?? base);
    }
    case 'del':
      if (base.deleted && compareStamps(base.deleted, change.stamp) >= 0) return current ?? base;
      return { ...base, deleted: change.stamp };
    case 'remove': {
      // A removal already applied that named no chain contributes {} (every chain 0), not "none seen yet":
      // otherwise a removal without marks followed by one with marks would keep them, in that order only.
      const domains = lowerMarks(base.removed ? (base.removed.domains ?? {}) : undefined, change.domainHwms ?? {});
      const sameDomains = base.removed && marksEqual(base.removed.domains ?? {}, domains);
      if (
        base.removed &&
        base.removed.hwm <= change.hwm &&
        base.removed.trustedHwm <= change.trustedHwm &&
        sameDomains
      ) {
        return current ?? base;
      }
      const hwm = Math.min(base.removed?.hwm ?? change.hwm, change.hwm);
      const trustedHwm = Math.min(base.removed?.trustedHwm ?? change.trustedHwm, change.trustedHwm);
      return { ...base, removed: { hwm, trustedHwm, ...(Object.keys(domains).length > 0 ? { domains } : {}) } };
    }
  }
}

/**
 * A cell this machine wrote that another machine's write replaced: its value and the one
 * that won, with the milliseconds of each stamp and the winner's signer (hex).
 */
export type Overtaken = {
  readonly table: string;
  readonly row: string;
  readonly column: string;
  readonly mine: ColumnValue;
  readonly mineMs: number;
  readonly theirs: ColumnValue;
  readonly theirsMs: number;
  readonly by: string;
};

/**
 * The cells `self` (a signer, hex) wrote that a put by `by` replaced, `before` → `after`
 * (`applyChange`'s answer, which keeps the cells it did not replace as they were).
 */
export function overtakenCells(before: RowState | undefined, after: RowState, self: string, by: string): Overtaken[] {
  const out: Overtaken[] = [];
  if (!before || after === before) return out;
  for (const [column, was] of Object.entries(before.cells)) {
    const now = after.cells[column]!;
    if (now === was || internedHex(was.stamp.node) !== self) continue;
    out.push({
      table: after.table,
      row: after.row,
      column,
      mine: was.value,
      mineMs: was.stamp.ms,
      theirs: now.value,
      theirsMs: now.stamp.ms,
      by,
    });
  }
  return out;
}

function newestCell(state: RowState): Stamp | undefined {
  let newest: Stamp | undefined;
  for (const cell of Object.values(state.cells)) {
    if (!newest || compareStamps(cell.stamp, newest) > 0) newest = cell.stamp;
  }
  return newest;
}

/** Visible to the application: never removed, and not deleted unless written after the delete. */
export function isAlive(state: RowState): boolean {
  if (state.removed) return false;
  if (!state.deleted) return true;
  const newest = newestCell(state);
  return newest !== undefined && compareStamps(newest, state.deleted) > 0;
}

/** The plain values of a row, as the application shows them. */
export function rowValues(state: RowState): Record<string, ColumnValue> {
  const out: Record<string, ColumnValue> = {};
  for (const [column, cell] of Object.entries(state.cells)) out[column] = cell.value;
  return out;
}
