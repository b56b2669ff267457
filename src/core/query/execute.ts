/**
 * Executing a planned query over opened objects, column by column: each surviving row
 * group (footer statistics are the second pruning level) is decrypted and decoded for
 * the columns the query reads, filters build a selection, and selected rows either
 * feed per-group aggregates or become projected rows. No row object is built for a row
 * that does not survive the filters, and aggregates never build one at all.
 *
 * The row-identity filter (`keepRow`) is where delete objects apply (object/deletes.ts): when
 * given, `_row_id` is read too and rows it refuses are dropped before anything else sees them.
 * With `withRowIds`, a query that neither groups nor aggregates answers each row's identity
 * beside it (`rowIds`, hex), so that a person can pick rows of a result to delete.
 */
import type { ParquetError } from '../parquet/modules.js';
import type { ParquetFile } from '../parquet/read.js';
import { toHex } from '../bytes.js';
import { ROW_ID_COLUMN } from '../parquet/schema.js';
import type { ObjectManifest } from '../object/manifest.js';
import { err, ok, type Result } from '../result.js';
import { compareBound, mayMatch, plan, type Plan, type Range } from './plan.js';
import type { Bound, BoundQuery, Expr, Filter, ResultColumn, SelectItem } from './query.js';

export type Cell = number | bigint | string | boolean | null;

export type Explain = {
  readonly considered: number;
  readonly pruned: Plan['pruned'];
  readonly scanned: number;
  readonly rowGroupsScanned: number;
  readonly rowGroupsPruned: number;
  readonly rowsScanned: number;
  /** Encrypted bytes of the objects opened. */
  readonly bytesRead: number;
  /**
   * Of those, bytes fetched from the relay in ranges, for objects this machine does not hold
   * (the tail and the chunks decoded, not whole objects); set by the reader that fetched them.
   */
  readonly bytesFetched?: number;
};

export type QueryResult = {
  /** The table the query read. */
  readonly table: string;
  readonly columns: readonly ResultColumn[];
  readonly rows: readonly (readonly Cell[])[];
  /** Each row's identity (hex), in the order of `rows`: asked for, and the query neither groups nor aggregates. */
  readonly rowIds?: readonly string[];
  readonly explain: Explain;
};

/**
 * Rows found so far, with the result's columns (known before the first row), for a page to
 * show as they come; with their identities when the query answers them.
 */
export type RowsFound = (
  rows: readonly (readonly Cell[])[],
  columns: readonly ResultColumn[],
  rowIds?: readonly string[],
) => void;

export type ExecuteError =
  | ParquetError
  | { readonly type: 'Cancelled' }
  | { readonly type: 'ObjectUnavailable'; readonly id: string; readonly reason: string };

export type ExecuteOptions = {
  /** Opens one planned object (unwrap its key, decrypt its footer); called only for objects that survive planning. */
  readonly open: (manifest: ObjectManifest) => Promise<Result<ParquetFile, ExecuteError>>;
  /** Whether a row of an object is shown (false: a delete hides it). */
  readonly keepRow?: (rowId: Uint8Array, object: ObjectManifest) => boolean;
  /** Answer each row's identity (`QueryResult.rowIds`) when the query neither groups nor aggregates. */
  readonly withRowIds?: boolean;
  readonly signal?: AbortSignal;
  readonly progress?: (objectsDone: number, objectsTotal: number) => void;
  /**
   * Result rows as they are found, for queries whose rows need no later step (no
   * grouping, no ORDER BY); the final result holds the same rows in the same order.
   */
  readonly onRows?: RowsFound;
};

type AggState = { n: number; sum: number | bigint; best: Cell };

/**
 * A value as a group key: equal values, equal keys. JSON alone writes NaN and ±∞ as `null`,
 * which would merge them with NULL: non-finite numbers are named (a string is quoted, so
 * `"NaN"` stays apart from NaN); -0 and 0 share `0`, as SQL engines group them.
 */
const valueKey = (v: Cell): string =>
  typeof v === 'bigint' ? `${v}n` : typeof v === 'number' && !Number.isFinite(v) ? String(v) : JSON.stringify(v);

function passes(f: Filter<Bound>, v: unknown): boolean {
  if (f.op === 'is null') return v === null || v === undefined;
  if (f.op === 'is not null') return v !== null && v !== undefined;
  if (v === null || v === undefined) return false;
  const value = v as Bound;
  switch (f.op) {
    case '=':
      return compareBound(value, f.value) === 0;
    case '!=':
      return compareBound(value, f.value) !== 0;
    case '<':
      return compareBound(value, f.value) < 0;
    case '<=':
      return compareBound(value, f.value) <= 0;
    case '>':
      return compareBound(value, f.value) > 0;
    case '>=':
      return compareBound(value, f.value) >= 0;
    case 'between':
      return compareBound(value, f.low) >= 0 && compareBound(value, f.high) <= 0;
    case 'in':
      return f.values.some((x) => compareBound(value, x) === 0);
  }
}

