/**
 * The SQL subset people type, compiled to a typed Query (query.ts):
 *
 *   SELECT item, … FROM table
 *     [WHERE cond AND cond …]
 *     [GROUP BY expr, …] [ORDER BY name [ASC|DESC], …] [LIMIT n] [;]
 *
 *   item  := expr [AS name] | count(*) | count|sum|min|max|avg(column) [AS name]
 *   expr  := column | time_bucket(INTERVAL '15 minutes', column)      (UTC, from the epoch)
 *   cond  := column (= | != | <> | < | <= | > | >=) literal
 *          | column [NOT] IN (literal, …) | column BETWEEN literal AND literal
 *          | column IS [NOT] NULL
 *   literal := number | 'text' | TRUE | FALSE | TIMESTAMP '2026-12-01T00:00:00Z'
 *
 * Anything else (OR, joins, subqueries, `*`, DISTINCT, HAVING, other functions, month
 * or year buckets) is refused by name with `UnsupportedSql`, never guessed at.
 */
import { err, ok, type Result } from '../result.js';
import type { AggregateFn, CompareOp, Expr, Filter, Literal, Query, QueryError, SelectItem } from './query.js';

type Token =
  | { readonly t: 'word'; readonly v: string; readonly at: number }
  | { readonly t: 'ident'; readonly v: string; readonly at: number }
  | { readonly t: 'number'; readonly v: number; readonly at: number }
  | { readonly t: 'string'; readonly v: string; readonly at: number }
  | { readonly t: 'op'; readonly v: string; readonly at: number }
  | { readonly t: 'end'; readonly at: number };

const unsupported = (detail: string): Result<never, QueryError> => err({ type: 'UnsupportedSql', detail });

function tokenize(sql: string): Result<Token[], QueryError> {
  const out: Token[] = [];
  let i = 0;
  while (i < sql.length) {
    const c = sql[i]!;
    if (/\s/.test(c)) {
      i++;
    } else if (c === '-' && sql[i + 1] === '-') {
      while (i < sql.length && sql[i] !== '\n') i++;
    } else if (/[A-Za-z_]/.test(c)) {
      const m = /^[A-Za-z_][A-Za-z0-9_]*/.exec(sql.slice(i))![0];
      out.push({ t: 'word', v: m, at: i });
      i += m.length;
    } else if (c === '"') {
      const end = sql.indexOf('"', i + 1);
      if (end < 0) return unsupported(`unterminated quoted name at ${i}`);
      out.push({ t: 'ident', v: sql.slice(i + 1, end), at: i });
      i = end + 1;
    } else if (/[0-9]/.test(c) || /^-?\.?[0-9]/.test(sql.slice(i, i + 3))) {
      const m = /^-?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?/.exec(sql.slice(i));
      if (!m) return unsupported(`bad number at ${i}`);
      out.push({ t: 'number', v: Number(m[0]), at: i });
      i += m[0].length;
    } else if (c === "'") {
      let text = '';
      let j = i + 1;
      for (;;) {
        if (j >= sql.length) return unsupported(`unterminated string at ${i}`);
        if (sql[j] === "'") {
          if (sql[j + 1] === "'") {
            text += "'";
            j += 2;
            continue;
          }
          break;
        }
        text += sql.charAt(j++);
      }
      out.push({ t: 'string', v: text, at: i });
      i = j + 1;
    } else {
      const m = /^(<=|>=|<>|!=|[=<>(),*;.])/.exec(sql.slice(i));
      if (!m) return unsupported(`unexpected character ${JSON.stringify(c)} at ${i}`);
      out.push({ t: 'op', v: m[0], at: i });
      i += m[0].length;
    }
  }
  out.push({ t: 'end', at: sql.length });
  return ok(out);
}

const UNIT_MS: Readonly<Record<string, number>> = {
  millisecond: 1,
  milliseconds: 1,
  ms: 1,
  second: 1000,
  seconds: 1000,
  s: 1000,
  minute: 60_000,
  minutes: 60_000,
  min: 60_000,
  hour: 3_600_000,
  hours: 3_600_000,
  h: 3_600_000,
  day: 86_400_000,
  days: 86_400_000,
  d: 86_400_000,
  week: 604_800_000,
  weeks: 604_800_000,
};

