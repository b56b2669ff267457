/**
 * Rotation by rewrap, and who may receive what through it (SOP/1; seed 003 "Rotating keys",
 * "Adding a machine").
 *
 * A rotation mints a new KEK generation of a domain (core/mls/domain.ts) and then gives each
 * object of the domain a new access record under it: tens of bytes per object, while the
 * object's bytes, storage id and producer signature never change. Old generations are kept:
 * an object that may not be rewrapped stays readable under the generation it had.
 *
 * Entitlement: a machine added with history `full` may read every object of the domain; one
 * added `forward` or `fresh` only objects whose origin generation — the generation the object
 * was first published under, the lowest of its access records, since rewraps only ever add
 * higher ones — is at least the generation it was given on joining. A rewrap under generation
 * `g` hands the object to every holder of `g`, so it is allowed only when every holder is
 * entitled to the object. Holders are the group's members when `g` is minted, and whoever is
 * added while `g` is current: a `full` joiner is entitled to everything, and a `forward`
 * joiner is never given a generation that carries rewrapped history — the add mints a new
 * generation instead (`mintsOnAdd`), which holds nothing older than the joiner.
 *
 * A member whose entitlement this machine does not know is treated as entitled to nothing
 * older than the current generation: the rewrap is skipped, never widened (fail closed).
 */
import { entitledTo, type Entitlement } from '../mls/entitlement.js';

/** One object as a rewrap sees it: the generations it already has access records under. */
export type RewrapCandidate = { readonly id: string; readonly gens: readonly number[] };

export type RewrapPlan = {
  /** Objects to give an access record under `target`. */
  readonly rewrap: readonly string[];
  /** Objects that have one already. */
  readonly done: number;
  /** Objects some holder of `target` is not entitled to: they stay under their older generations. */
  readonly withheld: number;
};

/**
 * What a rewrap under `target` does with each object: rewrap it when the generation carries
 * history (a rotation or removal minted it, not a `fresh` add) and every member holding it
 * (`members`, with their entitlements by machine) may read the object; otherwise leave it.
 */
export function planRewrap(
  candidates: readonly RewrapCandidate[],
  target: { readonly gen: number; readonly carriesHistory: boolean },
  members: readonly string[],
  entitlements: ReadonlyMap<string, Entitlement>,
): RewrapPlan {
  const rewrap: string[] = [];
  let done = 0;
  let withheld = 0;
  for (const object of candidates) {
    if (object.gens.length === 0) continue;
    if (object.gens.includes(target.gen)) {
      done++;
      continue;
    }
    const origin = Math.min(...object.gens);
    const allowed =
      origin < target.gen &&
      target.carriesHistory &&
      members.every((machine) => entitledTo(entitlements.get(machine), origin));
    if (allowed) rewrap.push(object.id);
    else withheld++;
  }
  return { rewrap, done, withheld };
}
