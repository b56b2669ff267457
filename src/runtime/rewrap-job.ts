/**
 * Rotation by rewrap, in the background (SOP/1; seed 003 "Rotating keys"): after a rotation
 * or a removal minted a domain's generation, each object of the domain gets a new access
 * record under it — written as an `object_access` row like a publication's, a few dozen bytes
 * per object — while its bytes, storage id and producer signature stay as they are.
 *
 * What is left is derived each time from the catalog (objects with no record under the
 * current generation), never from a saved cursor: a job cut short by a crash, a reload or a
 * relay outage resumes at the next sync cycle, and records another admin wrote already count
 * as done. Which objects may be rewrapped is core/object/rewrap.ts's rule: only those every
 * holder of the generation is entitled to; the rest stay under their older generations, which
 * are kept. Admins that read the domain do the work, a batch at a time; a batch is planned
 * against the group as it is then, and the job stops (to be planned again) when the
 * generation or the members change under it.
 */
import { toBase64Url } from '../core/bytes.js';
import { planRewrap } from '../core/object/rewrap.js';
import type { WriteError, WriteOutcome } from '../core/replica.js';
import type { Result } from '../core/result.js';
import { isDomainName, type DomainName } from '../core/schema.js';
import type { DomainView } from './mls-service.js';
import type { CatalogEntry, ObjectError, Rewrapped } from './object-service.js';

/** How far the rewrap of one domain under its current generation has come. */
export type RewrapProgress = {
  readonly domain: DomainName;
  readonly gen: number;
  /** Objects with a record under `gen`, of `total` that may have one. */
  readonly done: number;
  readonly total: number;
  /** Objects left under older generations: some reader of `gen` may not read them. */
  readonly withheld: number;
  /** Why the last batch stopped, when it did not finish. */
  readonly stopped?: string | undefined;
};

export type RewrapDeps = {
  /** The domains' groups as they are now (members, entitlements, generations). */
  views(): readonly DomainView[];
  isAdmin(): boolean;
  self(): string;
  /** The catalog by object, with every access record this machine reads. */
  catalog(): Promise<ReadonlyMap<string, CatalogEntry>>;
  /** The key holder's rewrap of one batch (object-service.ts `rewrap`). */
  rewrap(domain: DomainName, gen: number, entries: readonly CatalogEntry[]): Promise<Result<Rewrapped[], ObjectError>>;
  /** Writes an `object_access` row. */
  writeAccess(row: string, wrapped: string): Promise<Result<WriteOutcome, WriteError>>;
  /** Progress changed: the UI shows it. */
  changed(): void;
};

/** Objects per round trip to the key holder; progress is shown after each. */
export const REWRAP_BATCH = 100;

const reasonOf = (e: { readonly type: string; readonly reason?: unknown }): string =>
  typeof e.reason === 'string' ? `${e.type}: ${e.reason}` : e.type;

export class RewrapJob {
  readonly #deps: RewrapDeps;
  readonly #progress = new Map<DomainName, RewrapProgress>();

  constructor(deps: RewrapDeps) {
    this.#deps = deps;
  }

  /** Each domain's rewrap under its current generation, as far as it has come (domains with one under way or done). */
  progress(): RewrapProgress[] {
    return [...this.#progress.values()];
  }

  /** Rewraps what is left in every domain this machine may rewrap; resolves when done or stopped. */
  async run(): Promise<void> {
    if (!this.#deps.isAdmin()) return;
    // The catalog is read once a run, and only when some domain's generation carries history.
    let catalog: readonly CatalogEntry[] | undefined;
    for (const view of this.#deps.views()) {
      const gen = view.generations.at(-1);
      if (!isDomainName(view.domain) || view.removed || view.awaiting || gen === undefined) continue;
      if (!view.historyGens.includes(gen)) continue;
      catalog ??= [...(await this.#deps.catalog()).values()];
      await this.#domain(view.domain, gen, view, catalog);
    }
  }

  async #domain(domain: DomainName, gen: number, view: DomainView, catalog: readonly CatalogEntry[]): Promise<void> {
    const entries = catalog.filter((e) => e.domain === domain);
    const plan = planRewrap(
      entries.map((e) => ({ id: e.id, gens: e.access.map((a) => a.gen) })),
      { gen, carriesHistory: true },
      view.members,
      new Map(view.entitlements.map((e) => [e.machine, e])),
    );
    let done = plan.done;
    const total = plan.done + plan.rewrap.length;
    const show = (stopped?: string) => {
      this.#progress.set(domain, { domain, gen, done, total, withheld: plan.withheld, ...(stopped && { stopped }) });
      this.#deps.changed();
    };
    show();
    const byId = new Map(entries.map((e) => [e.id, e]));
    for (let i = 0; i < plan.rewrap.length; i += REWRAP_BATCH) {
      if (!this.#unchanged(domain, gen, view)) return show('the group changed: planned again at the next sync');
      const batch = plan.rewrap.slice(i, i + REWRAP_BATCH).map((id) => byId.get(id)!);
      const made = await this.#deps.rewrap(domain, gen, batch);
      if (!made.ok) return show(reasonOf(made.error));
      // Written together: the state plane signs and records a burst of local writes in one go.
      const written = await Promise.all(
        made.value.map((r) =>
          this.#deps.writeAccess(`${domain}:${this.#deps.self()}:${r.id}:${r.gen}`, toBase64Url(r.wrapped)),
        ),
      );
      done += written.filter((w) => w.ok).length;
      for (const w of written) if (!w.ok) return show(reasonOf(w.error));
      show();
    }
  }

  /** Whether the domain's group is still the one the plan was made against. */
  #unchanged(domain: DomainName, gen: number, planned: DomainView): boolean {
    const now = this.#deps.views().find((v) => v.domain === domain);
    if (!now || now.removed || now.generations.at(-1) !== gen) return false;
    return now.members.length === planned.members.length && now.members.every((m) => planned.members.includes(m));
  }
}
