import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { rowKeyOf, spellsRowKey } from '../../src/core/store.js';
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
