/**
 * Peer messages refused field by field (src/core/peer-wire.ts): every message type decodes as
 * written, and each malformed variant — a field missing or extra, a wrong size, a bound crossed —
 * is refused with the reason a receiver counts, before anything in it is used.
 */
import { describe, expect, it } from 'vitest';
import { encodeCbor } from '../../src/core/cbor.js';
import { MAX_BUNDLE_BYTES } from '../../src/core/mls/bundle.js';
import { MAX_RECEIPT_BYTES } from '../../src/core/mls/receipt.js';
import {
  decodePeerMessage,
  encodePeerMessage,
  MAX_DOMAIN_ITEMS,
  MAX_EVENTS_PER_FRAME,
  MAX_MACHINE_NAME,
  MAX_PEER_MESSAGE,
  MAX_RECEIPT_HEADS,
  MAX_WANT_IDS,
  type PeerMessage,
} from '../../src/core/peer-wire.js';
import { MAX_SEALED_BYTES } from '../../src/core/seal.js';

const b = (n: number, fill = 1) => new Uint8Array(n).fill(fill);
const INV = b(16);
const KEY = b(32);

const VALID: PeerMessage[] = [
  { t: 'events', after: 0, upto: 3, events: [b(40)] },
  { t: 'events', after: 3, upto: 3, events: [] },
  { t: 'ack', upto: 7 },
  { t: 'want', ids: ['ab.GENERAL.1'] },
  { t: 'sweep', after: 0 },
  { t: 'resent', events: [b(40)], sweep: true, next: 2, done: false },
  { t: 'join-request', inv: INV, signer: KEY, endpoint: KEY, name: 'field tablet', commit: KEY },
  { t: 'join-challenge', inv: INV, signer: KEY, nonce: KEY },
  { t: 'join-reveal', inv: INV, nonce: KEY },
  {
    t: 'join-confirm',
    inv: INV,
    kps: [
      ['GENERAL', b(10)],
      ['CONTROL', b(10)],
    ],
  },
  {
    t: 'join-accept',
    inv: INV,
    signer: KEY,
    anchors: [KEY],
    welcomes: [['GENERAL', b(10)]],
    classes: [['device_profiles', 'public']],
  },
  { t: 'join-refused', inv: INV, reason: 'declined' },
  { t: 'mls-welcome', domain: 'GENERAL', bundle: b(10) },
  { t: 'mls-heads', receipts: [b(10)] },
  { t: 'mls-groupinfo-request', domain: 'FIELD_2' },
  { t: 'mls-groupinfo', domain: 'GENERAL', info: b(10) },
];

const reasonOf = (value: unknown): string => {
  const r = decodePeerMessage(encodeCbor(value));
  if (r.ok) return 'accepted';
  expect(r.error.type).toBe('MalformedMessage');
  return r.error.reason.replace(/^peer-wire: /, '');
};

