/**
 * Domain key generations in the key store (src/storage/domain-generations.ts): written wrapped
 * once, read back by name into typed records, only the ones a worker lacks; names this module did
 * not write are ignored, never mistaken for a generation.
 */
import { describe, expect, it } from 'vitest';
import type { KeyStore, SecretRecord } from '../../src/storage/key-store.js';
import {
  generationOf,
  loadGenerations,
  storedGenerations,
  wrapGenerations,
} from '../../src/storage/domain-generations.js';

const wrapping = await crypto.subtle.generateKey({ name: 'AES-GCM', length: 256 }, false, ['encrypt', 'decrypt']);
const key = (n: number) => new Uint8Array(32).fill(n);

function store(): Pick<KeyStore, 'secretsUnder'> & { put(records: readonly SecretRecord[]): void } {
  const secrets = new Map<string, SecretRecord>();
  return {
    put: (records) => records.forEach((r) => secrets.set(r.name, r)),
    secretsUnder: async (prefix) => [...secrets.values()].filter((r) => r.name.startsWith(prefix)),
  };
}

describe('domain generations', () => {
  it('wraps the generations not stored yet, and loads back only those a worker lacks', async () => {
    const s = store();
    const written = await wrapGenerations(
      wrapping,
      [
        { domain: 'GENERAL', gen: 1, key: key(1) },
        { domain: 'GENERAL', gen: 2, key: key(2) },
        { domain: 'FIELD', gen: 1, key: key(3) },
      ],
      (d, g) => d === 'GENERAL' && g === 1,
    );
    expect(written).toHaveLength(2);
    expect(written.every((r) => !r.ct.every((byte, i) => byte === key(2)[i]))).toBe(true);
    s.put(written);
    expect(await storedGenerations(s)).toEqual([
      { domain: 'GENERAL', gen: 2 },
      { domain: 'FIELD', gen: 1 },
    ]);
    const loaded = await loadGenerations(s, wrapping, (d) => d === 'FIELD');
    expect(loaded).toEqual([{ domain: 'GENERAL', gen: 2, key: key(2) }]);
  });

  it('reads only names it writes', () => {
    expect(generationOf('domain/GENERAL/3')).toEqual({ domain: 'GENERAL', gen: 3 });
    for (const name of [
      'domain/general/3',
      'domain/GENERAL/0',
      'domain/GENERAL/1.5',
      'domain/GENERAL',
      'domain/GENERAL/3/x',
      'other/GENERAL/3',
    ]) {
      expect(generationOf(name), name).toBeUndefined();
    }
  });

  it('refuses a record whose name was changed: the name is bound into the wrapping', async () => {
    const s = store();
    const [record] = await wrapGenerations(wrapping, [{ domain: 'GENERAL', gen: 1, key: key(1) }], () => false);
    s.put([{ ...record!, name: 'domain/GENERAL/2' }]);
    await expect(loadGenerations(s, wrapping, () => false)).rejects.toThrow();
  });
});