function evaluate(e: Expr, v: unknown): Cell {
  if (v === null || v === undefined) return null;
  if (e.kind === 'bucket') return Math.floor((v as number) / e.widthMs) * e.widthMs;
  return v as Cell;
}

function rowGroupRange(file: ParquetFile, rowGroup: number, column: string): Range | undefined {
  const group = file.metadata.row_groups[rowGroup]!;
  const index = file.metadata.schema.slice(1).findIndex((e) => e.name === column);
  const stats = index < 0 ? undefined : group.columns[index]?.meta_data?.statistics;
  if (!stats) return undefined;
  const typed = (v: unknown): Bound | undefined =>
    typeof v === 'number' || typeof v === 'bigint' || typeof v === 'string' || typeof v === 'boolean'
      ? v
      : v instanceof Date
        ? v.getTime()
        : undefined;
  return {
    min: typed(stats.min_value ?? stats.min),
    max: typed(stats.max_value ?? stats.max),
    nulls: Number(stats.null_count ?? 0),
    rows: Number(group.num_rows),
  };
}

/** Folds selected rows into groups (aggregates) or output rows (projections). */
class Collector {
  readonly #q: BoundQuery;
  readonly #groups = new Map<string, { keys: Cell[]; aggs: AggState[] }>();
  readonly #rows: Cell[][] = [];
  readonly #aggs: Extract<SelectItem, { kind: 'agg' }>[];
  /** Whether each projected row carries its identity (hex) as one cell more, after its own. */
  readonly ids: boolean;

  constructor(q: BoundQuery, ids: boolean) {
    this.#q = q;
    this.ids = ids && !q.grouped;
    this.#aggs = q.select.filter((s): s is Extract<SelectItem, { kind: 'agg' }> => s.kind === 'agg');
  }

  /** Whether projected rows already fill the limit (no ordering asked for): the scan may stop. */
  isFull(): boolean {
    const q = this.#q;
    return !q.grouped && q.orderBy.length === 0 && q.limit !== undefined && this.#rows.length >= q.limit;
  }

  /** Whether rows can be handed out as they are found (nothing reorders or folds them). */
  get streams(): boolean {
    return !this.#q.grouped && this.#q.orderBy.length === 0;
  }