/** '15 minutes' → 900000; months and years have no fixed length and are refused. */
export function intervalMs(text: string): Result<number, QueryError> {
  const m = /^\s*(\d+)\s*([A-Za-z]+)\s*$/.exec(text);
  const unit = m?.[2]?.toLowerCase();
  if (!m || unit === undefined) return unsupported(`interval ${JSON.stringify(text)}: write e.g. '15 minutes'`);
  if (/^(month|months|year|years|mon|y)$/.test(unit)) {
    return unsupported(`interval ${JSON.stringify(text)}: months and years have no fixed length`);
  }
  const ms = UNIT_MS[unit];
  if (ms === undefined) return unsupported(`interval unit ${JSON.stringify(m[2])}`);
  const width = Number(m[1]) * ms;
  return width > 0 && Number.isSafeInteger(width) ? ok(width) : unsupported(`interval ${JSON.stringify(text)}`);
}

const AGGREGATES: ReadonlySet<string> = new Set(['count', 'sum', 'min', 'max', 'avg']);
const REFUSED: Readonly<Record<string, string>> = {
  or: 'OR (only conditions joined by AND)',
  join: 'JOIN (one table per query)',
  union: 'UNION',
  having: 'HAVING',
  distinct: 'DISTINCT',
  with: 'WITH',
  offset: 'OFFSET',
  like: 'LIKE',
};

class Parser {
  readonly #tokens: Token[];
  #i = 0;

  constructor(tokens: Token[]) {
    this.#tokens = tokens;
  }

