/**
 * Domain key generations held in memory by whoever may read a domain (the
 * crypto worker in browsers), and the envelope port built on them. Sealing
 * always uses the newest generation; opening uses the generation the envelope
 * names, so older data stays readable after a rotation.
 */
import { isBytes } from './bytes.js';
import type { Random } from './ports.js';
import type { EnvelopeCrypto } from './replica.js';
import { err, ok } from './result.js';
import { openSealed, sealEvent } from './seal.js';
import type { DomainName } from './schema.js';

export class DomainKeyring {
  readonly #keys = new Map<DomainName, Map<number, Uint8Array>>();

  add(domain: DomainName, gen: number, key: Uint8Array): void {
    if (!isBytes(key, 32) || !Number.isSafeInteger(gen) || gen < 1)
      throw new Error('domain-keys: bad key or generation');
    let gens = this.#keys.get(domain);
    if (!gens) this.#keys.set(domain, (gens = new Map<number, Uint8Array>()));
    gens.set(gen, key);
  }

  get(domain: DomainName, gen: number): Uint8Array | undefined {
    return this.#keys.get(domain)?.get(gen);
  }

  current(domain: DomainName): { gen: number; key: Uint8Array } | undefined {
    const gens = this.#keys.get(domain);
    if (!gens || gens.size === 0) return undefined;
    const gen = Math.max(...gens.keys());
    return { gen, key: gens.get(gen)! };
  }

  /** The generation `gen` of a domain (when held), or its newest: what an envelope is sealed under. */
  sealing(domain: DomainName, gen?: number): { gen: number; key: Uint8Array } | undefined {
    if (gen === undefined) return this.current(domain);
    const key = this.get(domain, gen);
    return key && { gen, key };
  }

  list(): { domain: DomainName; gen: number; key: Uint8Array }[] {
    return [...this.#keys].flatMap(([domain, gens]) => [...gens].map(([gen, key]) => ({ domain, gen, key })));
  }

  envelopes(random: Random): EnvelopeCrypto {
    return {
      seal: async (domain, signedEvent, lane, gen) => {
        const at = this.sealing(domain, gen);
        if (!at) throw new Error(`domain-keys: no key for ${domain}${gen === undefined ? '' : ` generation ${gen}`}`);
        return sealEvent(signedEvent, domain, at.gen, at.key, random, lane);
      },
      generation: async (domain) => this.current(domain)?.gen,
      open: async (sealed) => {
        const opened = openSealed(sealed, (d, g) => this.get(d, g));
        return opened.ok ? ok(opened.value) : err(opened.error);
      },
    };
  }
}
