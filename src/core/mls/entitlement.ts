/**
 * Who may read what in a domain (seed 003 "Adding a machine"): the history policy a machine
 * was added with, and the generation it was given then. Rewrapping (core/object/rewrap.ts)
 * and adding (core/mls/domain.ts) both follow these rules.
 *
 * A machine added with history `full` may read every object of the domain; one added
 * `forward` or `fresh` only objects whose origin generation is at least the generation it was
 * given on joining. A member whose entitlement is unknown here is entitled to nothing older
 * (fail closed).
 */

/** `forward`: the current generation only; `full`: every generation; `fresh`: a new one, minted for the add. */
export type History = 'forward' | 'full' | 'fresh';

/** How a machine was let into a domain: its history policy and the generation it was given then. */
export type Entitlement = { readonly machine: string; readonly history: History; readonly fromGen: number };

/** Whether a machine with `entitlement` may read an object first published under `originGen`. */
export function entitledTo(entitlement: Entitlement | undefined, originGen: number): boolean {
  if (entitlement === undefined) return false;
  return entitlement.history === 'full' || entitlement.fromGen <= originGen;
}

/**
 * Whether adding machines with `history` must mint a generation: `fresh` always; `forward`
 * when the current generation carries rewrapped history (a joiner given it could read
 * objects older than its entitlement); `full` never.
 */
export function mintsOnAdd(history: History, current: number, historyGens: ReadonlySet<number>): boolean {
  return history === 'fresh' || (history === 'forward' && historyGens.has(current));
}
