import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Stamp } from '../../src/core/hlc.js';
import { modelCompareStamps } from '../helpers/model-order.js';
import { encodeCbor } from '../../src/core/cbor.js';
import {
  applyChange,
  isAlive,
  overtakenCells,
  rowValues,
  type RowChange,
  type RowState,
} from '../../src/core/merge.js';
import type { ColumnValue } from '../../src/core/schema.js';

const node = (byte: number): Uint8Array => new Uint8Array(32).fill(byte);
const stamp = (ms: number, counter: number, nodeByte: number): Stamp => ({ ms, counter, node: node(nodeByte) });
type PutChange = Extract<RowChange, { op: 'put' }>;
type RemoveChange = Extract<RowChange, { op: 'remove' }>;
const change = (row: string, cols: Record<string, ColumnValue>, s: Stamp): PutChange => ({
  op: 'put',
  table: 'device_profiles',
  row,
  cols,
  stamp: s,
});

type State = Map<string, RowState>;

function applyAll(changes: readonly RowChange[], state: State = new Map()): State {
  for (const c of changes) {
    const key = `${c.table}/${c.row}`;
    state.set(key, applyChange(state.get(key), c));
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
const permutationWithDuplicates = <C>(changes: readonly C[]) =>
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
        for (const c of changes) {
          const current = state.get(`${c.table}/${c.row}`);
          expect(applyChange(current, c)).toBe(current);
        }
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
            const best = writers.reduce((a, b) => (modelCompareStamps(a.stamp, b.stamp) >= 0 ? a : b));
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
    const state = applyChange(undefined, newer);
    expect(applyChange(state, change('W', { name: 'old' }, stamp(4, 9, 9)))).toBe(state);
    const partly = applyChange(state, change('W', { name: 'old', location: 'here' }, stamp(4, 0, 1)));
    expect(rowValues(partly)).toEqual({ name: 'new', notes: 'x', location: 'here' });
  });
});

// ---- deletes, removals and ranked columns ----------------------------------------------

const del = (row: string, s: Stamp): RowChange => ({ op: 'del', table: 'device_profiles', row, stamp: s });
const removal = (row: string, hwm: number, s: Stamp, domainHwms?: Record<string, number>): RowChange => ({
  op: 'remove',
  table: 'keyring',
  row,
  hwm,
  trustedHwm: hwm + 1,
  ...(domainHwms ? { domainHwms } : {}),
  stamp: s,
});

/**
 * The created-domain marks the removals leave, by the rule written out again: a chain keeps
 * a mark only if every removal names it (one that does not name it counts as 0, fail closed),
 * and then the lowest.
 */
function modelDomainMarks(
  removals: readonly Extract<RowChange, { op: 'remove' }>[],
): Record<string, number> | undefined {
  if (removals.length === 0) return undefined;
  const named = removals.map((r) => r.domainHwms ?? {});
  const out: Record<string, number> = {};
  for (const chain of Object.keys(named[0]!)) {
    if (named.every((marks) => chain in marks)) out[chain] = Math.min(...named.map((marks) => marks[chain]!));
  }
  return Object.keys(out).length > 0 ? out : undefined;
}
const grant = (row: string, role: string, s: Stamp): RowChange => ({
  op: 'put',
  table: 'roles',
  row,
  cols: { role },
  stamp: s,
});

/** Canonical bytes of a whole state: what replicas compare. */
const bytesOf = (state: State): string => Buffer.from(encodeCbor(sorted(state).map(([, row]) => row))).toString('hex');

const stampArb = fc.record({
  ms: fc.integer({ min: 0, max: 3 }),
  counter: fc.integer({ min: 0, max: 2 }),
  node: fc.integer({ min: 1, max: 3 }).map(node),
});

/** Puts, deletes, keyring removals and role grants over a few rows; stamps distinct as in `changeSet`. */
const mixedSet = fc
  .array(
    fc.oneof(
      fc.record({
        kind: fc.constant('put' as const),
        row: fc.constantFrom('W', 'X'),
        stamp: stampArb,
        value: fc.string({ maxLength: 3 }),
      }),
      fc.record({ kind: fc.constant('del' as const), row: fc.constantFrom('W', 'X'), stamp: stampArb }),
      fc.record({
        kind: fc.constant('remove' as const),
        hwm: fc.integer({ min: 0, max: 5 }),
        stamp: stampArb,
        domains: fc.option(fc.dictionary(fc.constantFrom('a1', 'b2', 'c3'), fc.integer({ min: 0, max: 9 })), {
          nil: undefined,
        }),
      }),
      fc.record({ kind: fc.constant('grant' as const), role: fc.constantFrom('member', 'admin'), stamp: stampArb }),
    ),
    { maxLength: 25 },
  )
  .map((items) => {
    const seen = new Set<string>();
    const out: RowChange[] = [];
    for (const i of items) {
      const key = `${i.stamp.ms}/${i.stamp.counter}/${i.stamp.node[0]}`;
      if (seen.has(key)) continue;
      seen.add(key);
      if (i.kind === 'put') out.push(change(i.row, { name: i.value }, i.stamp));
      else if (i.kind === 'del') out.push(del(i.row, i.stamp));
      else if (i.kind === 'remove') out.push(removal('k', i.hwm, i.stamp, i.domains));
      else out.push(grant('k', i.role, i.stamp));
    }
    return out;
  });

