/**
 * Catalog-order planning (seed 003 "Reading"): decide from decrypted manifests alone
 * which objects can hold matching rows, before any object key is unwrapped or any byte
 * read. An object is pruned when it belongs to another table, is superseded, or when one
 * filter cannot match its statistics — time range, partition value, or a column's
 * min/max/null count. The same test, on a row group's footer statistics, is the second
 * level of pruning inside an object (execute.ts).
 */
import { compareHlc } from '../hlc.js';
import { compareStrings } from '../parquet/columns.js';
import { boundValue, type ObjectManifest } from '../object/manifest.js';
import type { ColumnSpec } from '../parquet/schema.js';
import type { Bound, BoundQuery, Filter } from './query.js';

/** What statistics say of one column over some rows. */
export type Range = {
  readonly min: Bound | undefined;
  readonly max: Bound | undefined;
  readonly nulls: number;
  readonly rows: number;
};

/** Total order of bound values of one column type (strings by code point, as Parquet and DuckDB). */
export function compareBound(a: Bound, b: Bound): number {
  if (typeof a === 'string' && typeof b === 'string') return compareStrings(a, b);
  if (typeof a === 'boolean' && typeof b === 'boolean') return Number(a) - Number(b);
  return a < b ? -1 : a > b ? 1 : 0;
}

/** False only when no row within `range` can satisfy `filter`. */
export function mayMatch(filter: Filter<Bound>, range: Range): boolean {
  const { min, max, nulls, rows } = range;
  if (filter.op === 'is null') return nulls > 0;
  if (filter.op === 'is not null') return nulls < rows;
  if (nulls >= rows) return false; // only nulls: no comparison holds
  if (min === undefined || max === undefined) return true;
  const below = (v: Bound) => compareBound(v, min) < 0;
  const above = (v: Bound) => compareBound(v, max) > 0;
  switch (filter.op) {
    case '=':
      return !below(filter.value) && !above(filter.value);
    case '!=':
      return !(compareBound(min, max) === 0 && compareBound(min, filter.value) === 0);
    case '<':
      return compareBound(min, filter.value) < 0;
    case '<=':
      return compareBound(min, filter.value) <= 0;
    case '>':
      return compareBound(max, filter.value) > 0;
    case '>=':
      return compareBound(max, filter.value) >= 0;
    case 'between':
      // BETWEEN 5 AND 1 holds for no value at all (SQL does not swap its bounds).
      return (
        compareBound(filter.low, filter.high) <= 0 &&
        compareBound(max, filter.low) >= 0 &&
        compareBound(min, filter.high) <= 0
      );
    case 'in':
      return filter.values.some((v) => !below(v) && !above(v));
  }
}

export type Pruned = { readonly id: string; readonly reason: string };

/** The furthest a JavaScript Date reaches from the epoch (ECMA-262 §21.4.1.22). */
const MAX_DATE_MS = 8.64e15;

export type Plan = {
  /** Objects of the table (superseded ones included). */
  readonly considered: number;
  readonly pruned: readonly Pruned[];
  readonly scan: readonly ObjectManifest[];
};

/** A filter as the user wrote it, timestamps as dates (`TIMESTAMP '…'`, the SQL's own form). */
function describe(f: Filter<Bound>, type: ColumnSpec['type']): string {
  const v = (x: Bound) =>
    typeof x === 'string'
      ? `'${x}'`
      : type === 'timestamp' && typeof x === 'number' && Math.abs(x) <= MAX_DATE_MS
        ? `TIMESTAMP '${new Date(x).toISOString()}'`
        : String(x);
  switch (f.op) {
    case 'is null':
    case 'is not null':
      return `${f.column} ${f.op}`;
    case 'in':
      return `${f.column} in (${f.values.map(v).join(', ')})`;
    case 'between':
      return `${f.column} between ${v(f.low)} and ${v(f.high)}`;
    default:
      return `${f.column} ${f.op} ${v(f.value)}`;
  }
}

