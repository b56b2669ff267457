/**
 * Entitlement-aware rewrap as a property (issue 24): over random sequences of adds (full,
 * forward-only, fresh), removals, rotations, publications and rewraps, no machine — member
 * or removed — can ever open an object it is not entitled to, and every member can open
 * every object it is entitled to. The rules under test are the product's
 * (core/mls/entitlement.ts `mintsOnAdd`, `entitledTo`; core/object/rewrap.ts `planRewrap`);
 * the model hands out generations as core/mls/domain.ts does (test/mls/rotation.test.ts
 * holds the real MLS groups to the same distribution).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { entitledTo, mintsOnAdd, type Entitlement, type History } from '../../src/core/mls/entitlement.js';
import { planRewrap } from '../../src/core/object/rewrap.js';

type Op =
  | { readonly t: 'add'; readonly history: History }
  | { readonly t: 'remove'; readonly pick: number }
  | { readonly t: 'rotate' }
  | { readonly t: 'publish' }
  | { readonly t: 'rewrap'; readonly pick: number };

type Machine = { readonly id: string; readonly holds: Set<number>; member: boolean; leftAt?: number };
type Obj = { readonly id: string; readonly records: Set<number>; readonly origin: number; readonly at: number };

class Domain {
  gen = 1;
  step = 0;
  readonly machines: Machine[] = [{ id: 'm0', holds: new Set([1]), member: true }];
  readonly table = new Map<string, Entitlement>([['m0', { machine: 'm0', history: 'full', fromGen: 1 }]]);
  readonly historyGens = new Set<number>();
  readonly objects: Obj[] = [];

  members(): Machine[] {
    return this.machines.filter((m) => m.member);
  }

  #mint(carriesHistory: boolean): void {
    this.gen++;
    if (carriesHistory) this.historyGens.add(this.gen);
    for (const m of this.members()) m.holds.add(this.gen);
  }

  apply(op: Op): void {
    this.step++;
    switch (op.t) {
      case 'add': {
        if (mintsOnAdd(op.history, this.gen, this.historyGens)) this.#mint(false);
        const id = `m${this.machines.length}`;
        const holds =
          op.history === 'full' ? new Set(Array.from({ length: this.gen }, (_, i) => i + 1)) : new Set([this.gen]);
        this.machines.push({ id, holds, member: true });
        this.table.set(id, { machine: id, history: op.history, fromGen: op.history === 'full' ? 1 : this.gen });
        return;
      }
      case 'remove': {
        const members = this.members();
        if (members.length < 2) return;
        const gone = members[op.pick % members.length]!;
        gone.member = false;
        gone.leftAt = this.step;
        this.table.delete(gone.id);
        this.#mint(true);
        return;
      }
      case 'rotate':
        this.#mint(true);
        return;
      case 'publish':
        this.objects.push({
          id: `o${this.objects.length}`,
          records: new Set([this.gen]),
          origin: this.gen,
          at: this.step,
        });
        return;
      case 'rewrap': {
        const members = this.members().map((m) => m.id);
        const plan = planRewrap(
          this.objects.map((o) => ({ id: o.id, gens: [...o.records] })),
          { gen: this.gen, carriesHistory: this.historyGens.has(this.gen) },
          members,
          this.table,
        );
        for (const id of plan.rewrap) this.objects.find((o) => o.id === id)!.records.add(this.gen);
        return;
      }
    }
  }
}

const ops: fc.Arbitrary<Op> = fc.oneof(
  fc.constantFrom<History>('full', 'forward', 'fresh').map((history) => ({ t: 'add' as const, history })),
  fc.nat(16).map((pick) => ({ t: 'remove' as const, pick })),
  fc.constant({ t: 'rotate' as const }),
  fc.constant({ t: 'publish' as const }),
  fc.constant({ t: 'publish' as const }),
  fc.nat(16).map((pick) => ({ t: 'rewrap' as const, pick })),
  fc.nat(16).map((pick) => ({ t: 'rewrap' as const, pick })),
);

const opens = (m: Machine, o: Obj) => [...o.records].some((g) => m.holds.has(g));

describe('entitlement-aware rewrap', () => {
  it('never lets a machine open an object older than its entitlement, and lets every member open what it is entitled to', () => {
    fc.assert(
      fc.property(fc.array(ops, { minLength: 1, maxLength: 60 }), (script) => {
        const domain = new Domain();
        const entitlementAtJoin = new Map<string, Entitlement>();
        for (const op of script) {
          domain.apply(op);
          for (const [id, e] of domain.table) if (!entitlementAtJoin.has(id)) entitlementAtJoin.set(id, e);
          for (const m of domain.machines) {
            const entitlement = entitlementAtJoin.get(m.id)!;
            for (const o of domain.objects) {
              const entitled = entitledTo(entitlement, o.origin);
              // Safety: opening implies entitlement, for members and removed machines alike.
              if (opens(m, o)) expect(entitled, `${m.id} opens ${o.id}`).toBe(true);
              // A removed machine opens nothing published after it left.
              if (m.leftAt !== undefined && o.at > m.leftAt) expect(opens(m, o), `${m.id} opens ${o.id}`).toBe(false);
              // Liveness: a member opens every object it is entitled to.
              if (m.member && entitled) expect(opens(m, o), `${m.id} cannot open ${o.id}`).toBe(true);
            }
          }
        }
      }),
      { numRuns: 1000, seed: 24 },
    );
  });

  it('rewraps only what every holder may read, and counts what it leaves under older generations', () => {
    const table = new Map<string, Entitlement>([
      ['a', { machine: 'a', history: 'full', fromGen: 1 }],
      ['b', { machine: 'b', history: 'forward', fromGen: 3 }],
    ]);
    const candidates = [
      { id: 'old', gens: [1] },
      { id: 'at3', gens: [3] },
      { id: 'done', gens: [2, 4] },
      { id: 'none', gens: [] },
    ];
    expect(planRewrap(candidates, { gen: 4, carriesHistory: true }, ['a', 'b'], table)).toEqual({
      rewrap: ['at3'],
      done: 1,
      withheld: 1,
    });
    // A member whose entitlement is unknown here: nothing older is rewrapped (fail closed).
    expect(planRewrap(candidates, { gen: 4, carriesHistory: true }, ['a', 'c'], table)).toEqual({
      rewrap: [],
      done: 1,
      withheld: 2,
    });
    // A generation minted for a fresh joiner carries no history.
    expect(planRewrap(candidates, { gen: 4, carriesHistory: false }, ['a'], table).rewrap).toEqual([]);
    expect(planRewrap(candidates, { gen: 4, carriesHistory: true }, ['a'], table).rewrap).toEqual(['old', 'at3']);
  });

  it('entitles a full member whatever generation it was given, and mints on add only when the rules say', () => {
    expect(entitledTo({ machine: 'f', history: 'full', fromGen: 5 }, 2)).toBe(true);
    expect(entitledTo({ machine: 'w', history: 'forward', fromGen: 3 }, 3)).toBe(true);
    expect(entitledTo({ machine: 'w', history: 'forward', fromGen: 3 }, 2)).toBe(false);
    expect(entitledTo({ machine: 'n', history: 'fresh', fromGen: 4 }, 3)).toBe(false);
    expect(entitledTo(undefined, 1)).toBe(false);
    expect(mintsOnAdd('fresh', 1, new Set())).toBe(true);
    expect(mintsOnAdd('forward', 2, new Set([2]))).toBe(true);
    expect(mintsOnAdd('forward', 2, new Set([1]))).toBe(false);
    expect(mintsOnAdd('full', 2, new Set([2]))).toBe(false);
  });

  it('judges an object by its oldest record, and never rewraps one down to an older generation', () => {
    const table = new Map<string, Entitlement>([['b', { machine: 'b', history: 'forward', fromGen: 3 }]]);
    // Published under 1, rewrapped under 3: b (from 3) may not be handed it under 4.
    expect(planRewrap([{ id: 'x', gens: [1, 3] }], { gen: 4, carriesHistory: true }, ['b'], table)).toEqual({
      rewrap: [],
      done: 0,
      withheld: 1,
    });
    // An object newer than the generation asked for is left where it is.
    const full = new Map<string, Entitlement>([['a', { machine: 'a', history: 'full', fromGen: 1 }]]);
    expect(planRewrap([{ id: 'y', gens: [5] }], { gen: 4, carriesHistory: true }, ['a'], full)).toEqual({
      rewrap: [],
      done: 0,
      withheld: 1,
    });
  });
});
