/**
 * Pages of a table's rows, sorted and filtered where the store is (the state worker
 * in a browser), so the UI asks for the few rows it shows and never holds a table.
 *
 * A store that keeps rows in the views' order (`rowWindow`: IndexedDB does) answers the
 * common case — alive rows, no filter — itself, a page at a time: the first screen of a
 * 100,000-row table reads one page. Anything else (a filter, deleted rows shown, a store
 * without the window) is paged from an index in memory, built on first use:
 *
 * Each table gets an index the first time it is paged: one entry per row with its
 * sort key (the `name` column, then the row id), the lower-cased text a filter box
 * matches, and whether it is alive. Changes name the rows they touched (`changed`)
 * and those entries are re-read from the store; the sorted order is rebuilt lazily,
 * once, at the next page asked for — a catch-up that applies 100,000 events re-sorts
 * only when someone looks. Too many rows changed at once, or an unknown change (another
 * tab wrote), drops the index and the next page re-reads the table.
 */
import { isAlive, type RowState } from '../core/merge.js';
import { rowSortKey, type ReplicaStore } from '../core/store.js';

/** What the UI asks for: a window of the sorted, filtered rows. */
export type PageQuery = {
  readonly table: string;
  readonly offset: number;
  readonly limit: number;
  /** Case-insensitive text every shown row contains in one of its values ('' for all). */
  readonly filter: string;
  /** Whether deleted rows are listed too (they are always counted). */
  readonly deleted: boolean;
};

export type Page = {
  /** Rows matching the query (the window is a slice of these). */
  readonly total: number;
  /** Rows of the table alive and deleted, whatever the filter. */
  readonly alive: number;
  readonly deleted: number;
  readonly offset: number;
  readonly rows: readonly RowState[];
};

/** Most rows one page carries. */
export const MAX_PAGE_ROWS = 500;
/** Beyond this many changed rows at once, the index is re-read whole rather than row by row. */
const REREAD_ABOVE = 5_000;

type Entry = { readonly row: string; readonly sort: string; readonly text: string; readonly alive: boolean };

type Index = {
  readonly entries: Map<string, Entry>;
  /** Rows to re-read before the next page. */
  readonly stale: Set<string>;
  sorted: Entry[] | undefined;
};

function entryOf(state: RowState): Entry {
  const values = Object.values(state.cells).map((c) => (c.value === null ? '' : String(c.value)));
  return {
    row: state.row,
    sort: rowSortKey(state),
    text: values.join('\u0000').toLowerCase(),
    alive: isAlive(state),
  };
}

const bySort = (a: Entry, b: Entry): number => (a.sort < b.sort ? -1 : a.sort > b.sort ? 1 : 0);

/** Changed rows moved one by one in the sorted order; more re-sort it. */
const MOVE_AT_MOST = 256;

/** Where `entry` is, or belongs, in `sorted` (sort keys are unique: they end with the row id). */
function position(sorted: readonly Entry[], entry: Entry): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (sorted[mid]!.sort < entry.sort) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

export class TablePages {
  readonly #store: ReplicaStore;
  readonly #indexes = new Map<string, Promise<Index>>();

  constructor(store: ReplicaStore) {
    this.#store = store;
  }

  /** Rows of `table` changed; `'all'` when which is not known. Cheap: nothing is read now. */
  changed(table: string, rows: readonly string[] | 'all'): void {
    const index = this.#indexes.get(table);
    if (!index) return;
    if (rows === 'all') {
      this.#indexes.delete(table);
      return;
    }
    void index.then((i) => {
      for (const row of rows) i.stale.add(row);
      if (i.stale.size > REREAD_ABOVE && this.#indexes.get(table) === index) this.#indexes.delete(table);
    });
  }

  /** Every table's rows may have changed (another context wrote to the store). */
  invalidate(): void {
    this.#indexes.clear();
  }

  async page(query: PageQuery): Promise<Page> {
    const limit = Math.max(0, Math.min(Math.floor(query.limit), MAX_PAGE_ROWS));
    if (this.#store.rowWindow && query.filter.trim() === '' && !query.deleted) {
      const first = Math.max(0, Math.floor(query.offset));
      let window = await this.#store.rowWindow(query.table, first, limit);
      // Past the end (rows went away since the view asked): the last page there is.
      const offset = Math.max(0, Math.min(first, window.alive - 1));
      if (offset !== first) window = await this.#store.rowWindow(query.table, offset, limit);
      return { total: window.alive, alive: window.alive, deleted: window.deleted, offset, rows: window.rows };
    }
    const index = await this.#index(query.table);
    await this.#refresh(query.table, index);
    const sorted = (index.sorted ??= [...index.entries.values()].sort(bySort));
    let alive = 0;
    for (const entry of sorted) if (entry.alive) alive++;
    const needle = query.filter.trim().toLowerCase();
    const matching =
      needle === '' && query.deleted
        ? sorted
        : sorted.filter((e) => (query.deleted || e.alive) && (needle === '' || e.text.includes(needle)));
    const offset = Math.max(0, Math.min(Math.floor(query.offset), Math.max(0, matching.length - 1)));
    const rows: RowState[] = [];
    for (const entry of matching.slice(offset, offset + limit)) {
      const state = await this.#store.row(query.table, entry.row);
      if (state) rows.push(state);
    }
    return { total: matching.length, alive, deleted: sorted.length - alive, offset, rows };
  }

  #index(table: string): Promise<Index> {
    let index = this.#indexes.get(table);
    if (!index) {
      index = this.#store.rows(table).then((states) => ({
        entries: new Map(states.map((s) => [s.row, entryOf(s)])),
        stale: new Set<string>(),
        sorted: undefined,
      }));
      this.#indexes.set(table, index);
      // A failed read is not kept: the next page tries again.
      index.catch(() => this.#indexes.get(table) === index && this.#indexes.delete(table));
    }
    return index;
  }

  async #refresh(table: string, index: Index): Promise<void> {
    if (index.stale.size === 0) return;
    const rows = [...index.stale];
    index.stale.clear();
    // A few changed rows move within the sorted order (a peer's edit of a 100,000-row table);
    // many at once (a catch-up) re-sort once at the next page.
    const sorted = rows.length <= MOVE_AT_MOST ? index.sorted : undefined;
    for (const row of rows) {
      const state = await this.#store.row(table, row);
      const before = index.entries.get(row);
      if (sorted && before) sorted.splice(position(sorted, before), 1);
      if (state) {
        const entry = entryOf(state);
        index.entries.set(row, entry);
        if (sorted) sorted.splice(position(sorted, entry), 0, entry);
      } else index.entries.delete(row);
    }
    index.sorted = sorted;
  }
}
