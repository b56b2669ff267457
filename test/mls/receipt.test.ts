/**
 * Sequencer receipts refused field by field (src/core/mls/receipt.ts): every body a relay could
 * sign that breaks the receipt format is refused even under a valid signature, with the reason a
 * member shows; and the misbehaviour proof is given exactly when two receipts contradict.
 */
import { ed25519 } from '@noble/curves/ed25519.js';
import { describe, expect, it } from 'vitest';
import { encodeCbor } from '../../src/core/cbor.js';
import {
  conflictBetween,
  MAX_GROUP_ID,
  receiptSigningPayload,
  signReceipt,
  verifyReceipt,
  type ReceiptBody,
} from '../../src/core/mls/receipt.js';
import { group, relayKey, relaySecret, topic } from '../helpers/sequencer-suite.js';

const BODY: ReceiptBody = {
  v: 1,
  topic,
  group,
  epoch: 0,
  seq: 1,
  bundle: new Uint8Array(32).fill(3),
  prev: new Uint8Array(),
  at: 5,
};
const LINKED = { ...BODY, epoch: 1, seq: 2, prev: new Uint8Array(32).fill(4) };

/** A receipt over any body the relay chose to sign: the signature is valid, the body may not be. */
function signedAnyway(body: unknown): Uint8Array {
  const bodyBytes = encodeCbor(body);
  return encodeCbor([bodyBytes, ed25519.sign(receiptSigningPayload(bodyBytes), relaySecret)]);
}

const reasonOf = (bytes: Uint8Array, key = relayKey) => {
  const r = verifyReceipt(bytes, key);
  if (r.ok) return 'accepted';
  expect(r.error.type).toBe('ReceiptInvalid');
  return r.error.reason;
};

