/**
 * What the catalog planner (core/query/plan.ts `plan`) says of each object it prunes: the
 * reason a user reads in the query's explain panel. Manifests are written out by hand here
 * (their bounds as Parquet's plain bytes), the queries go through the SQL parser and binder,
 * and every reason is compared as a whole string: which rule pruned the object (superseded,
 * partition, missing column, time range, min/max) and the filter as the user wrote it.
 */
import { describe, expect, it } from 'vitest';
import type { ColumnBounds, ObjectManifest } from '../../src/core/object/manifest.js';
import type { ColumnSpec } from '../../src/core/parquet/schema.js';
import { plan } from '../../src/core/query/plan.js';
import { bind } from '../../src/core/query/query.js';
import { parseSql } from '../../src/core/query/sql.js';
import type { StorageId } from '../../src/core/object/keys.js';

const SCHEMA: ColumnSpec[] = [
  { name: 'ts', type: 'timestamp', nullable: false },
  { name: 'device', type: 'string', nullable: true },
  { name: 'count', type: 'int32', nullable: true },
  { name: 'ok', type: 'boolean', nullable: true },
];

const int32 = (n: number) => {
  const b = new Uint8Array(4);
  new DataView(b.buffer).setInt32(0, n, true);
  return b;
};
const int64 = (n: number) => {
  const b = new Uint8Array(8);
  new DataView(b.buffer).setBigInt64(0, BigInt(n), true);
  return b;
};
const text = (s: string) => new TextEncoder().encode(s);

const T0 = Date.UTC(2026, 10, 1);
const HOUR = 3_600_000;

/** An object of 10 rows, times [T0, T0 + 1 h], count 1…5, device 'a'…'c', ok both ways. */
function manifest(id: string, over: Partial<ObjectManifest> = {}, timeless = false): ObjectManifest {
  const columns: Record<string, ColumnBounds> = {
    ts: { nulls: 0, min: int64(T0), max: int64(T0 + HOUR) },
    device: { nulls: 2, min: text('a'), max: text('c') },
    count: { nulls: 0, min: int32(1), max: int32(5) },
    ok: { nulls: 0, min: Uint8Array.of(0), max: Uint8Array.of(1) },
  };
  const m: ObjectManifest = {
    storageId: id as StorageId,
    domain: 'GENERAL',
    table: 'readings',
    schema: SCHEMA,
    rows: 10,
    bytes: 1000,
    time: { column: 'ts', min: T0, max: T0 + HOUR },
    partitions: {},
    columns,
    producer: '00',
    hlc: { ms: T0, counter: 0 },
    supersedes: [],
    rowOrigin: '0000000000000000',
    ...over,
  };
  return timeless ? (omit(m, 'time') as ObjectManifest) : m;
}

/** A copy of `o` without the property `key`. */
const omit = <T extends object>(o: T, key: string): Partial<T> =>
  Object.fromEntries(Object.entries(o).filter(([k]) => k !== key)) as Partial<T>;

/** The reason the one object is pruned for `where`, or 'scanned'. */
function reason(where: string, m: ObjectManifest = manifest('o1')): string {
  const parsed = parseSql(`SELECT count FROM readings WHERE ${where}`);
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.error));
  const bound = bind(parsed.value, SCHEMA);
  if (!bound.ok) throw new Error(JSON.stringify(bound.error));
  const p = plan([m], bound.value);
  expect(p.considered).toBe(1);
  return p.pruned[0]?.reason ?? (p.scan.length === 1 ? 'scanned' : 'lost');
}

