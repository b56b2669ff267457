/**
 * Binding a parsed query to its table's schema (core/query/query.ts `bind`): every refusal
 * word for word — unknown tables and columns, literals of the wrong type for each column
 * type, NULL compared with =, row ids compared, empty IN, buckets on non-timestamps or of
 * no width, output columns missing, repeated, ungrouped, aggregates of the wrong type,
 * unknown ORDER BY names and bad LIMITs — and, for queries that bind, the output columns
 * with their types, the literals converted, and the columns the scan must read.
 */
import { describe, expect, it } from 'vitest';
import type { ColumnSpec } from '../../src/core/parquet/schema.js';
import { bind, type Query, type QueryError } from '../../src/core/query/query.js';
import { parseSql } from '../../src/core/query/sql.js';

const SCHEMA: ColumnSpec[] = [
  { name: 'ts', type: 'timestamp', nullable: false },
  { name: 'device', type: 'string', nullable: true },
  { name: 'temp', type: 'double', nullable: true },
  { name: 'f', type: 'float', nullable: true },
  { name: 'count', type: 'int32', nullable: true },
  { name: 'total', type: 'int64', nullable: true },
  { name: 'ok', type: 'boolean', nullable: true },
  { name: 'id', type: 'rowid', nullable: false },
];

function parsed(sql: string): Query {
  const q = parseSql(sql);
  if (!q.ok) throw new Error(JSON.stringify(q.error));
  return q.value;
}
const refusal = (q: Query) => {
  const b = bind(q, SCHEMA);
  return b.ok ? 'bound' : b.error;
};
const mismatch = (detail: string): QueryError => ({ type: 'TypeMismatch', detail });
const invalid = (detail: string): QueryError => ({ type: 'InvalidQuery', detail });
const base: Query = {
  table: 't',
  select: [{ kind: 'expr', expr: { kind: 'column', column: 'ts' }, as: 'ts' }],
  where: [],
  groupBy: [],
  orderBy: [],
};

describe('bind refuses, saying why', () => {
  it.each<[string, QueryError]>([
    ['SELECT nope FROM t', { type: 'UnknownColumn', column: 'nope' }],
    ['SELECT ts FROM t WHERE nope = 1', { type: 'UnknownColumn', column: 'nope' }],
    ['SELECT ts FROM t WHERE device = NULL', mismatch('compare device with NULL using IS NULL')],
    ['SELECT ts FROM t WHERE id = 1', mismatch('id (rowid) cannot be compared')],
    ['SELECT ts FROM t WHERE id IN (1)', mismatch('id cannot be compared')],
    ['SELECT ts FROM t WHERE id BETWEEN 1 AND 2', mismatch('id cannot be compared')],
    ['SELECT ts FROM t WHERE ok = 1', mismatch('ok is boolean; 1 is not')],
    ["SELECT ts FROM t WHERE ok = 'true'", mismatch('ok is boolean; "true" is not')],
    ['SELECT ts FROM t WHERE device = 1', mismatch('device is string; 1 is not')],
    ['SELECT ts FROM t WHERE device = TRUE', mismatch('device is string; true is not')],
    ["SELECT ts FROM t WHERE temp = 'x'", mismatch('temp is double; "x" is not')],
    ["SELECT ts FROM t WHERE f = 'x'", mismatch('f is float; "x" is not')],
    ["SELECT ts FROM t WHERE count = 'x'", mismatch('count is int32; "x" is not')],
    ["SELECT ts FROM t WHERE total = '5'", mismatch('total is int64; "5" is not')],
    ["SELECT ts FROM t WHERE ts = 'yesterday'", mismatch('ts is timestamp; "yesterday" is not')],
    ['SELECT ts FROM t WHERE ts = TRUE', mismatch('ts is timestamp; true is not')],
    ["SELECT ts FROM t WHERE count BETWEEN 'a' AND 5", mismatch('count is int32; "a" is not')],
    ["SELECT ts FROM t WHERE count BETWEEN 1 AND 'b'", mismatch('count is int32; "b" is not')],
    ["SELECT ts FROM t WHERE count IN (1, 'c')", mismatch('count is int32; "c" is not')],
    [
      "SELECT time_bucket('1 hour', count) AS b FROM t GROUP BY b",
      mismatch('time_bucket needs a timestamp column; count is int32'),
    ],
    [
      "SELECT ts FROM t GROUP BY time_bucket('1 hour', count)",
      mismatch('time_bucket needs a timestamp column; count is int32'),
    ],
    ['SELECT ts FROM t GROUP BY nope', { type: 'UnknownColumn', column: 'nope' }],
    ['SELECT count, total AS count FROM t', invalid('two output columns are named count')],
    ['SELECT device, count(*) FROM t', invalid('device must be in GROUP BY or in an aggregate')],
    [
      "SELECT time_bucket('1 hour', ts) AS b, count(*) FROM t GROUP BY time_bucket('2 hours', ts)",
      invalid('time_bucket(3600000ms, ts) must be in GROUP BY or in an aggregate'),
    ],
    [
      "SELECT ts, count(*) FROM t GROUP BY time_bucket('1 hour', ts)",
      invalid('ts must be in GROUP BY or in an aggregate'),
    ],
    ['SELECT device FROM t GROUP BY count', invalid('device must be in GROUP BY or in an aggregate')],
    ['SELECT sum(*) FROM t', invalid('sum(*) is not a thing; name a column')],
    ['SELECT avg(nope) FROM t', { type: 'UnknownColumn', column: 'nope' }],
    ['SELECT sum(device) FROM t', mismatch('sum(device): device is string, not a number')],
    ['SELECT avg(ok) FROM t', mismatch('avg(ok): ok is boolean, not a number')],
    ['SELECT avg(ts) FROM t', mismatch('avg(ts): ts is timestamp, not a number')],
    ['SELECT min(id) FROM t', mismatch('min(id): rowid has no order')],
    ['SELECT max(id) FROM t', mismatch('max(id): rowid has no order')],
    ['SELECT ts FROM t ORDER BY temp', { type: 'UnknownColumn', column: 'temp' }],
    [
      "SELECT time_bucket('1 hour', ts) AS b FROM t GROUP BY ts",
      invalid('time_bucket(3600000ms, ts) must be in GROUP BY or in an aggregate'),
    ],
  ])('%s', (sql, error) => {
    expect(refusal(parsed(sql))).toEqual(error);
  });

  it('refuses what the parser never writes but a caller might', () => {
    expect(bind(base, undefined)).toEqual({ ok: false, error: { type: 'UnknownTable', table: 't' } });
    expect(refusal({ ...base, where: [{ column: 'count', op: 'in', values: [] }] })).toEqual(
      invalid('IN () on count is empty'),
    );
    for (const widthMs of [0, -5, 1.5, Number.NaN]) {
      expect(refusal({ ...base, groupBy: [{ kind: 'bucket', column: 'ts', widthMs }] }), String(widthMs)).toEqual(
        invalid('a time bucket is a positive whole number of milliseconds'),
      );
    }
    expect(refusal({ ...base, select: [] })).toEqual(invalid('select at least one column'));
    for (const limit of [-1, 1.5]) expect(refusal({ ...base, limit })).toEqual(invalid('LIMIT takes a whole number'));
    expect(refusal({ ...base, limit: 0 })).toBe('bound');
  });
});

