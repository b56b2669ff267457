import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { compareStamps, type Stamp } from '../../src/core/hlc.js';
import { applyChange, rowValues, type RowChange, type RowState } from '../../src/core/merge.js';
import type { ColumnValue } from '../../src/core/schema.js';

const node = (byte: number): Uint8Array => new Uint8Array(32).fill(byte);
const stamp = (ms: number, counter: number, nodeByte: number): Stamp => ({ ms, counter, node: node(nodeByte) });
const change = (row: string, cols: Record<string, ColumnValue>, s: Stamp): RowChange => ({
  table: 'device_profiles',
  row,
  cols,
  stamp: s,
});

type State = Map<string, RowState>;

function applyAll(changes: readonly RowChange[], state: State = new Map()): State {
  for (const c of changes) {
    const key = `${c.table}/${c.row}`;
    const merged = applyChange(state.get(key), c);
    if (merged) state.set(key, merged);
  }
  return state;
}

const sorted = (state: State): [string, RowState][] => [...state].sort(([a], [b]) => a.localeCompare(b));

/**
 * A set of changes with distinct stamps: one signer never stamps two events alike,
 * so equal stamps with different content cannot occur. Small ranges force ties
 * on ms and counter that only the node bytes break.
 */
const changeSet = fc
  .array(
    fc.record({
      row: fc.constantFrom('W', 'C', 'X'),
      cols: fc.dictionary(
        fc.constantFrom('name', 'location', 'schedule', 'notes'),
        fc.oneof(fc.string({ maxLength: 4 }), fc.constant(null)),
        { minKeys: 1, maxKeys: 3 },
      ),
      stamp: fc.record({
        ms: fc.integer({ min: 0, max: 3 }),
        counter: fc.integer({ min: 0, max: 2 }),
        node: fc.integer({ min: 1, max: 3 }).map(node),
      }),
    }),
    { maxLength: 30 },
  )
  .map((items) => {
    const seen = new Set<string>();
    return items
      .filter((i) => {
        const key = `${i.stamp.ms}/${i.stamp.counter}/${i.stamp.node[0]}`;
        if (seen.has(key)) return false;
        seen.add(key);
        return true;
      })
      .map((i) => change(i.row, i.cols, i.stamp));
  });

/** Any order of the set, each change possibly repeated. */
const permutationWithDuplicates = (changes: readonly RowChange[]) =>
  fc.array(fc.integer({ min: 0, max: 2 }), { minLength: changes.length, maxLength: changes.length }).chain((extra) => {
    const repeated = changes.flatMap((c, i) => Array.from({ length: 1 + extra[i]! }, () => c));
    return fc.shuffledSubarray(repeated, { minLength: repeated.length, maxLength: repeated.length });
  });

describe('per-column last-writer-wins', () => {
  it('any permutation of a set of changes, with duplicates, yields the same state', () => {
    fc.assert(
      fc.property(
        changeSet.chain((changes) => fc.tuple(fc.constant(changes), permutationWithDuplicates(changes))),
        ([changes, shuffled]) => {
          expect(sorted(applyAll(shuffled))).toEqual(sorted(applyAll(changes)));
        },
      ),
    );
  });

  it('is idempotent: re-applying any change to the merged state changes nothing', () => {
    fc.assert(
      fc.property(changeSet, (changes) => {
        const state = applyAll(changes);
        for (const c of changes) expect(applyChange(state.get(`${c.table}/${c.row}`), c)).toBeUndefined();
      }),
    );
  });

  it('is associative: merging two replicas that saw overlapping subsets equals one that saw all', () => {
    fc.assert(
      fc.property(
        changeSet.chain((changes) =>
          fc.tuple(
            fc.constant(changes),
            fc.array(fc.boolean(), { minLength: changes.length, maxLength: changes.length }),
          ),
        ),
        ([changes, split]) => {
          const left = changes.filter((_, i) => split[i]);
          const right = changes.filter((_, i) => !split[i] || i % 3 === 0);
          const merged = applyAll(right, applyAll(left));
          expect(sorted(merged)).toEqual(sorted(applyAll(changes)));
        },
      ),
    );
  });

  it('every cell holds the value of the highest stamp that wrote it', () => {
    fc.assert(
      fc.property(changeSet, (changes) => {
        const state = applyAll(changes);
        for (const [, row] of state) {
          for (const [column, cell] of Object.entries(row.cells)) {
            const writers = changes.filter((c) => c.row === row.row && column in c.cols);
            const best = writers.reduce((a, b) => (compareStamps(a.stamp, b.stamp) >= 0 ? a : b));
            expect(cell.value).toBe(best.cols[column]);
            expect(cell.stamp).toEqual(best.stamp);
          }
        }
      }),
    );
  });

  it('breaks a tie on ms and counter by the node bytes, whatever the order', () => {
    const low = change('W', { name: 'low' }, stamp(10, 0, 1));
    const high = change('W', { name: 'high' }, stamp(10, 0, 2));
    expect(rowValues(applyAll([low, high]).get('device_profiles/W')!)).toEqual({ name: 'high' });
    expect(rowValues(applyAll([high, low]).get('device_profiles/W')!)).toEqual({ name: 'high' });
  });

  it('keeps concurrent edits of different columns: W sets location, C sets schedule', () => {
    const created = change('pump-7', { name: 'Pump 7', location: 'shed', schedule: 'daily' }, stamp(100, 0, 1));
    const byW = change('pump-7', { location: 'north field' }, stamp(200, 0, 0x57));
    const byC = change('pump-7', { schedule: 'hourly' }, stamp(199, 3, 0x43));
    const expected = { name: 'Pump 7', location: 'north field', schedule: 'hourly' };
    expect(rowValues(applyAll([created, byW, byC]).get('device_profiles/pump-7')!)).toEqual(expected);
    expect(rowValues(applyAll([byC, byW, created]).get('device_profiles/pump-7')!)).toEqual(expected);
  });

  it('an older write wins no cell and reports no change', () => {
    const newer = change('W', { name: 'new', notes: 'x' }, stamp(5, 0, 1));
    const state = applyChange(undefined, newer)!;
    expect(applyChange(state, change('W', { name: 'old' }, stamp(4, 9, 9)))).toBeUndefined();
    const partly = applyChange(state, change('W', { name: 'old', location: 'here' }, stamp(4, 0, 1)))!;
    expect(rowValues(partly)).toEqual({ name: 'new', notes: 'x', location: 'here' });
  });
});