describe('verifyReceipt', () => {
  it('accepts the first receipt of a group and a linked later one', () => {
    expect(reasonOf(signedAnyway(BODY))).toBe('accepted');
    expect(reasonOf(signedAnyway(LINKED))).toBe('accepted');
    expect(reasonOf(signedAnyway({ ...BODY, group: new Uint8Array(MAX_GROUP_ID).fill(1) }))).toBe('accepted');
    expect(reasonOf(signedAnyway({ ...BODY, epoch: 0, at: 0 }))).toBe('accepted');
  });

  const without = (field: keyof ReceiptBody) => Object.fromEntries(Object.entries(BODY).filter(([k]) => k !== field));
  const bodyRefusals: [string, unknown, string][] = [
    ['a body that is a list', [BODY], 'receipt: body is not a map'],
    ['a body with an extra field', { ...BODY, x: 1 }, 'receipt: fields'],
    ...(['v', 'topic', 'group', 'epoch', 'seq', 'bundle', 'prev', 'at'] as const).map(
      (f): [string, unknown, string] => [`a body without ${f}`, without(f), 'receipt: fields'],
    ),
    ['version 2', { ...BODY, v: 2 }, 'receipt: version'],
    ['a topic of 31 bytes', { ...BODY, topic: topic.subarray(1) }, 'receipt: topic or bundle size'],
    ['a bundle of 33 bytes', { ...BODY, bundle: new Uint8Array(33) }, 'receipt: topic or bundle size'],
    ['a bundle hash as text', { ...BODY, bundle: 'b'.repeat(32) }, 'receipt: topic or bundle size'],
    ['an empty group id', { ...BODY, group: new Uint8Array() }, 'receipt: group id'],
    ['a group id as text', { ...BODY, group: 'g' }, 'receipt: group id'],
    ['a group id over the limit', { ...BODY, group: new Uint8Array(MAX_GROUP_ID + 1) }, 'receipt: group id'],
    ['a negative epoch', { ...BODY, epoch: -1 }, 'receipt: numbers'],
    ['a fractional epoch', { ...BODY, epoch: 0.5 }, 'receipt: numbers'],
    ['an epoch as text', { ...BODY, epoch: '0' }, 'receipt: numbers'],
    ['an epoch beyond safe integers', { ...BODY, epoch: 2 ** 53 }, 'receipt: numbers'],
    ['sequence number zero', { ...BODY, seq: 0 }, 'receipt: numbers'],
    ['a sequence number as text', { ...BODY, seq: '1' }, 'receipt: numbers'],
    ['a negative time', { ...BODY, at: -1 }, 'receipt: numbers'],
    ['a time as text', { ...BODY, at: '5' }, 'receipt: numbers'],
    ['a first receipt with a prev link', { ...BODY, prev: new Uint8Array(32) }, 'receipt: prev link'],
    ['a later receipt without one', { ...LINKED, prev: new Uint8Array() }, 'receipt: prev link'],
    ['a later receipt with a short one', { ...LINKED, prev: new Uint8Array(31) }, 'receipt: prev link'],
    ['a prev link as text', { ...LINKED, prev: 'p'.repeat(32) }, 'receipt: prev link'],
  ];

  it.each(bodyRefusals)('refuses %s, signed or not', (_name, body, reason) => {
    expect(reasonOf(signedAnyway(body))).toBe(reason);
  });

  const sig = ed25519.sign(receiptSigningPayload(encodeCbor(BODY)), relaySecret);
  const outerRefusals: [string, Uint8Array, string | RegExp][] = [
    ['not CBOR', Uint8Array.of(0xff), /^receipt: cbor: /],
    ['over the size limit', signedAnyway({ ...BODY, x: new Uint8Array(1024) }), /^receipt: ./],
    ['a map', encodeCbor({ body: encodeCbor(BODY), sig }), 'receipt: not [body, sig]'],
    ['a single', encodeCbor([encodeCbor(BODY)]), 'receipt: not [body, sig]'],
    ['a triple', encodeCbor([encodeCbor(BODY), sig, sig]), 'receipt: not [body, sig]'],
    ['a body that is not bytes', encodeCbor([BODY, sig]), 'receipt: not [body, sig]'],
    ['a signature of 63 bytes', encodeCbor([encodeCbor(BODY), sig.subarray(1)]), 'receipt: not [body, sig]'],
    ['a body that is not CBOR', encodeCbor([Uint8Array.of(0xff), sig]), /^receipt: cbor: /],
    [
      'a signature under another key',
      encodeCbor([encodeCbor(BODY), ed25519.sign(receiptSigningPayload(encodeCbor(BODY)), new Uint8Array(32))]),
      'receipt: signature does not verify under the pinned relay key',
    ],
    [
      'a signature over the body without its label',
      encodeCbor([encodeCbor(BODY), ed25519.sign(encodeCbor(BODY), relaySecret)]),
      'receipt: signature does not verify under the pinned relay key',
    ],
  ];

  it.each(outerRefusals)('refuses %s', (_name, bytes, reason) => {
    const got = reasonOf(bytes);
    if (typeof reason === 'string') expect(got).toBe(reason);
    else expect(got).toMatch(reason);
    expect(got).not.toBe('accepted');
  });

  it('verifies strictly (RFC 8032, not ZIP-215): a small-order key does not accept a forged signature', () => {
    const identity = new Uint8Array(32);
    identity[0] = 1; // the neutral point: under ZIP-215, R = it and S = 0 "verify" for every message
    const forged = new Uint8Array(64);
    forged[0] = 1;
    expect(ed25519.verify(forged, receiptSigningPayload(encodeCbor(BODY)), identity, { zip215: true })).toBe(true);
    expect(reasonOf(encodeCbor([encodeCbor(BODY), forged]), identity)).toBe(
      'receipt: signature does not verify under the pinned relay key',
    );
  });

  it('treats a pinned key that is not a curve point as a failed verification, not a crash', () => {
    const notAPoint = new Uint8Array(32).fill(0xff);
    expect(reasonOf(signedAnyway(BODY), notAPoint)).toBe(
      'receipt: signature does not verify under the pinned relay key',
    );
    expect(reasonOf(signedAnyway(BODY), new Uint8Array(5))).toBe(
      'receipt: signature does not verify under the pinned relay key',
    );
  });
});

describe('conflictBetween', () => {
  const at = (over: Partial<ReceiptBody>) => signReceipt({ ...BODY, ...over }, relaySecret);

  it('proves an epoch sold twice, with both receipts', () => {
    const a = at({});
    const b = at({ bundle: new Uint8Array(32).fill(9) });
    expect(conflictBetween(a, b)).toEqual({
      type: 'ConflictingReceipts',
      kind: 'epoch',
      group: Buffer.from(group).toString('hex'),
      epoch: 0,
      first: a.bytes,
      second: b.bytes,
    });
  });

  it('proves one sequence number given two bodies, naming the earlier epoch', () => {
    const a = at({ ...LINKED, epoch: 4 });
    const b = at({ ...LINKED, epoch: 3 });
    expect(conflictBetween(a, b)).toMatchObject({ kind: 'sequence', epoch: 3 });
    expect(conflictBetween(b, a)).toMatchObject({ kind: 'sequence', epoch: 3 });
  });

  it('finds nothing between the same receipt twice, consecutive receipts, or other groups and topics', () => {
    const a = at({});
    expect(conflictBetween(a, at({}))).toBeUndefined();
    expect(conflictBetween(a, at(LINKED))).toBeUndefined();
    expect(conflictBetween(a, at({ group: new Uint8Array(16).fill(7), bundle: new Uint8Array(32) }))).toBeUndefined();
    expect(conflictBetween(a, at({ topic: new Uint8Array(32).fill(7), bundle: new Uint8Array(32) }))).toBeUndefined();
    expect(conflictBetween(a, at({ at: 6 }))).toMatchObject({ kind: 'sequence' });
  });
});
