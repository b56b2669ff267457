import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { refusalOf, rowKeyOf, rowSortKey, spellsRowKey } from '../../src/core/store.js';
import { runs } from '../helpers/runs.js';

describe('row keys', () => {
  it('spellsRowKey agrees with building the key, for any strings (1,000 runs)', () => {
    const part = fc.string({ maxLength: 6, unit: fc.constantFrom('a', 'b', '\u0000', 'é') });
    fc.assert(
      fc.property(part, part, part, part, (t1, r1, t2, r2) => {
        const key = rowKeyOf(t1, r1);
        expect(spellsRowKey(key, t1, r1)).toBe(true);
        expect(spellsRowKey(key, t2, r2)).toBe(key === rowKeyOf(t2, r2));
      }),
      { numRuns: runs(1000) },
    );
  });
});

describe('row keys, by example', () => {
  it('a key of another split is not spelt, even when both ends match', () => {
    // rowKeyOf('ab', 'c') = "ab\0c": it starts with "a" and ends with "\0c", at the right length.
    expect(spellsRowKey(rowKeyOf('ab', 'c'), 'a', '\u0000c')).toBe(false);
    // The separator where it belongs, the table before it and the row at the end, but more between.
    expect(spellsRowKey('a\u0000xb', 'a', 'b')).toBe(false);
    expect(spellsRowKey(rowKeyOf('ab', 'c'), 'ab', 'c')).toBe(true);
    expect(spellsRowKey(rowKeyOf('ab', 'c'), 'ab', 'cc')).toBe(false);
  });
});

describe('what the panels show', () => {
  it('lists a withheld record by its table and lane, or as sealed when refused unopened', () => {
    const withheld = { outerId: 'o', eventId: '', chain: '', seq: 0, reason: 'NotEligible', at: 5 } as const;
    expect(refusalOf({ ...withheld, table: '', lane: 'trusted' })).toEqual({
      outerId: 'o',
      reason: 'NotEligible',
      detail: 'sealed, refused by its lane (trusted lane)',
      at: 5,
    });
    expect(refusalOf({ ...withheld, table: 'notes', lane: 'public' }).detail).toBe('a row of notes (public lane)');
    expect(refusalOf({ outerId: 'o', reason: 'ChainBroken', detail: 'd', at: 7, peer: 'p' })).toEqual({
      outerId: 'o',
      reason: 'ChainBroken',
      detail: 'd',
      at: 7,
    });
  });

  it('sorts rows by name, case-insensitively, then by id; rows without a name first', () => {
    const row = (row: string, name?: unknown) =>
      ({
        table: 't',
        row,
        cells:
          name === undefined ? {} : { name: { value: name, stamp: { ms: 0, counter: 0, node: new Uint8Array(32) } } },
      }) as unknown as Parameters<typeof rowSortKey>[0];
    expect(rowSortKey(row('r1', 'Pump'))).toBe('pump\u0000r1');
    expect(rowSortKey(row('r2'))).toBe('\u0000r2');
    expect(rowSortKey(row('r3', 7))).toBe('\u0000r3');
    const keys = [row('b', 'beta'), row('a', 'Alpha'), row('c')].map(rowSortKey).sort();
    expect(keys).toEqual(['\u0000c', 'alpha\u0000a', 'beta\u0000b']);
  });
});
