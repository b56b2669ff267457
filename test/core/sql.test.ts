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
  ])('%j', (sql, detail) => {
    expect(parseSql(sql)).toEqual({ ok: false, error: { type: 'UnsupportedSql', detail } });
  });
});
