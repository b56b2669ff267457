/**
 * Domain key generations as the key store keeps them: one typed record per (domain,
 * generation), its key wrapped under the machine's non-extractable wrapping key. The MLS worker
 * writes them (the only place keys are made: inside MLS); the crypto worker reads the ones it
 * does not hold yet. The record's name is private to this module.
 *
 * The crypto worker is the one holder of the unwrapped keys: it seals and opens rows with them
 * beside the state plane, and the Parquet worker asks it to wrap and open access records
 * (runtime/access-keys.ts) rather than keep copies — an access record is wrapped once per
 * publication and opened once per object read, in batches, so the round trip costs little. The
 * key store holds each key once, wrapped; memory holds it once, unwrapped.
 */
import { isDomainName, type DomainName } from '../core/schema.js';
import type { KeyStore, SecretRecord } from './key-store.js';
import { unwrapSecret, wrapSecret } from './key-wrap.js';

const PREFIX = 'domain/';

/** One generation of one domain's key. */
export type DomainGeneration = { readonly domain: DomainName; readonly gen: number; readonly key: Uint8Array };

const nameOf = (domain: DomainName, gen: number): string => `${PREFIX}${domain}/${gen}`;

/** The domain and generation a stored name records, or undefined for a name this module did not write. */
export function generationOf(name: string): { readonly domain: DomainName; readonly gen: number } | undefined {
  const [prefix, domain, gen, ...rest] = name.split('/');
  const n = Number(gen);
  if (`${prefix}/` !== PREFIX || rest.length > 0 || !isDomainName(domain) || !Number.isSafeInteger(n) || n < 1) {
    return undefined;
  }
  return { domain, gen: n };
}

/** Wraps generations for the key store, skipping those `stored` says are there already. */
export async function wrapGenerations(
  wrapping: CryptoKey,
  generations: readonly DomainGeneration[],
  stored: (domain: DomainName, gen: number) => boolean,
): Promise<SecretRecord[]> {
  const records: SecretRecord[] = [];
  for (const { domain, gen, key } of generations) {
    if (stored(domain, gen)) continue;
    const name = nameOf(domain, gen);
    records.push({ name, ...(await wrapSecret(wrapping, name, key)) });
  }
  return records;
}

/** The generations the key store holds (names only; nothing unwrapped). */
export async function storedGenerations(
  store: Pick<KeyStore, 'secretsUnder'>,
): Promise<{ readonly domain: DomainName; readonly gen: number }[]> {
  return (await store.secretsUnder(PREFIX)).flatMap((record) => {
    const at = generationOf(record.name);
    return at ? [at] : [];
  });
}

/** The generations the key store holds that `held` says this worker lacks, unwrapped. */
export async function loadGenerations(
  store: Pick<KeyStore, 'secretsUnder'>,
  wrapping: CryptoKey,
  held: (domain: DomainName, gen: number) => boolean,
): Promise<DomainGeneration[]> {
  const out: DomainGeneration[] = [];
  for (const record of await store.secretsUnder(PREFIX)) {
    const at = generationOf(record.name);
    if (!at || held(at.domain, at.gen)) continue;
    out.push({ ...at, key: await unwrapSecret(wrapping, record.name, record) });
  }
  return out;
}