describe('deletes and removals', () => {
  it('any order of puts, deletes, removals and grants, with duplicates, yields the same bytes', () => {
    fc.assert(
      fc.property(
        mixedSet.chain((changes) => fc.tuple(fc.constant(changes), permutationWithDuplicates(changes))),
        ([changes, shuffled]) => {
          expect(bytesOf(applyAll(shuffled))).toBe(bytesOf(applyAll(changes)));
        },
      ),
    );
  });

  it('the tombstone is the highest delete stamp; the lowest removal mark wins', () => {
    fc.assert(
      fc.property(mixedSet, (changes) => {
        const state = applyAll(changes);
        const dels = changes.filter((c) => c.op === 'del');
        for (const rowName of ['W', 'X']) {
          const mine = dels.filter((d) => d.row === rowName);
          const top = mine.reduce<Stamp | undefined>(
            (a, d) => (a && modelCompareStamps(a, d.stamp) >= 0 ? a : d.stamp),
            undefined,
          );
          expect(state.get(`device_profiles/${rowName}`)?.deleted).toEqual(top);
        }
        const removals = changes.filter((c) => c.op === 'remove');
        const marks = removals.map((c) => c.hwm);
        const removed = state.get('keyring/k')?.removed;
        const lowest = Math.min(...marks);
        const domains = modelDomainMarks(removals);
        expect(removed).toEqual(
          marks.length > 0 ? { hwm: lowest, trustedHwm: lowest + 1, ...(domains ? { domains } : {}) } : undefined,
        );
      }),
    );
  });

  it('concurrent removals with different created-domain marks keep the lower mark of each chain both name', () => {
    const first = removal('k', 4, stamp(1, 0, 1), { a1: 7, b2: 2, c3: 5 });
    const second = removal('k', 6, stamp(1, 0, 2), { a1: 3, b2: 9 });
    for (const order of [
      [first, second],
      [second, first],
    ]) {
      const removed = applyAll(order).get('keyring/k')?.removed;
      // a1: min(7, 3); b2: min(2, 9); c3 is named by one removal only: no mark (fail closed).
      expect(removed).toEqual({ hwm: 4, trustedHwm: 5, domains: { a1: 3, b2: 2 } });
    }
  });

  it('a row is alive iff never removed and not deleted, or some cell is newer than the newest delete', () => {
    fc.assert(
      fc.property(mixedSet, (changes) => {
        for (const [, row] of applyAll(changes)) {
          const newest = Object.values(row.cells)
            .map((c) => c.stamp)
            .some((s) => !row.deleted || modelCompareStamps(s, row.deleted) > 0);
          const expected = !row.removed && (!row.deleted || newest);
          expect(isAlive(row)).toBe(expected);
        }
      }),
    );
  });

  it('a delete hides the row; a later edit resurrects it with every cell written meanwhile', () => {
    const created = change('W', { name: 'pump', location: 'shed' }, stamp(1, 0, 1));
    const deleted = del('W', stamp(5, 0, 1));
    const whileDead = change('W', { notes: 'late but older' }, stamp(3, 0, 2));
    let row = applyAll([created, deleted, whileDead]).get('device_profiles/W')!;
    expect(isAlive(row)).toBe(false);
    expect(rowValues(row)).toEqual({ name: 'pump', location: 'shed', notes: 'late but older' });
    row = applyChange(row, change('W', { schedule: 'hourly' }, stamp(6, 0, 2)));
    expect(isAlive(row)).toBe(true);
    expect(rowValues(row)).toEqual({ name: 'pump', location: 'shed', notes: 'late but older', schedule: 'hourly' });
    // An older delete arriving late changes nothing; a newer one tombstones again.
    expect(applyChange(row, del('W', stamp(4, 0, 3)))).toBe(row);
    expect(isAlive(applyChange(row, del('W', stamp(6, 0, 3))))).toBe(false);
  });

  it('a delete stamp equal to the newest cell stamp keeps the row dead (only a strictly newer edit resurrects)', () => {
    const s = stamp(7, 1, 4);
    expect(isAlive(applyAll([change('W', { name: 'x' }, s), del('W', s)]).get('device_profiles/W')!)).toBe(false);
  });

  it('a removal is permanent: no later edit revives the row, and a higher mark changes nothing', () => {
    let row = applyChange(undefined, {
      op: 'put',
      table: 'keyring',
      row: 'k',
      cols: { name: 'M' },
      stamp: stamp(1, 0, 1),
    });
    row = applyChange(row, removal('k', 3, stamp(2, 0, 1)));
    expect(isAlive(row)).toBe(false);
    row = applyChange(row, { op: 'put', table: 'keyring', row: 'k', cols: { name: 'back' }, stamp: stamp(9, 0, 1) });
    expect(isAlive(row)).toBe(false);
    expect(applyChange(row, removal('k', 5, stamp(10, 0, 1)))).toBe(row);
    expect(applyChange(row, removal('k', 1, stamp(0, 0, 1))).removed).toEqual({ hwm: 1, trustedHwm: 2 });
  });

  it('a change that alters nothing returns the row itself (callers detect changes by identity)', () => {
    const removed = applyChange(undefined, removal('k', 3, stamp(2, 0, 1), { a1: 4 }));
    // The very same marks again: nothing changes.
    expect(applyChange(removed, removal('k', 3, stamp(3, 0, 1), { a1: 4 }))).toBe(removed);
    // A lower public or trusted mark, or a lower chain mark, is a change.
    expect(applyChange(removed, removal('k', 2, stamp(3, 0, 1), { a1: 4 })).removed?.hwm).toBe(2);
    // A lower public mark alone (the same trusted mark and chain marks) is a change too.
    expect(
      applyChange(removed, { ...(removal('k', 2, stamp(3, 0, 1), { a1: 4 }) as RemoveChange), trustedHwm: 4 }).removed,
    ).toEqual({ hwm: 2, trustedHwm: 4, domains: { a1: 4 } });
    expect(
      applyChange(removed, { ...(removal('k', 3, stamp(3, 0, 1), { a1: 4 }) as RemoveChange), trustedHwm: 1 }).removed,
    ).toEqual({
      hwm: 3,
      trustedHwm: 1,
      domains: { a1: 4 },
    });
    expect(applyChange(removed, removal('k', 3, stamp(3, 0, 1), { a1: 1 })).removed?.domains).toEqual({ a1: 1 });

    const deleted = applyChange(undefined, del('W', stamp(5, 0, 1)));
    expect(applyChange(deleted, del('W', stamp(5, 0, 1)))).toBe(deleted);
    expect(applyChange(deleted, del('W', stamp(4, 0, 1)))).toBe(deleted);
    expect(applyChange(deleted, del('W', stamp(5, 0, 2))).deleted).toEqual(stamp(5, 0, 2));

    // A put that writes no cell into no row still gives a row.
    expect(applyChange(undefined, change('W', {}, stamp(1, 0, 1)))).toEqual({
      table: 'device_profiles',
      row: 'W',
      cells: {},
    });
  });

  it('roles only grow: admin beats member whatever the stamps', () => {
    const admin = grant('k', 'admin', stamp(1, 0, 1));
    const member = grant('k', 'member', stamp(9, 0, 1));
    for (const order of [
      [admin, member],
      [member, admin],
    ]) {
      expect(rowValues(applyAll(order).get('roles/k')!)).toEqual({ role: 'admin' });
    }
    // Between equal ranks the stamp decides, as for any column.
    const later = grant('k', 'admin', stamp(2, 0, 1));
    expect(applyAll([later, admin]).get('roles/k')!.cells['role']!.stamp).toEqual(later.stamp);
  });
});