  /** Adds a row group's selected rows; returns the projected rows it added (none when grouping). */
  add(columns: Readonly<Record<string, ArrayLike<unknown>>>, selected: Uint8Array, count: number): Cell[][] {
    const q = this.#q;
    if (!q.grouped) {
      const exprs = q.select as Extract<SelectItem, { kind: 'expr' }>[];
      const added: Cell[][] = [];
      for (let i = 0; i < count && !this.isFull(); i++) {
        if (!selected[i]) continue;
        const row = exprs.map((s) => evaluate(s.expr, columns[s.expr.column]![i]));
        if (this.ids) row.push(toHex((columns[ROW_ID_COLUMN] as ArrayLike<Uint8Array>)[i]!));
        this.#rows.push(row);
        added.push(row);
      }
      return added;
    }
    const keyColumns = q.groupBy.map((e) => columns[e.column]!);
    const aggColumns = this.#aggs.map((a) => (a.column === '*' ? undefined : columns[a.column]!));
    for (let i = 0; i < count; i++) {
      if (!selected[i]) continue;
      const keys = q.groupBy.map((e, k) => evaluate(e, keyColumns[k]![i]));
      const key = keys.map(valueKey).join('\u0000');
      let group = this.#groups.get(key);
      if (!group) {
        group = { keys, aggs: this.#aggs.map(() => ({ n: 0, sum: 0, best: null })) };
        this.#groups.set(key, group);
      }
      for (let a = 0; a < this.#aggs.length; a++) {
        const agg = this.#aggs[a]!;
        const state = group.aggs[a]!;
        const source = aggColumns[a];
        if (!source) {
          state.n++;
          continue;
        }
        const v = source[i];
        if (v === null || v === undefined) continue;
        state.n++;
        if (agg.fn === 'sum' || agg.fn === 'avg') {
          // 64-bit integers are summed exactly, for averages too (divided once, at the end).
          if (typeof v === 'bigint') state.sum = BigInt(state.sum) + v;
          else state.sum = (state.sum as number) + (v as number);
        } else if (agg.fn === 'min' || agg.fn === 'max') {
          const c = state.best === null ? 0 : compareBound(v as Bound, state.best);
          if (state.best === null || (agg.fn === 'min' ? c < 0 : c > 0)) state.best = v as Cell;
        }
      }
    }
    return [];
  }

  finish(): Cell[][] {
    const q = this.#q;
    let rows: Cell[][];
    if (!q.grouped) rows = this.#rows;
    else {
      // An aggregate without GROUP BY over no rows is still one row (count 0, the rest null).
      if (this.#groups.size === 0 && q.groupBy.length === 0) {
        this.#groups.set('', { keys: [], aggs: this.#aggs.map(() => ({ n: 0, sum: 0, best: null })) });
      }
      rows = [...this.#groups.values()].map((g) =>
        q.select.map((s) => {
          if (s.kind === 'expr') return g.keys[q.groupBy.findIndex((e) => sameExpr(e, s.expr))] ?? null;
          const state = g.aggs[this.#aggs.indexOf(s)]!;
          switch (s.fn) {
            case 'count':
              return state.n;
            case 'sum':
              return state.n === 0 ? null : state.sum;
            case 'avg':
              return state.n === 0 ? null : Number(state.sum) / state.n;
            default:
              return state.best;
          }
        }),
      );
    }
    if (q.orderBy.length > 0) {
      const order = q.orderBy.map((o) => ({ at: q.columns.findIndex((c) => c.name === o.name), desc: o.desc }));
      rows.sort((a, b) => {
        for (const { at, desc } of order) {
          const x = a[at] ?? null;
          const y = b[at] ?? null;
          if (x === null || y === null) {
            if (x !== y) return x === null ? 1 : -1; // nulls last, either direction
            continue;
          }
          const c = compareBound(x, y);
          if (c !== 0) return desc ? -c : c;
        }
        return 0;
      });
    }
    return q.limit === undefined ? rows : rows.slice(0, q.limit);
  }
}

const sameExpr = (a: Expr, b: Expr): boolean =>
  a.kind === b.kind && a.column === b.column && (a.kind === 'column' || a.widthMs === (b as typeof a).widthMs);

/** Plans `q` over the catalog's manifests and runs it over the objects that survive. */
export async function execute(
  manifests: readonly ObjectManifest[],
  q: BoundQuery,
  options: ExecuteOptions,
): Promise<Result<QueryResult, ExecuteError>> {
  const planned = plan(manifests, q);
  const collector = new Collector(q, options.withRowIds === true);
  const width = q.columns.length;
  /** Rows without the identity cell the collector added, and the identities. */
  const split = (rows: readonly Cell[][]) =>
    collector.ids
      ? { rows: rows.map((r) => r.slice(0, width)), rowIds: rows.map((r) => r[width] as string) }
      : { rows };
  let rowGroupsScanned = 0;
  let rowGroupsPruned = 0;
  let rowsScanned = 0;
  let bytesRead = 0;
  let done = 0;
  for (const m of planned.scan) {
    if (options.signal?.aborted) return err({ type: 'Cancelled' });
    if (collector.isFull()) break;
    const file = await options.open(m);
    if (!file.ok) return file;
    bytesRead += m.bytes;
    // An object formed before a column existed (or when it had another type) holds only
    // nulls for it: such a column is not read from it, and its row groups are not pruned by it.
    const own = new Set(m.schema.filter((c) => q.schema.get(c.name)?.type === c.type).map((c) => c.name));
    const reads = options.keepRow || collector.ids ? [...q.reads, ROW_ID_COLUMN] : q.reads;
    const stored = reads.filter((c) => c === ROW_ID_COLUMN || own.has(c));
    for (let g = 0; g < file.value.metadata.row_groups.length; g++) {
      if (options.signal?.aborted) return err({ type: 'Cancelled' });
      if (collector.isFull()) break;
      const survives = q.where.every((f) => {
        const range = own.has(f.column) ? rowGroupRange(file.value, g, f.column) : undefined;
        return !range || mayMatch(f, range);
      });
      if (!survives) {
        rowGroupsPruned++;
        continue;
      }
      rowGroupsScanned++;
      const count = Number(file.value.metadata.row_groups[g]!.num_rows);
      const columns: Result<Record<string, ArrayLike<unknown>>, ExecuteError> = stored.length > 0
        ? await file.value.readColumns({ columns: stored, rowGroups: [g] })
        : ok({});
      if (!columns.ok) return columns;
      for (const c of reads) if (!stored.includes(c)) columns.value[c] = new Array<null>(count).fill(null);
      rowsScanned += count;
      const selected = new Uint8Array(count).fill(1);
      if (options.keepRow) {
        const ids = columns.value[ROW_ID_COLUMN] as ArrayLike<Uint8Array>;
        for (let i = 0; i < count; i++) if (!options.keepRow(ids[i]!, m)) selected[i] = 0;
      }
      for (const f of q.where) {
        const values = columns.value[f.column]!;
        for (let i = 0; i < count; i++) if (selected[i] && !passes(f, values[i])) selected[i] = 0;
      }
      const added = collector.add(columns.value, selected, count);
      if (options.onRows && collector.streams && added.length > 0) {
        const found = split(added);
        options.onRows(found.rows, q.columns, found.rowIds);
      }
    }
    options.progress?.(++done, planned.scan.length);
  }
  return ok({
    table: q.table,
    columns: q.columns,
    ...split(collector.finish()),
    explain: {
      considered: planned.considered,
      pruned: planned.pruned,
      scanned: planned.scan.length,
      rowGroupsScanned,
      rowGroupsPruned,
      rowsScanned,
      bytesRead,
    },
  });
}
