/**
 * The SQL the query view takes (core/query/sql.ts `parseSql`), token by token: comments,
 * quoted names, strings with doubled quotes, literals of every kind, ORDER BY and LIMIT — and
 * every refusal with the words a user reads, naming what is not supported and where.
 */
import { describe, expect, it } from 'vitest';
import { parseSql } from '../../src/core/query/sql.js';

const column = (name: string) => ({ kind: 'expr', expr: { kind: 'column', column: name }, as: name });

describe('parseSql reads', () => {
  it.each<[string, object]>([
    ['SELECT a FROM t -- a comment\nWHERE a = 1', { where: [{ column: 'a', op: '=', value: 1 }] }],
    ['SELECT a FROM t -- a comment to the end', { table: 't', where: [] }],
    ['SELECT "my col" FROM "My Table"', { table: 'My Table', select: [column('my col')] }],
    ["SELECT a FROM t WHERE s = 'it''s'", { where: [{ column: 's', op: '=', value: "it's" }] }],
    ["SELECT a FROM t WHERE s = ''''", { where: [{ column: 's', op: '=', value: "'" }] }],
    [
      "SELECT a FROM t WHERE a IN (1, 'x', TRUE, FALSE, TIMESTAMP '2026-01-01T00:00:00Z')",
      { where: [{ column: 'a', op: 'in', values: [1, 'x', true, false, '2026-01-01T00:00:00Z'] }] },
    ],
    ['SELECT a FROM t ORDER BY a DESC LIMIT 3', { orderBy: [{ name: 'a', desc: true }], limit: 3 }],
    ['SELECT a FROM t LIMIT 5;', { limit: 5 }],
    ['SELECT a FROM t LIMIT 0', { limit: 0 }],
    [
      'SELECT a FROM t ORDER BY a ASC, b',
      {
        orderBy: [
          { name: 'a', desc: false },
          { name: 'b', desc: false },
        ],
      },
    ],
    // Numbers of every shape the tokenizer takes, each one token.
    [
      'SELECT a FROM t WHERE a IN (12.5, .25, -.5, 1e+5, 2.5E-3, 1e10, 7.)',
      { where: [{ column: 'a', op: 'in', values: [12.5, 0.25, -0.5, 1e5, 2.5e-3, 1e10, 7] }] },
    ],
    // NULL parses (the binder then asks for IS NULL).
    ['SELECT a FROM t WHERE a = NULL', { where: [{ column: 'a', op: '=', value: null }] }],
    ['SELECT a FROM t WHERE a <> 1', { where: [{ column: 'a', op: '!=', value: 1 }] }],
    // A column may be called time_bucket when no parenthesis follows.
    ['SELECT time_bucket, a FROM t', { select: [column('time_bucket'), column('a')] }],
    [
      "SELECT time_bucket(INTERVAL '15minutes', ts) FROM t GROUP BY time_bucket('15 minutes ', ts)",
      {
        select: [{ kind: 'expr', expr: { kind: 'bucket', column: 'ts', widthMs: 900_000 }, as: 'time_bucket' }],
        groupBy: [{ kind: 'bucket', column: 'ts', widthMs: 900_000 }],
      },
    ],
    // GROUP BY names a bucket's alias, quoted or not; any other alias is a column of the table.
    [
      'SELECT time_bucket(\'1 hour\', ts) AS b FROM t GROUP BY "b"',
      { groupBy: [{ kind: 'bucket', column: 'ts', widthMs: 3_600_000 }] },
    ],
    ['SELECT a AS b FROM t GROUP BY b', { groupBy: [{ kind: 'column', column: 'b' }] }],
    ['SELECT count(*) AS n FROM t GROUP BY n', { groupBy: [{ kind: 'column', column: 'n' }] }],
  ])('%j', (sql, expected) => {
    expect(parseSql(sql)).toMatchObject({ ok: true, value: expected });
  });
});