describe('overtaken cells', () => {
  const self = node(1);
  const selfHex = Array.from(self, (b) => b.toString(16).padStart(2, '0')).join('');
  const put = (cols: Record<string, ColumnValue>, at: Stamp): RowChange => ({
    op: 'put',
    table: 'device_profiles',
    row: 'r',
    cols,
    stamp: at,
  });

  it('names each of this machine’s cells another machine’s later put replaced, and no other', () => {
    const before = applyChange(
      applyChange(undefined, put({ location: 'yard', name: 'Pump' }, stamp(10, 0, 1))),
      put({ notes: 'theirs before' }, stamp(11, 0, 2)),
    );
    const after = applyChange(
      before,
      put({ location: 'roof', notes: 'theirs again', schedule: 'daily' }, stamp(20, 0, 2)),
    );
    expect(overtakenCells(before, after, selfHex, 'two')).toEqual([
      {
        table: 'device_profiles',
        row: 'r',
        column: 'location',
        mine: 'yard',
        mineMs: 10,
        theirs: 'roof',
        theirsMs: 20,
        by: 'two',
      },
    ]);
  });

  it('is empty when the put lost, changed nothing, or found no row', () => {
    const before = applyChange(undefined, put({ location: 'yard' }, stamp(30, 0, 1)));
    const older = applyChange(before, put({ location: 'roof' }, stamp(20, 0, 2)));
    expect(older).toBe(before);
    expect(overtakenCells(before, older, selfHex, 'two')).toEqual([]);
    const fresh = applyChange(undefined, put({ location: 'roof' }, stamp(20, 0, 2)));
    expect(overtakenCells(undefined, fresh, selfHex, 'two')).toEqual([]);
  });
});
