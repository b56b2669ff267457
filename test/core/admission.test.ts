/**
 * Relay admission lists field by field (src/core/admission.ts): every malformed record is refused
 * with its reason even under a valid signature, the edges of each field are accepted, and a
 * relay serves an endpoint only as the list in force says.
 */
import { ed25519 } from '@noble/curves/ed25519.js';
import { describe, expect, it } from 'vitest';
import { fromHex, toHex } from '../../src/core/bytes.js';
import { encodeCbor } from '../../src/core/cbor.js';
import {
  admissionBody,
  admissionSigningPayload,
  decodeAdmission,
  encodeAdmission,
  inviteId,
  MAX_ADMISSION_BYTES,
  MAX_ADMITTED,
  mayChangeMembership,
  nextAdmission,
  standingOf,
  type AdmissionList,
} from '../../src/core/admission.js';

const secret = new Uint8Array(32).fill(0x11);
const SIGNER = ed25519.getPublicKey(secret);
const k = (n: number) => new Uint8Array(32).fill(n);
const TOPIC = k(1);
const INV = new Uint8Array(16).fill(9);

const LIST: AdmissionList = {
  v: 1,
  topic: TOPIC,
  version: 5,
  signer: SIGNER,
  admins: [SIGNER],
  endpoints: [k(2), k(3)],
  invites: [{ id: inviteId(INV), by: k(2), exp: 1000 }],
};

/** A record over any body, signed by the admin: the signature is valid, the body may not be. */
const signed = (body: unknown): Uint8Array => {
  const bytes = encodeCbor(body);
  return encodeAdmission(bytes, ed25519.sign(admissionSigningPayload(bytes), secret));
};
const reasonOf = (record: Uint8Array) => {
  const r = decodeAdmission(record);
  return r.ok ? 'accepted' : r.error.reason;
};
const without = (field: string) => Object.fromEntries(Object.entries(LIST).filter(([name]) => name !== field));

describe('decodeAdmission', () => {
  it('accepts a list, with and without stewards, and at the edges of each field', () => {
    expect(reasonOf(signed(LIST))).toBe('accepted');
    const full = Array.from({ length: MAX_ADMITTED }, (_, i) => k(i % 256));
    const invites = Array.from({ length: MAX_ADMITTED }, () => LIST.invites[0]!);
    // Every list at its limit at once still fits in a record.
    const largest = { ...LIST, admins: [SIGNER, ...full.slice(1)], endpoints: full, stewards: full, invites };
    expect(encodeAdmission(admissionBody(largest), new Uint8Array(64)).length).toBeLessThanOrEqual(MAX_ADMISSION_BYTES);
    for (const list of [
      { ...LIST, stewards: [k(2)] },
      { ...LIST, stewards: [] },
      { ...LIST, version: 0, invites: [] },
      largest,
    ]) {
      expect(reasonOf(signed(list))).toBe('accepted');
    }
    const decoded = decodeAdmission(signed({ ...LIST, stewards: [k(2)] }));
    expect(decoded.ok && decoded.value.list.stewards?.map(toHex)).toEqual([toHex(k(2))]);
    const plain = decodeAdmission(signed(LIST));
    expect(plain.ok && 'stewards' in plain.value.list).toBe(false);
  });

  const over = Array.from({ length: MAX_ADMITTED + 1 }, () => k(4));
  it.each<[string, unknown, string]>([
    ['a list of fields', [LIST], 'fields'],
    ['an extra field', { ...LIST, extra: 1 }, 'fields'],
    ...['v', 'topic', 'version', 'signer', 'admins', 'endpoints', 'invites'].map((f): [string, unknown, string] => [
      `no ${f}`,
      without(f),
      'fields',
    ]),
    ['version 2 of the format', { ...LIST, v: 2 }, 'fields'],
    ['stewards that are not keys', { ...LIST, stewards: ['x'] }, 'stewards'],
    ['too many stewards', { ...LIST, stewards: over }, 'stewards'],
    ['a short topic', { ...LIST, topic: k(1).subarray(1) }, 'topic, signer or version'],
    ['a signer as text', { ...LIST, signer: 'admin' }, 'topic, signer or version'],
    ['a version as text', { ...LIST, version: '5' }, 'topic, signer or version'],
    ['a fractional version', { ...LIST, version: 1.5 }, 'topic, signer or version'],
    ['a negative version', { ...LIST, version: -1 }, 'lists'],
    ['admins that are not a list', { ...LIST, admins: SIGNER }, 'lists'],
    ['a short admin key', { ...LIST, admins: [SIGNER.subarray(1)] }, 'lists'],
    ['too many endpoints', { ...LIST, endpoints: over }, 'lists'],
    ['invites that are not a list', { ...LIST, invites: {} }, 'lists'],
    [
      'too many invites',
      { ...LIST, invites: Array.from({ length: MAX_ADMITTED + 1 }, () => LIST.invites[0]) },
      'invites',
    ],
    ['an invite without exp', { ...LIST, invites: [{ id: inviteId(INV), by: k(2) }] }, 'invites'],
    ['an invite with an extra field', { ...LIST, invites: [{ ...LIST.invites[0], x: 1 }] }, 'invites'],
    ['an invite that is a list', { ...LIST, invites: [[1]] }, 'invites'],
    ['an invite with a short id', { ...LIST, invites: [{ ...LIST.invites[0], id: k(1).subarray(1) }] }, 'invites'],
    ['an invite with a short inviter', { ...LIST, invites: [{ ...LIST.invites[0], by: k(1).subarray(1) }] }, 'invites'],
    ['an invite expiring as text', { ...LIST, invites: [{ ...LIST.invites[0], exp: '1000' }] }, 'invites'],
    ['an invite expiring at a fraction', { ...LIST, invites: [{ ...LIST.invites[0], exp: 1.5 }] }, 'invites'],
  ])('refuses %s, signed or not', (_name, body, reason) => {
    expect(reasonOf(signed(body))).toBe(reason);
  });

  const body = admissionBody(LIST);
  const sig = ed25519.sign(admissionSigningPayload(body), secret);
  it.each<[string, Uint8Array, string | RegExp]>([
    ['bytes that are not CBOR', Uint8Array.of(0xff), /^cbor: /],
    ['a record over the size limit', signed({ ...LIST, x: new Uint8Array(MAX_ADMISSION_BYTES) }), /^cbor: .* exceeds/],
    ['a body that is not CBOR', encodeAdmission(Uint8Array.of(0xff), sig), /^cbor: /],
    ['a map', encodeCbor({ body, sig }), 'not a [body, signature] pair'],
    ['a single', encodeCbor([body]), 'not a [body, signature] pair'],
    ['a triple', encodeCbor([body, sig, sig]), 'not a [body, signature] pair'],
    ['a body that is not bytes', encodeCbor([LIST, sig]), 'not a [body, signature] pair'],
    ['a signature of 63 bytes', encodeCbor([body, sig.subarray(1)]), 'not a [body, signature] pair'],
    [
      'a signature by another key',
      encodeAdmission(body, ed25519.sign(admissionSigningPayload(body), k(7))),
      'signature does not verify',
    ],
    ['a signature without its label', encodeAdmission(body, ed25519.sign(body, secret)), 'signature does not verify'],
  ])('refuses %s', (_name, record, reason) => {
    const got = reasonOf(record);
    if (typeof reason === 'string') expect(got).toBe(reason);
    else expect(got).toMatch(reason);
  });

  it('verifies strictly (RFC 8032): a small-order signer key accepts no forged signature', () => {
    const identity = new Uint8Array(32);
    identity[0] = 1;
    const forgedBody = admissionBody({ ...LIST, signer: identity, admins: [identity] });
    const forged = new Uint8Array(64);
    forged[0] = 1;
    expect(reasonOf(encodeAdmission(forgedBody, forged))).toBe('signature does not verify');
    expect(reasonOf(encodeAdmission(forgedBody, new Uint8Array(64)))).toBe('signature does not verify');
    // The same point with y = p + 1: only a strict decoder refuses the key (ZIP-215 would accept the forgery).
    const nonCanonical = fromHex('eeffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f')!;
    const unreduced = admissionBody({ ...LIST, signer: nonCanonical, admins: [nonCanonical] });
    expect(reasonOf(encodeAdmission(unreduced, forged))).toBe('signature does not verify');
  });
});

