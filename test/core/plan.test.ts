/**
 * Pruning on the catalog (core/query/plan.ts `mayMatch`, `compareBound`) against an oracle of
 * its own: for a range of whole numbers, an object "may match" exactly when some value in
 * [min, max] satisfies the filter — computed here by trying every value, not by the planner's
 * comparisons — and never when the range holds only nulls. Bound order is checked by hand:
 * strings by code point (as Parquet and DuckDB order them, not UTF-16 units), false before true.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { compareBound, mayMatch, type Range } from '../../src/core/query/plan.js';
import type { Bound, CompareOp, Filter } from '../../src/core/query/query.js';
import { runs } from '../helpers/runs.js';

const OPS: readonly CompareOp[] = ['=', '!=', '<', '<=', '>', '>='];

function holds(op: CompareOp, x: number, v: number): boolean {
  switch (op) {
    case '=':
      return x === v;
    case '!=':
      return x !== v;
    case '<':
      return x < v;
    case '<=':
      return x <= v;
    case '>':
      return x > v;
    case '>=':
      return x >= v;
  }
}

/** Whether some whole number in [min, max] satisfies the filter: every one is tried. */
function oracle(filter: Filter<number>, min: number, max: number): boolean {
  const values = Array.from({ length: max - min + 1 }, (_, i) => min + i);
  switch (filter.op) {
    case 'in':
      return values.some((x) => filter.values.includes(x));
    case 'between':
      return values.some((x) => x >= filter.low && x <= filter.high);
    case 'is null':
    case 'is not null':
      throw new Error('not a comparison');
    default:
      return values.some((x) => holds(filter.op, x, filter.value));
  }
}

const small = fc.integer({ min: -6, max: 6 });
const filter: fc.Arbitrary<Filter<number>> = fc.oneof(
  fc.record({ column: fc.constant('c'), op: fc.constantFrom(...OPS), value: small }),
  fc.record({ column: fc.constant('c'), op: fc.constant('in' as const), values: fc.array(small, { maxLength: 4 }) }),
  fc.record({ column: fc.constant('c'), op: fc.constant('between' as const), low: small, high: small }),
);

describe('mayMatch', () => {
  it('is true exactly when some value in the range satisfies the filter (property)', () => {
    fc.assert(
      fc.property(filter, small, small, fc.nat({ max: 3 }), (f, a, b, nulls) => {
        const [min, max] = a <= b ? [a, b] : [b, a];
        const range: Range = { min, max, nulls, rows: nulls + 5 };
        expect(mayMatch(f, range)).toBe(oracle(f, min, max));
      }),
      { numRuns: runs(2000) },
    );
  });

  it('never matches a comparison on a range of only nulls, and answers null tests by the counts', () => {
    const onlyNulls: Range = { min: undefined, max: undefined, nulls: 4, rows: 4 };
    for (const op of OPS) expect(mayMatch({ column: 'c', op, value: 1 }, onlyNulls), op).toBe(false);
    expect(mayMatch({ column: 'c', op: 'in', values: [1] }, onlyNulls)).toBe(false);
    expect(mayMatch({ column: 'c', op: 'is null' }, onlyNulls)).toBe(true);
    expect(mayMatch({ column: 'c', op: 'is not null' }, onlyNulls)).toBe(false);
    const noNulls: Range = { min: 1, max: 3, nulls: 0, rows: 4 };
    expect(mayMatch({ column: 'c', op: 'is null' }, noNulls)).toBe(false);
    expect(mayMatch({ column: 'c', op: 'is not null' }, noNulls)).toBe(true);
    expect(mayMatch({ column: 'c', op: 'is not null' }, { ...noNulls, nulls: 3 })).toBe(true);
  });

  it('cannot prune without both bounds', () => {
    for (const range of [
      { min: undefined, max: 3, nulls: 0, rows: 2 },
      { min: 1, max: undefined, nulls: 0, rows: 2 },
    ]) {
      for (const op of OPS) expect(mayMatch({ column: 'c', op, value: 99 }, range), op).toBe(true);
    }
  });

  it('compares strings and bigints in their own order at the bounds', () => {
    const names: Range = { min: 'b', max: 'd', nulls: 0, rows: 3 };
    expect(mayMatch({ column: 'c', op: '=', value: 'a' }, names)).toBe(false);
    expect(mayMatch({ column: 'c', op: '=', value: 'd' }, names)).toBe(true);
    expect(mayMatch({ column: 'c', op: '>', value: 'd' }, names)).toBe(false);
    expect(mayMatch({ column: 'c', op: '<', value: 'b' }, names)).toBe(false);
    const wide: Range = { min: 2n ** 62n, max: 2n ** 62n + 2n, nulls: 0, rows: 3 };
    expect(mayMatch({ column: 'c', op: '>=', value: 2n ** 62n + 3n }, wide)).toBe(false);
    expect(mayMatch({ column: 'c', op: '!=', value: 2n ** 62n }, { ...wide, max: 2n ** 62n })).toBe(false);
  });
});

describe('compareBound', () => {
  it.each<[Bound, Bound, number]>([
    ['a', 'b', -1],
    ['b', 'a', 1],
    ['Z', 'a', -1],
    // U+FFFF sorts before U+1F600 by code point, after its surrogates by UTF-16 unit.
    ['\uffff', '😀', -1],
    ['😀', '\uffff', 1],
    ['x', 'x', 0],
    [false, true, -1],
    [true, false, 1],
    [true, true, 0],
    [1, 2, -1],
    [2, 1, 1],
    [2n, 2n, 0],
    [-1n, 1n, -1],
  ])('%s against %s: %i', (a, b, sign) => {
    expect(Math.sign(compareBound(a, b))).toBe(sign);
  });
});
