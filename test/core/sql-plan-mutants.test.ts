/**
 * The SQL parser (core/query/sql.ts `parseSql`) and the table schema the planner picks
 * (core/query/plan.ts `tableSchema`): behaviour the mutation run of those files showed
 * unpinned — a '-' that is not a comment, characters no token takes, quoted names that look
 * like punctuation or functions, keywords refused as names, DISTINCT before a parenthesis,
 * a query without LIMIT, and which object's schema a table has.
 */
import { describe, expect, it } from 'vitest';
import type { StorageId } from '../../src/core/object/keys.js';
import type { ObjectManifest } from '../../src/core/object/manifest.js';
import type { ColumnSpec } from '../../src/core/parquet/schema.js';
import { tableSchema } from '../../src/core/query/plan.js';
import { parseSql } from '../../src/core/query/sql.js';

const column = (name: string) => ({ kind: 'expr', expr: { kind: 'column', column: name }, as: name });
const refused = (detail: string) => ({ ok: false, error: { type: 'UnsupportedSql', detail } });

describe('parseSql reads', () => {
  it('a minus right after an operator as a negative number, not as the start of a comment', () => {
    expect(parseSql('SELECT a FROM t WHERE a=-1 AND b>-2')).toMatchObject({
      ok: true,
      value: {
        where: [
          { column: 'a', op: '=', value: -1 },
          { column: 'b', op: '>', value: -2 },
        ],
      },
    });
  });

  it('a quoted name that looks like punctuation as a column', () => {
    expect(parseSql('SELECT "*" FROM t')).toMatchObject({ ok: true, value: { select: [column('*')] } });
  });

  it('a query without LIMIT as one with no limit property at all', () => {
    const parsed = parseSql('SELECT a FROM t');
    expect(parsed.ok).toBe(true);
    if (!parsed.ok) return;
    expect(parsed.value).not.toHaveProperty('limit');
    expect(parsed.value).toEqual({ table: 't', select: [column('a')], where: [], groupBy: [], orderBy: [] });
  });
});

describe('parseSql refuses, saying what and where', () => {
  it.each<[string, string]>([
    // A character no token takes is refused where it stands, even with an operator after it.
    ['SELECT a FROM t WHERE a = 1 @;', 'unexpected character "@" at 28'],
    ['SELECT a FROM t WHERE a @= 1', 'unexpected character "@" at 24'],
    // Keywords are not names, whatever their case.
    ['SELECT FROM t', 'expected a column, found "FROM" at 7'],
    ['SELECT a FROM where', 'expected a table, found "where" at 14'],
    ['SELECT a AS 5 FROM t', 'expected a name after AS, found "5" at 12'],
    ['SELECT a AS Limit FROM t', 'expected a name after AS, found "Limit" at 12'],
    // A quoted name is a column, never a function or an aggregate: the '(' after it is the fault.
    ['SELECT "count"(a) FROM t', 'expected FROM, found "(" at 14'],
    ['SELECT "f"(a) FROM t', 'expected FROM, found "(" at 10'],
    ['SELECT a FROM t GROUP BY "f"(a)', 'expected the end of the query, found "(" at 28'],
    // A '(' that is text does not open an aggregate's parentheses.
    ["SELECT count '(' FROM t", 'expected FROM, found "(" at 13'],
    // A number is no select item, and not an aggregate's name.
    ['SELECT 5 FROM t', 'expected a column, found "5" at 7'],
    // DISTINCT is refused by name, also when a parenthesis follows it.
    ['SELECT DISTINCT(a) FROM t', 'DISTINCT is not supported'],
    ['SELECT distinct (a), b FROM t', 'DISTINCT is not supported'],
  ])('%j', (sql, detail) => {
    expect(parseSql(sql)).toEqual(refused(detail));
  });
});

const spec = (name: string): ColumnSpec => ({ name, type: 'int32', nullable: true });

/** A manifest of `table` stamped at `ms` (and `counter`), whose schema has the columns `names`. */
function manifest(id: string, table: string, ms: number, names: string[], counter = 0): ObjectManifest {
  return {
    storageId: id as StorageId,
    domain: 'GENERAL',
    table,
    schema: names.map(spec),
    rows: 1,
    bytes: 100,
    partitions: {},
    columns: {},
    producer: '00',
    hlc: { ms, counter },
    supersedes: [],
    rowOrigin: '0000000000000000',
  };
}

describe('tableSchema', () => {
  it('is undefined for a table no object belongs to, even when other tables have objects', () => {
    expect(tableSchema([], 'readings')).toBeUndefined();
    expect(tableSchema([manifest('x', 'other', 5, ['b'])], 'readings')).toBeUndefined();
  });

  it('is the schema of the newest object of the table, in whatever order the objects come', () => {
    const old = manifest('old', 'readings', 1, ['a']);
    const grown = manifest('new', 'readings', 2, ['a', 'b']);
    expect(tableSchema([old, grown], 'readings')).toEqual([spec('a'), spec('b')]);
    expect(tableSchema([grown, old], 'readings')).toEqual([spec('a'), spec('b')]);
  });

  it('ignores objects of other tables, newer or listed first', () => {
    const mine = manifest('mine', 'readings', 2, ['a']);
    const newerOther = manifest('o1', 'other', 9, ['z']);
    const olderOther = manifest('o2', 'other', 1, ['y']);
    expect(tableSchema([mine, newerOther], 'readings')).toEqual([spec('a')]);
    expect(tableSchema([olderOther, mine], 'readings')).toEqual([spec('a')]);
    expect(tableSchema([newerOther, mine, olderOther], 'readings')).toEqual([spec('a')]);
  });

  it('keeps the newer object when a later-listed one has the same millisecond and a lower counter', () => {
    const newer = manifest('newer', 'readings', 5, ['a', 'b'], 1);
    const older = manifest('older', 'readings', 5, ['a'], 0);
    expect(tableSchema([newer, older], 'readings')).toEqual([spec('a'), spec('b')]);
  });

  it('orders by the counter within a millisecond, whichever object is listed first', () => {
    const newer = manifest('newer', 'readings', 5, ['a', 'b'], 1);
    const older = manifest('older', 'readings', 5, ['a'], 0);
    expect(tableSchema([older, newer], 'readings')).toEqual([spec('a'), spec('b')]);
  });

  it('breaks a tie of identical stamps by storage id, whichever object is listed first', () => {
    const one = manifest('one', 'readings', 5, ['a'], 2);
    const two = manifest('two', 'readings', 5, ['a', 'c'], 2);
    expect(tableSchema([one, two], 'readings')).toEqual([spec('a'), spec('c')]);
    expect(tableSchema([two, one], 'readings')).toEqual([spec('a'), spec('c')]);
  });
});