/** An object's range of one column from its manifest (the time range for its time column). */
function manifestRange(m: ObjectManifest, spec: ColumnSpec): Range {
  const b = m.columns[spec.name];
  const typed = (bytes: Uint8Array | undefined) => {
    if (!bytes) return undefined;
    const value = boundValue(spec.type, bytes);
    return value instanceof Uint8Array || value === null ? undefined : value;
  };
  return { min: typed(b?.min), max: typed(b?.max), nulls: b?.nulls ?? 0, rows: m.rows };
}

/** Why one object cannot match, or undefined when it may. */
function pruneReason(m: ObjectManifest, q: BoundQuery): string | undefined {
  for (const f of q.where) {
    const spec = q.schema.get(f.column)!;
    const part = m.partitions[f.column];
    if (part !== undefined && f.op === '=' && typeof f.value === 'string' && f.value !== part) {
      return `partition ${f.column}=${part}: ${describe(f, spec.type)}`;
    }
    const own = m.schema.find((c) => c.name === f.column);
    if (!own || own.type !== spec.type) {
      // An object without the column holds only nulls for it.
      if (f.op === 'is null') continue;
      return `no column ${f.column}: ${describe(f, spec.type)}`;
    }
    if (!mayMatch(f, manifestRange(m, own))) {
      const why = describe(f, spec.type);
      return m.time?.column === f.column ? `time range: ${why}` : `min/max of ${f.column}: ${why}`;
    }
  }
  return undefined;
}

/** Orders objects by hybrid logical clock, then storage id: the same order on every machine. */
const byStamp = (a: ObjectManifest, b: ObjectManifest): number =>
  compareHlc(a.hlc, b.hlc) || (a.storageId < b.storageId ? -1 : a.storageId > b.storageId ? 1 : 0);

/**
 * Why objects of one table are set aside before pruning: `superseded` when a compaction of the
 * same domain lists them in `sup` (a machine of another domain cannot hide a domain's rows);
 * `overlapping compaction` for a compaction whose list shares an object with an earlier one
 * (two machines compacted the same objects): the earlier, by clock then storage id, is applied,
 * the later is set aside with its list, and each row is shown once either way.
 */
export function setAside(ofTable: readonly ObjectManifest[]): Map<string, string> {
  const reasons = new Map<string, string>();
  const claimed = new Set<string>();
  const key = (domain: string, id: string) => `${domain}\u0000${id}`;
  for (const c of ofTable.filter((m) => m.supersedes.length > 0).sort(byStamp)) {
    if (c.supersedes.some((id) => claimed.has(key(c.domain, id)))) {
      reasons.set(key(c.domain, c.storageId), 'overlapping compaction');
      continue;
    }
    for (const id of c.supersedes) claimed.add(key(c.domain, id));
  }
  for (const m of ofTable) {
    const k = key(m.domain, m.storageId);
    if (claimed.has(k)) reasons.set(k, 'superseded');
  }
  return new Map([...reasons].map(([k, why]) => [k.split('\u0000')[1]!, why]));
}

export function plan(manifests: readonly ObjectManifest[], q: BoundQuery): Plan {
  const ofTable = manifests.filter((m) => m.table === q.table);
  const aside = setAside(ofTable);
  const pruned: Pruned[] = [];
  const scan: ObjectManifest[] = [];
  for (const m of ofTable) {
    const reason = aside.get(m.storageId) ?? pruneReason(m, q);
    if (reason) pruned.push({ id: m.storageId, reason });
    else scan.push(m);
  }
  return { considered: ofTable.length, pruned, scan };
}

/**
 * The schema a table's objects share: the newest object's (columns are never redefined), by
 * hybrid logical clock — milliseconds, then counter — and, for two stamped alike, the greater
 * storage id, so that the answer never depends on the order the catalog lists them in.
 */
export function tableSchema(manifests: readonly ObjectManifest[], table: string): readonly ColumnSpec[] | undefined {
  let newest: ObjectManifest | undefined;
  for (const m of manifests) {
    if (m.table !== table) continue;
    const order = newest ? compareHlc(m.hlc, newest.hlc) : 1;
    if (order > 0 || (order === 0 && m.storageId > newest!.storageId)) newest = m;
  }
  return newest?.schema;
}
