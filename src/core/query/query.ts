/**
 * The typed query of the object plane (seed 003 "Reading"): one table, a conjunction
 * of column filters, projections or aggregates, grouping (by columns or UTC time
 * buckets aligned to the epoch), ordering and a limit. People write a small SQL subset
 * (sql.ts) that compiles to it. `bind` checks a query against the table's schema and
 * converts its literals to the columns' types, so the planner and the scan compare like
 * with like; everything it cannot do is a typed error before any object is opened.
 */
import { parseTimestamp } from '../csv.js';
import { COLUMN_TYPES, type ColumnSpec, type ColumnType } from '../parquet/schema.js';
import { err, ok, type Result } from '../result.js';

export type Literal = number | string | boolean | null;
/** A literal converted to its column's type: int64 as bigint, timestamps as ms since the epoch. */
export type Bound = number | bigint | string | boolean;

export type CompareOp = '=' | '!=' | '<' | '<=' | '>' | '>=';

export type Filter<V = Literal> =
  | { readonly column: string; readonly op: CompareOp; readonly value: V }
  | { readonly column: string; readonly op: 'in'; readonly values: readonly V[] }
  | { readonly column: string; readonly op: 'between'; readonly low: V; readonly high: V }
  | { readonly column: string; readonly op: 'is null' | 'is not null' };

/** A value per row: a column, or a column's time bucket (floor to a multiple of `widthMs` since the epoch). */
export type Expr =
  | { readonly kind: 'column'; readonly column: string }
  | { readonly kind: 'bucket'; readonly column: string; readonly widthMs: number };

export type AggregateFn = 'count' | 'sum' | 'min' | 'max' | 'avg';

export type SelectItem =
  | { readonly kind: 'expr'; readonly expr: Expr; readonly as: string }
  | {
      readonly kind: 'agg';
      readonly fn: AggregateFn;
      /** A column name, or '*' for count(*). */
      readonly column: string;
      readonly as: string;
    };

export type Query = {
  readonly table: string;
  readonly select: readonly SelectItem[];
  readonly where: readonly Filter[];
  readonly groupBy: readonly Expr[];
  readonly orderBy: readonly { readonly name: string; readonly desc: boolean }[];
  readonly limit?: number;
};

export type QueryError =
  | { readonly type: 'UnsupportedSql'; readonly detail: string }
  | { readonly type: 'UnknownTable'; readonly table: string }
  | { readonly type: 'UnknownColumn'; readonly column: string }
  | { readonly type: 'TypeMismatch'; readonly detail: string }
  | { readonly type: 'InvalidQuery'; readonly detail: string };

/** The output columns of a query, with the type of their values. */
export type ResultColumn = { readonly name: string; readonly type: ColumnType | 'count' | 'avg' };

export type BoundQuery = Omit<Query, 'where'> & {
  readonly where: readonly Filter<Bound>[];
  readonly schema: ReadonlyMap<string, ColumnSpec>;
  readonly columns: readonly ResultColumn[];
  /** Whether rows are grouped (any aggregate or GROUP BY). */
  readonly grouped: boolean;
  /** The table columns the scan must read. */
  readonly reads: readonly string[];
};

const NUMERIC: ReadonlySet<ColumnType> = new Set(['int32', 'int64', 'float', 'double']);
/** Every column type compares (min, max, range filters) but the opaque row id. */
const ORDERED: ReadonlySet<ColumnType> = new Set(COLUMN_TYPES.filter((t) => t !== 'rowid'));

export const exprName = (e: Expr): string =>
  e.kind === 'column' ? e.column : `time_bucket(${e.widthMs}ms, ${e.column})`;

const sameExpr = (a: Expr, b: Expr): boolean =>
  a.kind === b.kind && a.column === b.column && (a.kind === 'column' || a.widthMs === (b as typeof a).widthMs);

function bindLiteral(spec: ColumnSpec, value: Literal): Result<Bound, QueryError> {
  const mismatch = () =>
    err({ type: 'TypeMismatch' as const, detail: `${spec.name} is ${spec.type}; ${JSON.stringify(value)} is not` });
  if (value === null) return err({ type: 'TypeMismatch', detail: `compare ${spec.name} with NULL using IS NULL` });
  switch (spec.type) {
    case 'boolean':
      return typeof value === 'boolean' ? ok(value) : mismatch();
    case 'string':
      return typeof value === 'string' ? ok(value) : mismatch();
    case 'int32':
    case 'float':
    case 'double':
      return typeof value === 'number' ? ok(value) : mismatch();
    case 'int64':
      if (typeof value !== 'number') return mismatch();
      return Number.isInteger(value) ? ok(BigInt(value)) : ok(value);
    case 'timestamp': {
      if (typeof value === 'number') return ok(value);
      const ms = typeof value === 'string' ? parseTimestamp(value) : undefined;
      return ms === undefined ? mismatch() : ok(ms);
    }
    case 'rowid':
      return err({ type: 'TypeMismatch', detail: `${spec.name} cannot be compared` });
  }
}

