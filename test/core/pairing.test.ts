/**
 * The pairing code (core/pairing.ts): deterministic for one transcript, six
 * digits, and changed by any substitution a man in the middle would make.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { commitOpens, pairingCommit, shortAuthString, type PairingTranscript } from '../../src/core/pairing.js';
import { seededRandom } from '../helpers/deterministic.js';

const r = seededRandom('pairing');
const party = () => ({ signer: r.bytes(32), endpoint: r.bytes(32), frame: r.bytes(32) });

function transcript(): PairingTranscript {
  const joiner = party();
  const joinerNonce = r.bytes(32);
  return {
    topic: r.bytes(32),
    inv: r.bytes(16),
    inviter: party(),
    joiner,
    commit: pairingCommit(joiner, joinerNonce),
    inviterNonce: r.bytes(32),
    joinerNonce,
  };
}

describe('pairing code', () => {
  it('is six digits, the same for the same transcript', () => {
    const t = transcript();
    expect(shortAuthString(t)).toMatch(/^\d{3} \d{3}$/);
    expect(shortAuthString({ ...t })).toBe(shortAuthString(t));
  });

  it('a revealed nonce opens only its own commitment', () => {
    const t = transcript();
    expect(commitOpens(t.commit, t.joiner, t.joinerNonce)).toBe(true);
    expect(commitOpens(t.commit, t.joiner, t.inviterNonce)).toBe(false);
    expect(commitOpens(t.commit, { ...t.joiner, frame: r.bytes(32) }, t.joinerNonce)).toBe(false);
  });

  it('changes when any key, nonce or the invitation is substituted', () => {
    const t = transcript();
    const base = shortAuthString(t);
    const variants: PairingTranscript[] = [
      { ...t, joiner: { ...t.joiner, frame: r.bytes(32) } },
      { ...t, inviter: { ...t.inviter, signer: r.bytes(32) } },
      { ...t, inviterNonce: r.bytes(32) },
      { ...t, joinerNonce: r.bytes(32) },
      { ...t, inv: r.bytes(16) },
      { ...t, topic: r.bytes(32) },
    ];
    // Each differs from the base with probability 1 - 10^-6; the seeded values make this deterministic.
    for (const v of variants) expect(shortAuthString(v)).not.toBe(base);
  });

  it('spreads over all six-digit values (no digit position stuck)', () => {
    const seen = new Set<string>();
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 32, maxLength: 32 }), (nonce) => {
        const code = shortAuthString({ ...transcript(), inviterNonce: nonce }).replace(' ', '');
        for (let i = 0; i < 6; i++) seen.add(`${i}:${code[i]}`);
      }),
      // Not scaled (helpers/runs.ts): the spread below needs every one of these draws.
      { numRuns: 300 },
    );
    expect(seen.size).toBe(60);
  });
});