describe('the list in force', () => {
  it('takes a first list only signed by one of its own admins, then only higher versions by an admin in force', () => {
    expect(nextAdmission(TOPIC, undefined, LIST).ok).toBe(true);
    expect(nextAdmission(TOPIC, undefined, { ...LIST, admins: [k(5)] })).toMatchObject({
      ok: false,
      error: { reason: 'first list not signed by one of its admins' },
    });
    expect(nextAdmission(k(8), undefined, LIST)).toMatchObject({
      ok: false,
      error: { reason: 'list is for another topic' },
    });
    expect(nextAdmission(TOPIC, LIST, { ...LIST, version: 5 })).toMatchObject({
      ok: false,
      error: { reason: 'version 5 is not above 5' },
    });
    expect(nextAdmission(TOPIC, LIST, { ...LIST, version: 6 }).ok).toBe(true);
    expect(nextAdmission(TOPIC, { ...LIST, admins: [k(5)] }, { ...LIST, version: 6 })).toMatchObject({
      ok: false,
      error: { reason: 'signer is not an admin of the list in force' },
    });
  });

  it('serves members, and joiners on an open invitation up to its expiry only, never others', () => {
    expect(standingOf(LIST, k(3), undefined, 0)).toEqual({ kind: 'member' });
    expect(standingOf(LIST, k(6), INV, 1000)).toEqual({ kind: 'invited', by: k(2) });
    expect(standingOf(LIST, k(6), INV, 1001)).toBeUndefined();
    expect(standingOf(LIST, k(6), new Uint8Array(16), 0)).toBeUndefined();
    expect(standingOf(LIST, k(6), undefined, 0)).toBeUndefined();
  });

  it('lets only stewards change membership when the list names them, everyone otherwise', () => {
    expect(mayChangeMembership(LIST, k(3))).toBe(true);
    expect(mayChangeMembership({ ...LIST, stewards: [k(2)] }, k(2))).toBe(true);
    expect(mayChangeMembership({ ...LIST, stewards: [k(2)] }, k(3))).toBe(false);
    expect(mayChangeMembership({ ...LIST, stewards: [] }, k(2))).toBe(false);
  });
});
