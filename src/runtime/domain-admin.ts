/**
 * Data domains as the UI works with them. An admin creates one that only the readers it
 * picks can open, lets one more machine read it (with a history policy), or stops a machine
 * reading it from now on. Every other machine of the mesh still stores and forwards a
 * domain's sealed rows and objects, and can open none of them — `unreadable` shows it. The
 * MLS side is mesh-domains.ts.
 */
import { err, type Result } from '../core/result.js';
import { DOMAINS, isDomainName, type DomainName } from '../core/schema.js';
import type { MachineStore } from './machine-store.js';
import type { CryptoPort } from './ports.js';
import type { CryptoService } from './crypto-service.js';
import type { DomainsError, MeshDomains } from './mesh-domains.js';
import type { MeshRoster } from './mesh-roster.js';

export type DomainAdminDeps = {
  readonly domains: Pick<MeshDomains, 'views' | 'create' | 'add' | 'remove' | 'rotate'>;
  readonly roster: Pick<MeshRoster, 'isAdmin' | 'others'>;
  readonly store: Pick<MachineStore, 'row' | 'opaque'>;
  readonly crypto: Pick<CryptoPort, 'tryEveryKey'>;
  online(): boolean;
  /** Writes the domain's CONTROL `domains` record. */
  record(domain: DomainName, purpose: string): Promise<Result<unknown, { readonly type: string }>>;
  /** The UI shows the change. */
  changed(): Promise<void>;
};

const MAX_PURPOSE = 200;
/** Most sealed rows `unreadable` counts and tries keys on. */
const UNREADABLE_SAMPLE = 5000;

export class DomainAdmin {
  readonly #deps: DomainAdminDeps;

  constructor(deps: DomainAdminDeps) {
    this.#deps = deps;
  }

  /** Whether this machine holds `domain`'s current key and may write into it. */
  reads(domain: DomainName): boolean {
    return this.#deps.domains.views.some((v) => v.domain === domain && !v.removed && !v.awaiting);
  }

  /**
   * Creates a data domain that only `readers` (and this machine) may read. Recorded in
   * CONTROL `domains`; readers join its MLS group by their standing key packages.
   */
  async create(name: string, purpose: string, readers: readonly string[]): Promise<Result<void, DomainsError>> {
    const { domains, roster, store } = this.#deps;
    const domain = name.trim().toUpperCase();
    const invalid = (reason: string) => err({ type: 'InvalidDomain' as const, reason });
    if (!roster.isAdmin()) return invalid('only an admin creates a domain');
    if (!isDomainName(domain) || DOMAINS.includes(domain)) {
      return invalid('a domain name is 2-32 capital letters, digits or _, and not CONTROL or GENERAL');
    }
    if (domains.views.some((v) => v.domain === domain) || (await store.row('domains', domain))) {
      return invalid(`domain ${domain} exists already`);
    }
    if (!this.#deps.online()) return invalid('connect to the relay first: the sequencer orders the change');
    const live = new Set(roster.others());
    const recorded = await this.#deps.record(domain, purpose.slice(0, MAX_PURPOSE));
    if (!recorded.ok) return invalid(recorded.error.type);
    const created = await domains.create(
      domain,
      readers.filter((r) => live.has(r)),
    );
    await this.#deps.changed();
    return created;
  }

  /** Lets one more machine read a domain, with a history policy. */
  async addReader(
    domain: DomainName,
    signer: string,
    history: 'forward' | 'full' | 'fresh',
  ): Promise<Result<void, DomainsError>> {
    const added = await this.#deps.domains.add(domain, [signer], history);
    await this.#deps.changed();
    return added;
  }

  /** Stops a machine reading a domain from now on (a new generation it cannot open). */
  async removeReader(domain: DomainName, signer: string): Promise<Result<void, DomainsError>> {
    const removed = await this.#deps.domains.remove(domain, [signer]);
    await this.#deps.changed();
    return removed;
  }

  /**
   * Rotates a domain's key: a new generation for every reader, then each object gets an
   * access record under it in the background (rewrap-job.ts), its bytes untouched. Older
   * generations are kept: objects some reader may not read stay under them.
   */
  async rotate(domain: DomainName): Promise<Result<void, DomainsError>> {
    const invalid = (reason: string) => err({ type: 'InvalidDomain' as const, reason });
    if (!this.#deps.roster.isAdmin()) return invalid('only an admin rotates a domain');
    if (!this.reads(domain)) return invalid(`this machine does not read ${domain}`);
    if (!this.#deps.online()) return invalid('connect to the relay first: the sequencer orders the change');
    const rotated = await this.#deps.domains.rotate(domain);
    await this.#deps.changed();
    return rotated;
  }

  /**
   * Storage is not reading: the sealed rows this machine holds but cannot open, counted by
   * domain, and what trying every key it holds on them gives — a typed `NoKeyOpens` unless
   * one opens (which would be a bug).
   */
  async unreadable(): Promise<{
    byDomain: Record<string, number>;
    attempt: Awaited<ReturnType<CryptoService['tryEveryKey']>>;
  }> {
    const held = await this.#deps.store.opaque(UNREADABLE_SAMPLE);
    const byDomain: Record<string, number> = {};
    for (const entry of held) byDomain[entry.domain] = (byDomain[entry.domain] ?? 0) + 1;
    return { byDomain, attempt: await this.#deps.crypto.tryEveryKey(held.map((e) => e.sealed)) };
  }
}