/** Checks a query against its table's schema and binds its literals. */
export function bind(query: Query, schema: readonly ColumnSpec[] | undefined): Result<BoundQuery, QueryError> {
  if (!schema) return err({ type: 'UnknownTable', table: query.table });
  const specs = new Map(schema.map((c) => [c.name, c]));
  const column = (name: string): Result<ColumnSpec, QueryError> => {
    const spec = specs.get(name);
    return spec ? ok(spec) : err({ type: 'UnknownColumn', column: name });
  };
  const exprType = (e: Expr): Result<ColumnType, QueryError> => {
    const spec = column(e.column);
    if (!spec.ok) return spec;
    if (e.kind === 'bucket') {
      if (spec.value.type !== 'timestamp')
        return err({
          type: 'TypeMismatch',
          detail: `time_bucket needs a timestamp column; ${e.column} is ${spec.value.type}`,
        });
      if (!Number.isSafeInteger(e.widthMs) || e.widthMs <= 0)
        return err({ type: 'InvalidQuery', detail: 'a time bucket is a positive whole number of milliseconds' });
    }
    return ok(spec.value.type);
  };

  const where: Filter<Bound>[] = [];
  for (const f of query.where) {
    const spec = column(f.column);
    if (!spec.ok) return spec;
    switch (f.op) {
      case 'is null':
      case 'is not null':
        where.push(f);
        break;
      case 'in': {
        if (f.values.length === 0) return err({ type: 'InvalidQuery', detail: `IN () on ${f.column} is empty` });
        const values: Bound[] = [];
        for (const v of f.values) {
          const b = bindLiteral(spec.value, v);
          if (!b.ok) return b;
          values.push(b.value);
        }
        where.push({ column: f.column, op: 'in', values });
        break;
      }
      case 'between': {
        const low = bindLiteral(spec.value, f.low);
        if (!low.ok) return low;
        const high = bindLiteral(spec.value, f.high);
        if (!high.ok) return high;
        where.push({ column: f.column, op: 'between', low: low.value, high: high.value });
        break;
      }
      default: {
        if (!ORDERED.has(spec.value.type))
          return err({ type: 'TypeMismatch', detail: `${f.column} (${spec.value.type}) cannot be compared` });
        const value = bindLiteral(spec.value, f.value);
        if (!value.ok) return value;
        where.push({ column: f.column, op: f.op, value: value.value });
      }
    }
  }

  for (const e of query.groupBy) {
    const t = exprType(e);
    if (!t.ok) return t;
  }
  const grouped = query.groupBy.length > 0 || query.select.some((s) => s.kind === 'agg');
  const columns: ResultColumn[] = [];
  const names = new Set<string>();
  if (query.select.length === 0) return err({ type: 'InvalidQuery', detail: 'select at least one column' });
  for (const s of query.select) {
    if (names.has(s.as)) return err({ type: 'InvalidQuery', detail: `two output columns are named ${s.as}` });
    names.add(s.as);
    if (s.kind === 'expr') {
      const t = exprType(s.expr);
      if (!t.ok) return t;
      if (grouped && !query.groupBy.some((g) => sameExpr(g, s.expr))) {
        return err({ type: 'InvalidQuery', detail: `${exprName(s.expr)} must be in GROUP BY or in an aggregate` });
      }
      columns.push({ name: s.as, type: s.expr.kind === 'bucket' ? 'timestamp' : t.value });
      continue;
    }
    if (s.column === '*') {
      if (s.fn !== 'count') return err({ type: 'InvalidQuery', detail: `${s.fn}(*) is not a thing; name a column` });
      columns.push({ name: s.as, type: 'count' });
      continue;
    }
    const spec = column(s.column);
    if (!spec.ok) return spec;
    const type = spec.value.type;
    if ((s.fn === 'sum' || s.fn === 'avg') && !NUMERIC.has(type)) {
      return err({ type: 'TypeMismatch', detail: `${s.fn}(${s.column}): ${s.column} is ${type}, not a number` });
    }
    if ((s.fn === 'min' || s.fn === 'max') && !ORDERED.has(type)) {
      return err({ type: 'TypeMismatch', detail: `${s.fn}(${s.column}): ${type} has no order` });
    }
    columns.push({
      name: s.as,
      type: s.fn === 'count' ? 'count' : s.fn === 'avg' ? 'avg' : s.fn === 'sum' && type === 'float' ? 'double' : type,
    });
  }
  for (const o of query.orderBy) {
    if (!names.has(o.name)) return err({ type: 'UnknownColumn', column: o.name });
  }
  if (query.limit !== undefined && (!Number.isSafeInteger(query.limit) || query.limit < 0)) {
    return err({ type: 'InvalidQuery', detail: 'LIMIT takes a whole number' });
  }
  const reads = new Set<string>();
  for (const f of where) reads.add(f.column);
  for (const e of query.groupBy) reads.add(e.column);
  for (const s of query.select) {
    if (s.kind === 'expr') reads.add(s.expr.column);
    else if (s.column !== '*') reads.add(s.column);
  }
  return ok({ ...query, where, schema: specs, columns, grouped, reads: [...reads] });
}
