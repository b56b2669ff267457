/**
 * runtime/web-aead.ts against the core's noble AES-GCM: each side opens what the
 * other sealed, byte for byte, and both refuse the same tampering.
 */
import { describe, expect, it } from 'vitest';
import { DomainKeyring } from '../../src/core/domain-keys.js';
import { decodeSealed, encodeSealed, openSealed, sealEvent } from '../../src/core/seal.js';
import { webEnvelopes, webOpenSealed } from '../../src/runtime/web-aead.js';
import { seededRandom } from '../helpers/deterministic.js';

const keyring = (): DomainKeyring => {
  const k = new DomainKeyring();
  k.add('GENERAL', 1, seededRandom('aead/key').bytes(32));
  k.add('GENERAL', 2, seededRandom('aead/key2').bytes(32));
  return k;
};
const lookup = (k: DomainKeyring) => (d: string, g: number) => k.get(d, g);

describe('web-aead', () => {
  it('opens what noble sealed and seals what noble opens, in every lane', async () => {
    const k = keyring();
    for (const lane of [undefined, 'trusted', 'local'] as const) {
      const message = seededRandom(`aead/msg/${lane}`).bytes(300);
      const byNoble = sealEvent(message, 'GENERAL', 2, k.get('GENERAL', 2)!, seededRandom(`n/${lane}`), lane);
      expect(await webOpenSealed(byNoble, lookup(k))).toEqual({ ok: true, value: message });
      const byWeb = await webEnvelopes(k, seededRandom(`n/${lane}`)).seal('GENERAL', message, lane);
      expect(encodeSealed(byWeb)).toEqual(encodeSealed(byNoble));
      expect(decodeSealed(encodeSealed(byWeb)).ok).toBe(true);
      expect(openSealed(byWeb, lookup(k))).toEqual({ ok: true, value: message });
    }
  });

  it('refuses a flipped bit, a relabelled header, a missing key and a short ciphertext like noble', async () => {
    const k = keyring();
    const sealed = sealEvent(new Uint8Array(40), 'GENERAL', 1, k.get('GENERAL', 1)!, seededRandom('n2'));
    const ct = sealed.ct.slice();
    ct[20]! ^= 1;
    const cases = [
      { ...sealed, ct },
      { ...sealed, lane: 'trusted' as const },
      { ...sealed, gen: 2 },
      { ...sealed, gen: 3 },
      { ...sealed, ct: sealed.ct.subarray(0, 27) },
    ];
    for (const tampered of cases) {
      const web = await webOpenSealed(tampered, lookup(k));
      expect(web).toEqual(openSealed(tampered, lookup(k)));
      expect(web.ok).toBe(false);
    }
    expect(await webOpenSealed({ ...sealed, gen: 3 }, lookup(k))).toMatchObject({
      error: { type: 'DomainKeyMissing' },
    });
  });
});