describe('pruning reasons, as the user wrote the filter', () => {
  it('names the rule and the filter for every operator', () => {
    expect(reason("device = 'zz'")).toBe("min/max of device: device = 'zz'");
    expect(reason('count > 5')).toBe('min/max of count: count > 5');
    expect(reason('count in (7, 9)')).toBe('min/max of count: count in (7, 9)');
    expect(reason('count between 6 and 8')).toBe('min/max of count: count between 6 and 8');
    expect(reason("device between 'd' and 'e'")).toBe("min/max of device: device between 'd' and 'e'");
    expect(reason('count is null')).toBe('min/max of count: count is null');
    expect(
      reason(
        'ok = true',
        manifest('o1', {
          columns: { ...manifest('o').columns, ok: { nulls: 0, min: Uint8Array.of(0), max: Uint8Array.of(0) } },
        }),
      ),
    ).toBe('min/max of ok: ok = true');
  });

  it('calls the time column’s range a time range, and shows times as dates', () => {
    expect(reason("ts < TIMESTAMP '2026-10-31T00:00:00Z'")).toBe(
      "time range: ts < TIMESTAMP '2026-10-31T00:00:00.000Z'",
    );
    // A number compared with a timestamp is milliseconds; past what a date holds it stays a number.
    expect(reason('ts > 9000000000000000')).toBe('time range: ts > 9000000000000000');
    expect(reason('ts >= 8640000000000000')).toBe("time range: ts >= TIMESTAMP '+275760-09-13T00:00:00.000Z'");
    // Without a time column in the manifest, the same test is a min/max one.
    expect(reason("ts < TIMESTAMP '2026-10-31T00:00:00Z'", manifest('o1', {}, true))).toBe(
      "min/max of ts: ts < TIMESTAMP '2026-10-31T00:00:00.000Z'",
    );
  });

  it('says when a column is all nulls, or has no statistics, or the object lacks it', () => {
    const allNull = manifest('o1', { columns: { ...manifest('o').columns, count: { nulls: 10 } } });
    expect(reason('count = 1', allNull)).toBe('min/max of count: count = 1');
    expect(reason('count is not null', allNull)).toBe('min/max of count: count is not null');
    expect(reason('count is null', allNull)).toBe('scanned');
    // No bounds recorded for the column at all: nothing is known, so nothing is pruned.
    const rest = omit(manifest('o').columns, 'count') as Record<string, ColumnBounds>;
    expect(reason('count = 99', manifest('o1', { columns: rest }))).toBe('scanned');
    // An object formed before the column existed holds only nulls for it.
    const without = manifest('o1', { schema: SCHEMA.filter((c) => c.name !== 'count') });
    expect(reason('count = 1', without)).toBe('no column count: count = 1');
    expect(reason('count is not null', without)).toBe('no column count: count is not null');
    expect(reason('count is null', without)).toBe('scanned');
    // A column of the same name and another type is not the column queried.
    const retyped = manifest('o1', {
      schema: SCHEMA.map((c) => (c.name === 'count' ? { ...c, type: 'string' as const } : c)),
    });
    expect(reason('count = 1', retyped)).toBe('no column count: count = 1');
  });

  it('prunes by partition value only for an equality on text', () => {
    const north = manifest('o1', { partitions: { device: 'north' } });
    expect(reason("device = 'south'", north)).toBe("partition device=north: device = 'south'");
    expect(reason("device = 'north'", north)).toBe("min/max of device: device = 'north'");
    expect(reason("device != 'north'", north)).toBe('scanned');
    expect(reason("device in ('south')", north)).toBe("min/max of device: device in ('south')");
    expect(reason("device != 'south'", north)).toBe('scanned');
    expect(reason("device > 'south'", north)).toBe("min/max of device: device > 'south'");
    // A partition value is text: a number compared with it is not the same value, so min/max decides.
    expect(reason('count = 3', manifest('o1', { partitions: { count: '3' } }))).toBe('scanned');
  });

  it('keeps an object whose bound equals the value of an inclusive comparison', () => {
    expect(reason('count <= 1')).toBe('scanned');
    expect(reason('count < 1')).toBe('min/max of count: count < 1');
    expect(reason('count >= 5')).toBe('scanned');
    expect(reason('count > 5')).toBe('min/max of count: count > 5');
    expect(reason('count between 5 and 9')).toBe('scanned');
    expect(reason('count between -3 and 0')).toBe('min/max of count: count between -3 and 0');
    expect(reason('count between -3 and 1')).toBe('scanned');
  });

  it('never prunes != on a range of several values, even one equal to a bound', () => {
    expect(reason('count != 1')).toBe('scanned');
    expect(reason('count != 5')).toBe('scanned');
    const one = manifest('o1', {
      columns: { ...manifest('o').columns, count: { nulls: 0, min: int32(3), max: int32(3) } },
    });
    expect(reason('count != 3', one)).toBe('min/max of count: count != 3');
    expect(reason('count != 4', one)).toBe('scanned');
  });

  it('prunes what a later object supersedes, and considers only the queried table', () => {
    const parsed = parseSql('SELECT count FROM readings');
    if (!parsed.ok) throw new Error('parse');
    const bound = bind(parsed.value, SCHEMA);
    if (!bound.ok) throw new Error('bind');
    const old = manifest('old');
    const compacted = manifest('new', { supersedes: ['old' as StorageId] });
    const other = manifest('x', { table: 'other' });
    const p = plan([old, compacted, other], bound.value);
    expect(p).toEqual({ considered: 2, pruned: [{ id: 'old', reason: 'superseded' }], scan: [compacted] });
  });
});
