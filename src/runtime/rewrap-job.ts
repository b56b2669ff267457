/**
 * Rotation by rewrap, in the background (SOP/1; seed 003 "Rotating keys"): after a rotation
 * or a removal minted a domain's generation, each object of the domain gets a new access
 * record under it — REWRAP_BATCH of them to an `object_access` row, 68 bytes per object
 * (core/object/access.ts) — while its bytes, storage id and producer signature stay as they are.
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
import { encodeAccessBatch, MAX_BATCH_ENTRIES } from '../core/object/access.js';
import { isStorageId } from '../core/object/keys.js';
import { planRewrap } from '../core/object/rewrap.js';
import type { WriteError, WriteOutcome } from '../core/replica.js';
import type { Result } from '../core/result.js';
import { isDomainName, type DomainName } from '../core/schema.js';
import type { DomainView } from './mls-service.js';
import type { CatalogEntry, ObjectError, Rewrapped } from './object-service.js';

/**
 * `<DOMAIN>:<writer>:batch:<gen>:<first storage id>` → its parts: a rotation's batch of access
 * records (core/object/access.ts). Earlier versions read five parts as no record at all.
 */
export function accessBatchKey(row: string): { domain: DomainName; gen: number } | undefined {
  const [domain, writer, batch, gen, first, extra] = row.split(':');
  const g = Number(gen);
  if (extra !== undefined || batch !== 'batch' || !isDomainName(domain) || !writer || !first || !isStorageId(first)) {
    return undefined;
  }
  return Number.isInteger(g) && g >= 1 ? { domain, gen: g } : undefined;
}

/** The access-record row that holds a batch of a rotation's records, named by the batch's first object. */
export function accessBatchRow(domain: DomainName, writer: string, gen: number, first: string): string {
  return `${domain}:${writer}:batch:${gen}:${first}`;
}

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
  /** Writes an `object_access` row (here: a batch of records, mesh-objects.ts `accessBatchRow`). */
  writeAccess(row: string, wrapped: string): Promise<Result<WriteOutcome, WriteError>>;
  /** Progress changed: the UI shows it. */
  changed(): void;
};

/**
 * Objects per round trip to the key holder, and per access-record row: as many as one row
 * holds (core/object/access.ts, 180); progress is shown after each.
 */
export const REWRAP_BATCH = MAX_BATCH_ENTRIES;

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
      if (made.value.length === 0) continue;
      // One row for the batch: a record costs its 68 bytes, not a signed event of its own.
      const records = made.value.flatMap((r) => (isStorageId(r.id) ? [{ storageId: r.id, wrapped: r.wrapped }] : []));
      const row = accessBatchRow(domain, this.#deps.self(), gen, made.value[0]!.id);
      const written = await this.#deps.writeAccess(row, toBase64Url(encodeAccessBatch(records)));
      if (!written.ok) return show(reasonOf(written.error));
      done += records.length;
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