describe('decodePeerMessage', () => {
  it.each(VALID.map((m) => [m.t, m] as const))('reads a %s message back as written', (_t, message) => {
    const decoded = decodePeerMessage(encodePeerMessage(message));
    expect(decoded.ok).toBe(true);
    expect(encodeCbor(decoded.ok ? decoded.value : undefined)).toEqual(encodeCbor(message));
  });

  it('accepts each list at its bound', () => {
    const full = (n: number, item: unknown) => Array.from({ length: n }, () => item);
    for (const message of [
      { t: 'events', after: 0, upto: 1, events: full(MAX_EVENTS_PER_FRAME, b(1)) },
      { t: 'want', ids: full(MAX_WANT_IDS, 'x'.repeat(160)) },
      { t: 'join-request', inv: INV, signer: KEY, endpoint: KEY, name: 'n'.repeat(MAX_MACHINE_NAME), commit: KEY },
      { t: 'join-accept', inv: INV, signer: KEY, anchors: full(16, KEY), welcomes: [], classes: [] },
      { t: 'mls-heads', receipts: full(MAX_RECEIPT_HEADS, b(MAX_RECEIPT_BYTES)) },
      { t: 'mls-welcome', domain: 'GENERAL', bundle: b(MAX_BUNDLE_BYTES) },
    ]) {
      expect(reasonOf(message), message.t).toBe('accepted');
    }
    const items = Array.from({ length: MAX_DOMAIN_ITEMS }, (_, i) => [`D${String(i).padStart(2, '0')}`, b(1)]);
    expect(reasonOf({ t: 'join-confirm', inv: INV, kps: items })).toBe('accepted');
    expect(reasonOf({ t: 'join-confirm', inv: INV, kps: [['GENERAL', b(4096)]] })).toBe('accepted');
    const classes = full(64, ['device_profiles', 'public']);
    expect(reasonOf({ ...VALID[10], welcomes: [['GENERAL', b(MAX_BUNDLE_BYTES)]], classes })).toBe('accepted');
    expect(reasonOf({ t: 'mls-groupinfo', domain: 'GENERAL', info: b(MAX_BUNDLE_BYTES) })).toBe('accepted');
    expect(reasonOf({ t: 'events', after: 0, upto: 0, events: [b(MAX_SEALED_BYTES)] })).toBe('accepted');
  });

  const over = (n: number, item: unknown) => Array.from({ length: n + 1 }, () => item);
  it.each<[string, unknown, string]>([
    ['a list', [1], 'not a map'],
    ['no type', { upto: 1 }, 'unknown message type'],
    ['an unknown type', { t: 'hello' }, 'unknown message type'],
    ['events with a field more', { ...VALID[0], x: 1 }, 'events: fields'],
    ['events with a negative after', { ...VALID[0], after: -1 }, 'events: fields'],
    ['events with a fractional upto', { ...VALID[0], upto: 1.5 }, 'events: fields'],
    ['events after beyond upto', { ...VALID[0], after: 4 }, 'events: after beyond upto'],
    ['events that are not a list', { ...VALID[0], events: b(4) }, 'events: entries'],
    ['an event that is text', { ...VALID[0], events: ['x'] }, 'events: entries'],
    ['too many events', { ...VALID[0], events: over(MAX_EVENTS_PER_FRAME, b(1)) }, 'events: entries'],
    ['an event over the size limit', { ...VALID[0], events: [b(MAX_SEALED_BYTES + 1)] }, 'events: entries'],
    ['ack without upto', { t: 'ack' }, 'ack: fields'],
    ['ack with upto as text', { t: 'ack', upto: '1' }, 'ack: fields'],
    ['want with ids as text', { t: 'want', ids: 'x' }, 'want: fields'],
    ['want with too many ids', { t: 'want', ids: over(MAX_WANT_IDS, 'x') }, 'want: fields'],
    ['want with an empty id', { t: 'want', ids: [''] }, 'want: ids'],
    ['want with a long id', { t: 'want', ids: ['x'.repeat(161)] }, 'want: ids'],
    ['want with an id as bytes', { t: 'want', ids: [b(4)] }, 'want: ids'],
    ['sweep with a field more', { t: 'sweep', after: 0, x: 1 }, 'sweep: fields'],
    ['sweep with a negative after', { t: 'sweep', after: -1 }, 'sweep: fields'],
    ['resent with sweep as a number', { ...VALID[5], sweep: 1 }, 'resent: fields'],
    ['resent with done as text', { ...VALID[5], done: 'no' }, 'resent: fields'],
    ['resent without next', { t: 'resent', events: [], sweep: true, done: true }, 'resent: fields'],
    ['resent with a negative next', { ...VALID[5], next: -1 }, 'resent: entries'],
    ['resent with events as text', { ...VALID[5], events: 'x' }, 'resent: entries'],
    ['a join request with a field more', { ...VALID[6], x: 1 }, 'join-request: fields'],
    ['a join request with a short invitation', { ...VALID[6], inv: b(15) }, 'join-request: sizes'],
    ['a join request with a short signer', { ...VALID[6], signer: b(31) }, 'join-request: sizes'],
    ['a join request with a short endpoint', { ...VALID[6], endpoint: b(31) }, 'join-request: sizes'],
    ['a join request with a short commitment', { ...VALID[6], commit: b(31) }, 'join-request: sizes'],
    ['a join request with a long name', { ...VALID[6], name: 'n'.repeat(MAX_MACHINE_NAME + 1) }, 'join-request: name'],
    ['a join request with a name as bytes', { ...VALID[6], name: b(4) }, 'join-request: name'],
    ['a challenge with a short nonce', { ...VALID[7], nonce: b(31) }, 'join-challenge: fields'],
    ['a challenge with a short signer', { ...VALID[7], signer: b(31) }, 'join-challenge: fields'],
    ['a challenge with a short invitation', { ...VALID[7], inv: b(15) }, 'join-challenge: fields'],
    ['a challenge with a field more', { ...VALID[7], x: 1 }, 'join-challenge: fields'],
    ['a reveal with a short nonce', { ...VALID[8], nonce: b(31) }, 'join-reveal: fields'],
    ['a reveal with a short invitation', { ...VALID[8], inv: b(15) }, 'join-reveal: fields'],
    ['a confirmation with a short invitation', { ...VALID[9], inv: b(15) }, 'join-confirm: fields'],
    [
      'a confirmation with one domain twice',
      {
        ...VALID[9],
        kps: [
          ['GENERAL', b(1)],
          ['GENERAL', b(1)],
        ],
      },
      'join-confirm: key packages',
    ],
    ['a confirmation with a lowercase domain', { ...VALID[9], kps: [['general', b(1)]] }, 'join-confirm: key packages'],
    ['a confirmation with a triple', { ...VALID[9], kps: [['GENERAL', b(1), 1]] }, 'join-confirm: key packages'],
    [
      'a confirmation with a key package as text',
      { ...VALID[9], kps: [['GENERAL', 'kp']] },
      'join-confirm: key packages',
    ],
    [
      'a confirmation with a key package too large',
      { ...VALID[9], kps: [['GENERAL', b(4097)]] },
      'join-confirm: key packages',
    ],
    [
      'a confirmation with too many domains',
      {
        ...VALID[9],
        kps: Array.from({ length: MAX_DOMAIN_ITEMS + 1 }, (_, i) => [`D${String(i).padStart(2, '0')}`, b(1)]),
      },
      'join-confirm: key packages',
    ],
    [
      'a confirmation naming a domain twice',
      {
        ...VALID[9],
        kps: [
          ['GENERAL', b(1)],
          ['GENERAL', b(2)],
        ],
      },
      'join-confirm: key packages',
    ],
    ['want with one empty id among good ones', { t: 'want', ids: ['ab.GENERAL.1', ''] }, 'want: ids'],
    [
      'heads with one too large among good ones',
      { t: 'mls-heads', receipts: [b(1), b(MAX_RECEIPT_BYTES + 1)] },
      'mls-heads: receipts',
    ],
    [
      'an accept with 65 classes',
      { ...VALID[10], classes: over(64, ['device_profiles', 'public']) },
      'join-accept: classes',
    ],
    ['a confirmation with key packages as a map', { ...VALID[9], kps: {} }, 'join-confirm: key packages'],
    ['an accept with a short signer', { ...VALID[10], signer: b(31) }, 'join-accept: fields'],
    ['an accept with a short invitation', { ...VALID[10], inv: b(15) }, 'join-accept: fields'],
    ['an accept with a field more', { ...VALID[10], x: 1 }, 'join-accept: fields'],
    ['an accept with anchors as bytes', { ...VALID[10], anchors: KEY }, 'join-accept: anchors'],
    ['an accept with too many anchors', { ...VALID[10], anchors: over(16, KEY) }, 'join-accept: anchors'],
    ['an accept with a short anchor', { ...VALID[10], anchors: [b(31)] }, 'join-accept: anchors'],
    [
      'an accept with a Welcome too large',
      { ...VALID[10], welcomes: [['GENERAL', b(MAX_BUNDLE_BYTES + 1)]] },
      'join-accept: welcomes',
    ],
    ['an accept with classes as a map', { ...VALID[10], classes: {} }, 'join-accept: classes'],
    ['an accept classing an unknown table', { ...VALID[10], classes: [['nope', 'public']] }, 'join-accept: classes'],
    [
      'an accept with an unknown class',
      { ...VALID[10], classes: [['device_profiles', 'open']] },
      'join-accept: classes',
    ],
    [
      'an accept with a class pair of three',
      { ...VALID[10], classes: [['device_profiles', 'public', 1]] },
      'join-accept: classes',
    ],
    [
      'an accept with too many classes',
      { ...VALID[10], classes: over(64, ['device_profiles', 'public']) },
      'join-accept: classes',
    ],
    ['a refusal without a reason', { t: 'join-refused', inv: INV }, 'join-refused: fields'],
    ['a refusal with a reason as bytes', { t: 'join-refused', inv: INV, reason: b(4) }, 'join-refused: fields'],
    ['a refusal with a short invitation', { t: 'join-refused', inv: b(15), reason: 'x' }, 'join-refused: fields'],
    ['a Welcome for a lowercase domain', { ...VALID[12], domain: 'general' }, 'mls-welcome: fields'],
    ['a Welcome as text', { ...VALID[12], bundle: 'w' }, 'mls-welcome: fields'],
    ['a Welcome too large', { ...VALID[12], bundle: b(MAX_BUNDLE_BYTES + 1) }, 'mls-welcome: bundle too large'],
    ['heads as a map', { t: 'mls-heads', receipts: {} }, 'mls-heads: fields'],
    ['too many heads', { t: 'mls-heads', receipts: over(MAX_RECEIPT_HEADS, b(1)) }, 'mls-heads: fields'],
    ['a head too large', { t: 'mls-heads', receipts: [b(MAX_RECEIPT_BYTES + 1)] }, 'mls-heads: receipts'],
    ['a head as text', { t: 'mls-heads', receipts: ['r'] }, 'mls-heads: receipts'],
    [
      'a group-info request for a lowercase domain',
      { t: 'mls-groupinfo-request', domain: 'x' },
      'mls-groupinfo-request: fields',
    ],
    [
      'a group-info request with a field more',
      { t: 'mls-groupinfo-request', domain: 'GENERAL', x: 1 },
      'mls-groupinfo-request: fields',
    ],
    ['group info too large', { ...VALID[15], info: b(MAX_BUNDLE_BYTES + 1) }, 'mls-groupinfo: fields'],
    ['group info as text', { ...VALID[15], info: 'i' }, 'mls-groupinfo: fields'],
    ['group info for a lowercase domain', { ...VALID[15], domain: 'x' }, 'mls-groupinfo: fields'],
  ])('refuses %s', (_name, message, reason) => {
    expect(reasonOf(message)).toBe(reason);
  });

  it('refuses bytes that are not CBOR, or over the size limit, with the decoder’s reason', () => {
    const notCbor = decodePeerMessage(Uint8Array.of(0xff));
    expect(!notCbor.ok && notCbor.error.reason).toMatch(/^peer-wire: cbor: /);
    const huge = decodePeerMessage(new Uint8Array(MAX_PEER_MESSAGE + 1));
    expect(!huge.ok && huge.error.reason).toMatch(/^peer-wire: cbor: .*exceeds/);
  });

  it('cuts a refusal reason to 256 characters', () => {
    const decoded = decodePeerMessage(encodeCbor({ t: 'join-refused', inv: INV, reason: 'r'.repeat(1000) }));
    expect(decoded.ok && decoded.value.t === 'join-refused' && decoded.value.reason).toBe('r'.repeat(256));
  });
});
