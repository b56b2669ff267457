/**
 * Per-column last-writer-wins materialisation (SSP/1 "Syncing mutable state").
 *
 * A row is a map of cells; each cell remembers the value and the stamp
 * (HLC + signer) that wrote it. Applying an event replaces exactly the cells
 * whose stored stamp is lower than the event's. The result depends only on the
 * set of events applied, never on their order or repetition: the operation is
 * a join on a per-cell max, hence commutative, associative and idempotent.
 */
import { compareStamps, type Stamp } from './hlc.js';
import type { ColumnValue } from './schema.js';

export type Cell = { readonly value: ColumnValue; readonly stamp: Stamp };

export type RowState = {
  readonly table: string;
  readonly row: string;
  readonly cells: Readonly<Record<string, Cell>>;
};

export type RowChange = {
  readonly table: string;
  readonly row: string;
  readonly cols: Readonly<Record<string, ColumnValue>>;
  readonly stamp: Stamp;
};

/** Returns the merged row, or `undefined` when the change wins no cell. */
export function applyChange(current: RowState | undefined, change: RowChange): RowState | undefined {
  const cells: Record<string, Cell> = { ...current?.cells };
  let changed = current === undefined;
  for (const [column, value] of Object.entries(change.cols)) {
    const existing = cells[column];
    if (existing && compareStamps(existing.stamp, change.stamp) >= 0) continue;
    cells[column] = { value, stamp: change.stamp };
    changed = true;
  }
  return changed ? { table: change.table, row: change.row, cells } : undefined;
}

/** The plain values of a row, as the application shows them. */
export function rowValues(state: RowState): Record<string, ColumnValue> {
  const out: Record<string, ColumnValue> = {};
  for (const [column, cell] of Object.entries(state.cells)) out[column] = cell.value;
  return out;
}
