/**
 * runtime/node-aead.ts against the core's noble AES-GCM: each side opens what
 * the other sealed, byte for byte, and both refuse the same tampering.
 */
import { describe, expect, it } from 'vitest';
import { DomainKeyring } from '../../src/core/domain-keys.js';
import { decodeSealed, encodeSealed, openSealed, sealEvent } from '../../src/core/seal.js';
import { nodeEnvelopes, nodeOpenSealed } from '../../src/runtime/node-aead.js';
import { seededRandom } from '../helpers/deterministic.js';

const keyring = (): DomainKeyring => {
  const k = new DomainKeyring();
  k.add('GENERAL', 1, seededRandom('aead/key').bytes(32));
  return k;
};
const lookup = (k: DomainKeyring) => (d: string, g: number) => k.get(d, g);

describe('node-aead', () => {
  it('opens what noble sealed and seals what noble opens (envelopes)', async () => {
    const k = keyring();
    const message = seededRandom('aead/msg').bytes(300);
    const byNoble = sealEvent(message, 'GENERAL', 1, k.get('GENERAL', 1)!, seededRandom('n1'));
    expect(nodeOpenSealed(byNoble, lookup(k))).toEqual({ ok: true, value: message });
    const byNode = await nodeEnvelopes(k, seededRandom('n1')).seal('GENERAL', message);
    expect(encodeSealed(byNode)).toEqual(encodeSealed(byNoble));
    expect(decodeSealed(encodeSealed(byNode)).ok).toBe(true);
    expect(openSealed(byNode, lookup(k))).toEqual({ ok: true, value: message });
  });

  it('refuses a flipped ciphertext bit, a missing key and a short ciphertext like noble', () => {
    const k = keyring();
    const sealed = sealEvent(new Uint8Array(40), 'GENERAL', 1, k.get('GENERAL', 1)!, seededRandom('n2'));
    const ct = sealed.ct.slice();
    ct[20]! ^= 1;
    const tampered = { ...sealed, ct };
    expect(nodeOpenSealed(tampered, lookup(k))).toEqual(openSealed(tampered, lookup(k)));
    expect(nodeOpenSealed(tampered, lookup(k))).toMatchObject({ ok: false, error: { type: 'DecryptFailed' } });
    expect(nodeOpenSealed({ ...sealed, gen: 2 }, lookup(k))).toMatchObject({ error: { type: 'DomainKeyMissing' } });
    expect(nodeOpenSealed({ ...sealed, ct: ct.subarray(0, 27) }, lookup(k))).toMatchObject({ ok: false });
  });
});