  get #peek(): Token {
    return this.#tokens[this.#i]!;
  }

  #next(): Token {
    return this.#tokens[this.#i++]!;
  }

  #isWord(word: string, token: Token = this.#peek): boolean {
    return token.t === 'word' && token.v.toLowerCase() === word;
  }

  #isOp(op: string): boolean {
    return this.#peek.t === 'op' && this.#peek.v === op;
  }

  #describe(token: Token): string {
    return token.t === 'end' ? 'the end of the query' : `${JSON.stringify(String(token.v))} at ${token.at}`;
  }

  #fail(expected: string): Result<never, QueryError> {
    const token = this.#peek;
    // What stops the parse is often the first word of a construct we refuse (LEFT JOIN, a
    // qualified name before JOIN): name the construct rather than the token.
    for (const t of this.#tokens.slice(this.#i)) {
      const construct = t.t === 'word' ? REFUSED[t.v.toLowerCase()] : undefined;
      if (construct) return unsupported(`${construct} is not supported`);
    }
    if (token.t === 'op' && token.v === '.') {
      return unsupported(`qualified names (table.column) are not supported, at ${token.at}: name the column alone`);
    }
    if (token.t === 'word' && token.v.toLowerCase() === 'select') return unsupported('subqueries are not supported');
    return unsupported(`expected ${expected}, found ${this.#describe(token)}`);
  }

  #expectWord(word: string): Result<void, QueryError> {
    if (!this.#isWord(word)) return this.#fail(word.toUpperCase());
    this.#i++;
    return ok(undefined);
  }

  #expectOp(op: string): Result<void, QueryError> {
    if (!this.#isOp(op)) return this.#fail(`'${op}'`);
    this.#i++;
    return ok(undefined);
  }

  #name(what: string): Result<string, QueryError> {
    const token = this.#peek;
    if (token.t === 'ident' || (token.t === 'word' && !KEYWORDS.has(token.v.toLowerCase()))) {
      this.#i++;
      return ok(token.v);
    }
    return this.#fail(what);
  }

  #literal(): Result<Literal, QueryError> {
    const token = this.#next();
    if (token.t === 'number' || token.t === 'string') return ok(token.v);
    if (token.t === 'word') {
      const w = token.v.toLowerCase();
      if (w === 'true') return ok(true);
      if (w === 'false') return ok(false);
      if (w === 'null') return ok(null);
      if (w === 'timestamp' && this.#peek.t === 'string') return ok((this.#next() as { v: string }).v);
    }
    this.#i--;
    return this.#fail("a literal (number, 'text', TRUE, FALSE or TIMESTAMP '…')");
  }

  /** column | time_bucket(INTERVAL '…', column) */
  #expr(): Result<Expr, QueryError> {
    const after = this.#tokens[this.#i + 1];
    if (this.#isWord('time_bucket') && after?.t === 'op' && after.v === '(') {
      this.#i++;
      const open = this.#expectOp('(');
      if (!open.ok) return open;
      if (this.#isWord('interval')) this.#i++;
      const width = this.#next();
      if (width.t !== 'string') {
        this.#i--;
        return this.#fail("an interval such as '1 hour'");
      }
      const ms = intervalMs(width.v);
      if (!ms.ok) return ms;
      const comma = this.#expectOp(',');
      if (!comma.ok) return comma;
      const column = this.#name('a column');
      if (!column.ok) return column;
      if (this.#isOp(',')) return unsupported('time_bucket takes no origin: buckets are aligned to the epoch (UTC)');
      const close = this.#expectOp(')');
      if (!close.ok) return close;
      return ok({ kind: 'bucket', column: column.value, widthMs: ms.value });
    }
    const token = this.#peek;
    if (
      token.t === 'word' &&
      this.#tokens[this.#i + 1]?.t === 'op' &&
      (this.#tokens[this.#i + 1] as { v: string }).v === '('
    ) {
      return unsupported(`function ${token.v}() is not supported`);
    }
    const column = this.#name('a column');
    return column.ok ? ok({ kind: 'column', column: column.value }) : column;
  }

  #alias(fallback: string): Result<string, QueryError> {
    if (!this.#isWord('as')) return ok(fallback);
    this.#i++;
    return this.#name('a name after AS');
  }

  #selectItem(): Result<SelectItem, QueryError> {
    const token = this.#peek;
    if (this.#isOp('*')) return unsupported('SELECT * is not supported: name the columns');
    const next = this.#tokens[this.#i + 1];
    if (token.t === 'word' && AGGREGATES.has(token.v.toLowerCase()) && next?.t === 'op' && next.v === '(') {
      const fn = token.v.toLowerCase() as AggregateFn;
      this.#i++;
      const open = this.#expectOp('(');
      if (!open.ok) return open;
      if (this.#isWord('distinct')) return unsupported(`${fn}(DISTINCT …) is not supported`);
      let column: string;
      if (this.#isOp('*')) {
        this.#i++;
        column = '*';
      } else {
        const name = this.#name('a column or *');
        if (!name.ok) return name;
        column = name.value;
      }
      const close = this.#expectOp(')');
      if (!close.ok) return close;
      const as = this.#alias(`${fn}(${column})`);
      return as.ok ? ok({ kind: 'agg', fn, column, as: as.value }) : as;
    }
    const expr = this.#expr();
    if (!expr.ok) return expr;
    const as = this.#alias(expr.value.kind === 'column' ? expr.value.column : 'time_bucket');
    return as.ok ? ok({ kind: 'expr', expr: expr.value, as: as.value }) : as;
  }

  #condition(): Result<Filter, QueryError> {
    if (this.#isOp('(')) return unsupported('parenthesised conditions are not supported');
    const column = this.#name('a column');
    if (!column.ok) return column;
    const c = column.value;
    if (this.#isWord('is')) {
      this.#i++;
      const not = this.#isWord('not');
      if (not) this.#i++;
      const nul = this.#expectWord('null');
      return nul.ok ? ok({ column: c, op: not ? 'is not null' : 'is null' }) : nul;
    }
    if (this.#isWord('not')) {
      this.#i++;
      if (!this.#isWord('in')) return unsupported('NOT is supported only in NOT IN and IS NOT NULL');
      return unsupported('NOT IN is not supported');
    }
    if (this.#isWord('in')) {
      this.#i++;
      const open = this.#expectOp('(');
      if (!open.ok) return open;
      const values: Literal[] = [];
      for (;;) {
        const v = this.#literal();
        if (!v.ok) return v;
        values.push(v.value);
        if (this.#isOp(',')) {
          this.#i++;
          continue;
        }
        const close = this.#expectOp(')');
        if (!close.ok) return close;
        return ok({ column: c, op: 'in', values });
      }
    }
    if (this.#isWord('between')) {
      this.#i++;
      const low = this.#literal();
      if (!low.ok) return low;
      const and = this.#expectWord('and');
      if (!and.ok) return and;
      const high = this.#literal();
      return high.ok ? ok({ column: c, op: 'between', low: low.value, high: high.value }) : high;
    }
    const op = this.#next();
    if (op.t !== 'op' || !['=', '!=', '<>', '<', '<=', '>', '>='].includes(op.v)) {
      this.#i--;
      return this.#fail('a comparison (=, !=, <, <=, >, >=, IN, BETWEEN, IS NULL)');
    }
    const value = this.#literal();
    if (!value.ok) return value;
    return ok({ column: c, op: (op.v === '<>' ? '!=' : op.v) as CompareOp, value: value.value });
  }

  parse(): Result<Query, QueryError> {
    const select = this.#expectWord('select');
    if (!select.ok) return select;
    if (this.#isWord('distinct')) return unsupported('DISTINCT is not supported');
    const items: SelectItem[] = [];
    for (;;) {
      const item = this.#selectItem();
      if (!item.ok) return item;
      items.push(item.value);
      if (!this.#isOp(',')) break;
      this.#i++;
    }
    const from = this.#expectWord('from');
    if (!from.ok) return from;
    if (this.#isOp('(')) return unsupported('subqueries are not supported');
    const table = this.#name('a table');
    if (!table.ok) return table;
    if (this.#isOp(',')) return unsupported('one table per query (no joins)');
    const where: Filter[] = [];
    if (this.#isWord('where')) {
      this.#i++;
      for (;;) {
        const cond = this.#condition();
        if (!cond.ok) return cond;
        where.push(cond.value);
        if (!this.#isWord('and')) break;
        this.#i++;
      }
    }
    const groupBy: Expr[] = [];
    if (this.#isWord('group')) {
      this.#i++;
      const by = this.#expectWord('by');
      if (!by.ok) return by;
      for (;;) {
        // A GROUP BY may name an output alias of a bucket.
        const token = this.#peek;
        const alias =
          (token.t === 'word' || token.t === 'ident') && !this.#isWord('time_bucket')
            ? items.find((s) => s.kind === 'expr' && s.as === token.v && s.expr.kind === 'bucket')
            : undefined;
        if (alias && alias.kind === 'expr') {
          this.#i++;
          groupBy.push(alias.expr);
        } else {
          const e = this.#expr();
          if (!e.ok) return e;
          groupBy.push(e.value);
        }
        if (!this.#isOp(',')) break;
        this.#i++;
      }
    }
    const orderBy: { name: string; desc: boolean }[] = [];
    if (this.#isWord('order')) {
      this.#i++;
      const by = this.#expectWord('by');
      if (!by.ok) return by;
      for (;;) {
        const name = this.#name('an output column to order by');
        if (!name.ok) return name;
        let desc = false;
        if (this.#isWord('desc')) {
          desc = true;
          this.#i++;
        } else if (this.#isWord('asc')) this.#i++;
        orderBy.push({ name: name.value, desc });
        if (!this.#isOp(',')) break;
        this.#i++;
      }
    }
    let limit: number | undefined;
    if (this.#isWord('limit')) {
      this.#i++;
      const n = this.#next();
      if (n.t !== 'number' || !Number.isSafeInteger(n.v) || n.v < 0) {
        this.#i--;
        return this.#fail('a whole number after LIMIT');
      }
      limit = n.v;
    }
    if (this.#isOp(';')) this.#i++;
    if (this.#peek.t !== 'end') return this.#fail('the end of the query');
    return ok({
      table: table.value,
      select: items,
      where,
      groupBy,
      orderBy,
      ...(limit !== undefined ? { limit } : {}),
    });
  }
}

const KEYWORDS: ReadonlySet<string> = new Set([
  'select',
  'from',
  'where',
  'and',
  'or',
  'group',
  'by',
  'order',
  'limit',
  'as',
  'asc',
  'desc',
  'in',
  'is',
  'not',
  'null',
  'between',
  'true',
  'false',
  'join',
  'union',
  'having',
  'distinct',
  'with',
  'offset',
  'like',
]);

/** Compiles the SQL subset to a query; every refusal says what is not supported. */
export function parseSql(sql: string): Result<Query, QueryError> {
  const tokens = tokenize(sql);
  return tokens.ok ? new Parser(tokens.value).parse() : tokens;
}