describe('bind gives', () => {
  it('each output column its type: counts, averages, sums of floats as doubles, the rest as their column', () => {
    const q = parsed(
      "SELECT time_bucket('1 hour', ts) AS b, count(*), count(temp) AS n, sum(count), sum(total), sum(f), sum(temp), avg(total), min(ts), max(device), min(ok) FROM t GROUP BY b",
    );
    const b = bind(q, SCHEMA);
    if (!b.ok) throw new Error(JSON.stringify(b.error));
    expect(b.value.columns).toEqual([
      { name: 'b', type: 'timestamp' },
      { name: 'count(*)', type: 'count' },
      { name: 'n', type: 'count' },
      { name: 'sum(count)', type: 'int32' },
      { name: 'sum(total)', type: 'int64' },
      { name: 'sum(f)', type: 'double' },
      { name: 'sum(temp)', type: 'double' },
      { name: 'avg(total)', type: 'avg' },
      { name: 'min(ts)', type: 'timestamp' },
      { name: 'max(device)', type: 'string' },
      { name: 'min(ok)', type: 'boolean' },
    ]);
    expect(b.value.grouped).toBe(true);
    expect([...b.value.reads].sort()).toEqual(['count', 'device', 'f', 'ok', 'temp', 'total', 'ts']);
  });

  it('literals in their column’s type, and the columns filters and groups read', () => {
    const q = parsed(
      "SELECT device FROM t WHERE total = 5 AND total < 5.5 AND ts >= '2026-01-01T00:00:00Z' AND ts < 1000 AND ok = TRUE AND count IN (1, 2) AND temp BETWEEN -1 AND 2.5 AND f IS NULL GROUP BY device ORDER BY device LIMIT 0",
    );
    const b = bind(q, SCHEMA);
    if (!b.ok) throw new Error(JSON.stringify(b.error));
    expect(b.value.where).toEqual([
      { column: 'total', op: '=', value: 5n },
      { column: 'total', op: '<', value: 5.5 },
      { column: 'ts', op: '>=', value: Date.UTC(2026, 0, 1) },
      { column: 'ts', op: '<', value: 1000 },
      { column: 'ok', op: '=', value: true },
      { column: 'count', op: 'in', values: [1, 2] },
      { column: 'temp', op: 'between', low: -1, high: 2.5 },
      { column: 'f', op: 'is null' },
    ]);
    expect(b.value.columns).toEqual([{ name: 'device', type: 'string' }]);
    expect(b.value.grouped).toBe(true);
    expect(b.value.limit).toBe(0);
    expect([...b.value.reads].sort()).toEqual(['count', 'device', 'f', 'ok', 'temp', 'total', 'ts']);
  });

  it('counts of any column, row ids too; min and max in their column’s own type', () => {
    const b = bind(parsed('SELECT count(id), min(f), max(f), min(count) FROM t'), SCHEMA);
    expect(b.ok && b.value.columns).toEqual([
      { name: 'count(id)', type: 'count' },
      { name: 'min(f)', type: 'float' },
      { name: 'max(f)', type: 'float' },
      { name: 'min(count)', type: 'int32' },
    ]);
  });

  it('an ungrouped query as not grouped, a count(*) reading no column', () => {
    const plain = bind(parsed('SELECT ts, device FROM t'), SCHEMA);
    expect(plain.ok && plain.value.grouped).toBe(false);
    const counted = bind(parsed('SELECT count(*) FROM t'), SCHEMA);
    expect(counted.ok && [counted.value.grouped, counted.value.reads]).toEqual([true, []]);
  });
});