describe('parseSql refuses, saying what and where', () => {
  it.each<[string, string]>([
    ['SELECT "my col FROM t', 'unterminated quoted name at 7'],
    ["SELECT a FROM t WHERE s = 'open", 'unterminated string at 26'],
    ['SELECT a FROM t WHERE a = @', 'unexpected character "@" at 26'],
    ["SELECT time_bucket(INTERVAL 'soon', ts) AS b FROM t GROUP BY b", 'interval "soon": write e.g. \'15 minutes\''],
    ["SELECT time_bucket(INTERVAL '1 fortnight', ts) AS b FROM t GROUP BY b", 'interval unit "fortnight"'],
    ["SELECT time_bucket(INTERVAL '0 minutes', ts) AS b FROM t GROUP BY b", 'interval "0 minutes"'],
    [
      "SELECT time_bucket(INTERVAL '15 minutes', ts, TIMESTAMP '2020-01-01') AS b FROM t GROUP BY b",
      'time_bucket takes no origin: buckets are aligned to the epoch (UTC)',
    ],
    ['SELECT time_bucket(5, ts) AS b FROM t GROUP BY b', 'expected an interval such as \'1 hour\', found "5" at 19'],
    ['SELECT count(DISTINCT a) FROM t', 'count(DISTINCT …) is not supported'],
    ['SELECT DISTINCT a FROM t', 'DISTINCT is not supported'],
    ['SELECT a FROM t WHERE (a = 1)', 'parenthesised conditions are not supported'],
    ['SELECT a FROM t WHERE a NOT IN (1, 2)', 'NOT IN is not supported'],
    ['SELECT a FROM t WHERE a NOT BETWEEN 1 AND 2', 'NOT is supported only in NOT IN and IS NOT NULL'],
    [
      'SELECT a FROM t WHERE a',
      'expected a comparison (=, !=, <, <=, >, >=, IN, BETWEEN, IS NULL), found the end of the query',
    ],
    [
      'SELECT a FROM t WHERE a = ',
      "expected a literal (number, 'text', TRUE, FALSE or TIMESTAMP '…'), found the end of the query",
    ],
    ['SELECT a FROM t WHERE a = SELECT', 'subqueries are not supported'],
    ['SELECT a FROM t LIMIT x', 'expected a whole number after LIMIT, found "x" at 22'],
    ['SELECT a FROM t LIMIT -1', 'expected a whole number after LIMIT, found "-1" at 22'],
    ['SELECT a FROM', 'expected a table, found the end of the query'],
    ['SELECT a FROM t, u', 'one table per query (no joins)'],
    ['SELECT a FROM t GROUP a', 'expected BY, found "a" at 22'],
    ['SELECT count(a FROM t', 'expected \')\', found "FROM" at 15'],
    ['SELECT count(5) FROM t', 'expected a column or *, found "5" at 13'],
    ['SELECT a FROM t x', 'expected the end of the query, found "x" at 16'],
    ['SELECT a FROM t LIMIT 1.5', 'expected a whole number after LIMIT, found "1.5" at 22'],
    // An operator where a literal belongs is not a qualified name; a '.' that is text is not either.
    [
      'SELECT a FROM t WHERE a = )',
      "expected a literal (number, 'text', TRUE, FALSE or TIMESTAMP '…'), found \")\" at 26",
    ],
    ["SELECT a FROM t LIMIT '.'", 'expected a whole number after LIMIT, found "." at 22'],
    ['SELECT t.a FROM t', 'qualified names (table.column) are not supported, at 8: name the column alone'],
    [
      "SELECT a FROM t WHERE a = foo 'bar'",
      "expected a literal (number, 'text', TRUE, FALSE or TIMESTAMP '…'), found \"foo\" at 26",
    ],
    [
      'SELECT a FROM t WHERE a = TIMESTAMP 5',
      "expected a literal (number, 'text', TRUE, FALSE or TIMESTAMP '…'), found \"TIMESTAMP\" at 26",
    ],
    ['SELECT a FROM t WHERE 5 = a', 'expected a column, found "5" at 22'],
    [
      "SELECT a FROM t WHERE a '=' 5",
      'expected a comparison (=, !=, <, <=, >, >=, IN, BETWEEN, IS NULL), found "=" at 24',
    ],
    ['SELECT a FROM t WHERE a 5', 'expected a comparison (=, !=, <, <=, >, >=, IN, BETWEEN, IS NULL), found "5" at 24'],
    ['SELECT a FROM t WHERE a IN 1, 2', 'expected \'(\', found "1" at 27'],
    [
      'SELECT a FROM t WHERE a IN (1, )',
      "expected a literal (number, 'text', TRUE, FALSE or TIMESTAMP '…'), found \")\" at 31",
    ],
    ['SELECT a FROM t WHERE a IN (1 2)', 'expected \')\', found "2" at 30'],
    [
      'SELECT a FROM t WHERE a BETWEEN AND 5',
      "expected a literal (number, 'text', TRUE, FALSE or TIMESTAMP '…'), found \"AND\" at 32",
    ],
    ['SELECT a FROM t WHERE a BETWEEN 1 5', 'expected AND, found "5" at 34'],
    ["SELECT time_bucket '(' FROM t", 'expected FROM, found "(" at 19'],
    ["SELECT time_bucket('1 hour' ts) FROM t", 'expected \',\', found "ts" at 28'],
    ["SELECT time_bucket('1 hour', 5) FROM t", 'expected a column, found "5" at 29'],
    ["SELECT time_bucket('1 hour', ts AS b FROM t", 'expected \')\', found "AS" at 32'],
    ["SELECT time_bucket('1 hour', ts) AS b FROM t GROUP BY 'b'", 'expected a column, found "b" at 54'],
    ['SELECT a FROM t GROUP BY 5', 'expected a column, found "5" at 25'],
    ['SELECT a FROM t ORDER a', 'expected BY, found "a" at 22'],
    ['SELECT a FROM t ORDER BY 5', 'expected an output column to order by, found "5" at 25'],
    // Intervals: digits then a unit, spaces around either, nothing else.
    ["SELECT time_bucket('x5 minutes', ts) FROM t", 'interval "x5 minutes": write e.g. \'15 minutes\''],
    ["SELECT time_bucket('15 minutes past', ts) FROM t", 'interval "15 minutes past": write e.g. \'15 minutes\''],
    ["SELECT time_bucket('5 yards', ts) FROM t", 'interval unit "yards"'],
    ["SELECT time_bucket('1 month', ts) FROM t", 'interval "1 month": months and years have no fixed length'],
  ])('%j', (sql, detail) => {
    expect(parseSql(sql)).toEqual({ ok: false, error: { type: 'UnsupportedSql', detail } });
  });
});
