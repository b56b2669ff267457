/**
 * The in-memory domain keyring (core/domain-keys.ts): generations by domain, the newest one
 * current, envelopes sealed under the current generation and opened under the one they name,
 * and a clear error for a bad key, a bad generation or a domain with no key.
 */
import { describe, expect, it } from 'vitest';
import { toHex, utf8 } from '../../src/core/bytes.js';
import { DomainKeyring } from '../../src/core/domain-keys.js';
import { seededRandom } from '../helpers/deterministic.js';

const random = seededRandom('domain-keys-tests');

describe('a domain keyring', () => {
  it('refuses a key that is not 32 bytes and a generation below 1 or not whole', () => {
    const ring = new DomainKeyring();
    for (const [gen, key] of [
      [1, random.bytes(31)],
      [0, random.bytes(32)],
      [1.5, random.bytes(32)],
    ] as const) {
      expect(() => ring.add('GENERAL', gen, key)).toThrow('domain-keys: bad key or generation');
    }
    expect(ring.list()).toEqual([]);
  });

  it('makes the newest generation current, whatever order they came in', () => {
    const ring = new DomainKeyring();
    expect(ring.current('GENERAL')).toBeUndefined();
    const [k1, k2, k3] = [random.bytes(32), random.bytes(32), random.bytes(32)];
    ring.add('GENERAL', 2, k2);
    ring.add('GENERAL', 3, k3);
    ring.add('GENERAL', 1, k1);
    expect(ring.current('GENERAL')).toEqual({ gen: 3, key: k3 });
    expect(ring.get('GENERAL', 1)).toBe(k1);
    expect(ring.get('FIELD', 1)).toBeUndefined();
    expect(ring.list().map((k) => k.gen)).toEqual([2, 3, 1]);
  });

  it('seals under the current generation, opens under the one an envelope names, and names a domain it lacks', async () => {
    const ring = new DomainKeyring();
    ring.add('GENERAL', 1, random.bytes(32));
    const crypto = ring.envelopes(random);
    const older = await crypto.seal('GENERAL', utf8('first'));
    ring.add('GENERAL', 2, random.bytes(32));
    const newer = await crypto.seal('GENERAL', utf8('second'));
    expect([older.gen, newer.gen]).toEqual([1, 2]);
    for (const [sealed, text] of [
      [older, 'first'],
      [newer, 'second'],
    ] as const) {
      const opened = await crypto.open(sealed);
      expect(opened.ok && toHex(opened.value)).toBe(toHex(utf8(text)));
    }
    await expect(crypto.seal('FIELD', utf8('x'))).rejects.toThrow('domain-keys: no key for FIELD');
    expect(await crypto.open({ ...older, gen: 5 })).toMatchObject({ ok: false, error: { type: 'DomainKeyMissing' } });
  });
});
