import fc from 'fast-check';
import { blake3 as nobleBlake3 } from '@noble/hashes/blake3.js';
import { describe, expect, it } from 'vitest';
import { toBase64Url, toHex } from '../../src/core/bytes.js';
import { encodeCbor } from '../../src/core/cbor.js';
import { fingerprint, shortFingerprint, topicOf } from '../../src/core/identity.js';
import {
  decodePeerMessage,
  encodePeerMessage,
  MAX_EVENTS_PER_FRAME,
  MAX_PEER_MESSAGE,
  type PeerMessage,
} from '../../src/core/peer-wire.js';
import {
  decodeEndpointMessage,
  decodeRelayMessage,
  encodeRelayMessage,
  MAX_ACK_IDS,
  MAX_FRAME_BODY,
  MAX_RELAY_MESSAGE,
  type EndpointToRelay,
  type RelayToEndpoint,
} from '../../src/core/relay-wire.js';
import type { DomainName } from '../../src/core/schema.js';
import {
  decodeSealed,
  encodeSealed,
  MAX_SEALED_BYTES,
  envelopeId,
  openSealed,
  sealEvent,
  type SealedEvent,
} from '../../src/core/seal.js';
import { decodeTicket, encodeTicket, TICKET_PREFIX, type Ticket } from '../../src/core/ticket.js';
import { seededRandom } from '../helpers/deterministic.js';

const random = seededRandom('seal-tests');
const KEY = random.bytes(32);
const OTHER_KEY = random.bytes(32);
const PLAIN = new TextEncoder().encode('a signed event, opaque to the envelope');
const only =
  (domain: DomainName, gen: number, key: Uint8Array) =>
  (d: DomainName, g: number): Uint8Array | undefined =>
    d === domain && g === gen ? key : undefined;

const sealed = (): SealedEvent => sealEvent(PLAIN, 'GENERAL', 1, KEY, random);
/** Re-encodes an envelope with a changed field, keeping (or recomputing) the id. */
const reencode = (s: SealedEvent, change: Partial<SealedEvent>): Uint8Array => encodeSealed({ ...s, ...change });

describe('sealed envelopes', () => {
  it('round-trips: seal, encode, decode, open', () => {
    const s = sealed();
    const decoded = decodeSealed(encodeSealed(s));
    expect(decoded.ok).toBe(true);
    if (!decoded.ok) return;
    expect(toHex(decoded.value.id)).toBe(toHex(nobleBlake3(s.ct)));
    expect(decoded.value).toMatchObject({ domain: 'GENERAL', gen: 1 });
    const opened = openSealed(decoded.value, only('GENERAL', 1, KEY));
    expect(opened.ok && toHex(opened.value)).toBe(toHex(PLAIN));
  });

  it('labels a non-public lane in the clear, binds it into the AEAD and into the envelope id', () => {
    const trusted = sealEvent(PLAIN, 'GENERAL', 1, KEY, random, 'trusted');
    const decoded = decodeSealed(encodeSealed(trusted));
    expect(decoded.ok && decoded.value.lane).toBe('trusted');
    if (!decoded.ok) return;
    expect(envelopeId(decoded.value)).toBe(`${toHex(trusted.id)}.GENERAL.1.trusted`);
    expect(openSealed(decoded.value, only('GENERAL', 1, KEY)).ok).toBe(true);
    // Relabelled (to public, or to local) it no longer opens.
    const { domain, gen, id, ct } = trusted;
    expect(openSealed({ domain, gen, id, ct }, only('GENERAL', 1, KEY))).toMatchObject({ ok: false });
    expect(openSealed({ ...trusted, lane: 'local' }, only('GENERAL', 1, KEY))).toMatchObject({ ok: false });
    expect(decodeSealed(reencode(trusted, { lane: 'public' as 'local' }))).toMatchObject({
      ok: false,
      error: { type: 'MalformedEnvelope', reason: 'lane' },
    });
  });

  it('is pinned by the seeded random: same seed, same ciphertext', () => {
    const a = sealEvent(PLAIN, 'GENERAL', 1, KEY, seededRandom('pin'));
    const b = sealEvent(PLAIN, 'GENERAL', 1, KEY, seededRandom('pin'));
    expect(toHex(a.ct)).toBe(toHex(b.ct));
    expect(toHex(sealEvent(PLAIN, 'GENERAL', 1, KEY, random).ct)).not.toBe(toHex(a.ct));
  });

  it('wrong domain key → DecryptFailed', () => {
    expect(openSealed(sealed(), only('GENERAL', 1, OTHER_KEY))).toEqual({
      ok: false,
      error: { type: 'DecryptFailed', domain: 'GENERAL', gen: 1 },
    });
  });

  it('missing generation → DomainKeyMissing', () => {
    const s = sealEvent(PLAIN, 'GENERAL', 2, KEY, random);
    expect(openSealed(s, only('GENERAL', 1, KEY))).toEqual({
      ok: false,
      error: { type: 'DomainKeyMissing', domain: 'GENERAL', gen: 2 },
    });
  });

  it('flipped ciphertext bit → OuterIdMismatch; with the id recomputed → DecryptFailed', () => {
    const s = sealed();
    const ct = s.ct.slice();
    ct[20]! ^= 0x01;
    expect(decodeSealed(reencode(s, { ct }))).toEqual({ ok: false, error: { type: 'OuterIdMismatch' } });
    const recomputed = decodeSealed(reencode(s, { ct, id: nobleBlake3(ct) }));
    expect(recomputed.ok).toBe(true);
    if (!recomputed.ok) return;
    expect(openSealed(recomputed.value, only('GENERAL', 1, KEY))).toMatchObject({
      ok: false,
      error: { type: 'DecryptFailed' },
    });
  });

  it.each([
    ['domain relabelled', { domain: 'CONTROL' as const }],
    ['generation relabelled', { gen: 2 }],
  ])('%s → DecryptFailed (domain and generation are bound as associated data)', (_, change) => {
    const decoded = decodeSealed(reencode(sealed(), change));
    expect(decoded.ok).toBe(true);
    if (!decoded.ok) return;
    // The attacker's best case: the reader holds the same key under the new label.
    expect(openSealed(decoded.value, () => KEY)).toMatchObject({ ok: false, error: { type: 'DecryptFailed' } });
  });

  const s = sealed();
  it.each<[string, () => Uint8Array]>([
    ['not CBOR', () => Uint8Array.of(0xff, 0x00)],
    ['not a map', () => encodeCbor([s.domain, s.gen, s.id, s.ct])],
    ['an extra field', () => encodeCbor({ ...s, x: 1 })],
    ['a missing field', () => encodeCbor({ domain: s.domain, gen: s.gen, id: s.id })],
    ['a renamed field', () => encodeCbor({ domain: s.domain, gen: s.gen, id: s.id, cipher: s.ct })],
    ['an ill-formed domain name', () => encodeCbor({ ...s, domain: 'no such domain' })],
    ['generation 0', () => encodeCbor({ ...s, gen: 0 })],
    ['a fractional generation', () => encodeCbor({ ...s, gen: 1.5 })],
    ['an id of 31 bytes', () => encodeCbor({ ...s, id: s.id.subarray(1) })],
    [
      'a ciphertext shorter than nonce and tag',
      () => encodeCbor({ ...s, ct: s.ct.subarray(0, 27), id: nobleBlake3(s.ct.subarray(0, 27)) }),
    ],
    ['an oversize envelope', () => encodeCbor({ ...s, ct: new Uint8Array(MAX_SEALED_BYTES) })],
    ['non-canonical bytes', () => Uint8Array.from([...encodeSealed(s), 0])],
  ])('an envelope with %s → MalformedEnvelope', (_, bytes) => {
    expect(decodeSealed(bytes())).toMatchObject({ ok: false, error: { type: 'MalformedEnvelope' } });
  });

  it('refuses to seal under a key of the wrong size (a caller bug)', () => {
    expect(() => sealEvent(PLAIN, 'GENERAL', 1, KEY.subarray(1), random)).toThrow(/32 bytes/);
  });
});

describe('malformed envelopes: each refused with its reason, before any key is used', () => {
  const good = sealed();
  const ct = good.ct;
  const id = nobleBlake3(ct);
  const shortCt = ct.subarray(0, 12 + 16);
  const base = { domain: 'GENERAL', gen: 1, id, ct };
  it.each([
    ['not a map', encodeCbor([1, 2, 3]), 'fields'],
    ['a bare string', encodeCbor('GENERAL'), 'fields'],
    ['three fields', encodeCbor({ domain: 'GENERAL', gen: 1, id }), 'fields'],
    ['a fifth field that is not lane', encodeCbor({ ...base, extra: 1 }), 'fields'],
    ['six fields', encodeCbor({ ...base, lane: 'trusted', extra: 1 }), 'fields'],
    ['lane public spelled out', encodeCbor({ ...base, lane: 'public' }), 'lane'],
    ['lane of another type', encodeCbor({ ...base, lane: 1 }), 'lane'],
    ['a lowercase domain', encodeCbor({ ...base, domain: 'general' }), 'domain or generation'],
    ['generation 0', encodeCbor({ ...base, gen: 0 }), 'domain or generation'],
    ['a fractional generation', encodeCbor({ ...base, gen: 1.5 }), 'domain or generation'],
    ['a generation as text', encodeCbor({ ...base, gen: '1' }), 'domain or generation'],
    ['a 31-byte id', encodeCbor({ ...base, id: id.subarray(1) }), 'id or ciphertext'],
    ['a ciphertext as text', encodeCbor({ ...base, ct: 'x' }), 'id or ciphertext'],
    [
      'a ciphertext shorter than nonce and tag',
      encodeCbor({ ...base, ct: ct.subarray(0, 27), id: nobleBlake3(ct.subarray(0, 27)) }),
      'id or ciphertext',
    ],
  ] as const)('%s', (_, bytes, reason) => {
    expect(decodeSealed(bytes)).toEqual({ ok: false, error: { type: 'MalformedEnvelope', reason } });
  });

  it('accepts the shortest ciphertext (nonce and tag, empty plaintext) and both lanes', () => {
    const minimal = decodeSealed(encodeCbor({ ...base, ct: shortCt, id: nobleBlake3(shortCt) }));
    expect(minimal.ok).toBe(true);
    for (const lane of ['trusted', 'local'] as const) {
      const decoded = decodeSealed(encodeCbor({ ...base, lane }));
      expect(decoded.ok && decoded.value.lane).toBe(lane);
    }
    const publicLane = decodeSealed(encodeCbor(base));
    expect(publicLane.ok && 'lane' in publicLane.value).toBe(false);
  });

  it('refuses bytes that are not CBOR, with the decoder’s reason', () => {
    const result = decodeSealed(new Uint8Array([0xff, 0x00]));
    expect(result.ok).toBe(false);
    expect(!result.ok && result.error.type).toBe('MalformedEnvelope');
    expect(!result.ok && result.error.type === 'MalformedEnvelope' && result.error.reason).toMatch(/^cbor: /);
  });
});

describe('identity', () => {
  it('topicOf is BLAKE3(secret ‖ "sovereign-sync-v1"), computed independently', () => {
    const secret = random.bytes(32);
    const label = Buffer.from('sovereign-sync-v1', 'utf8');
    const expected = nobleBlake3(Uint8Array.from(Buffer.concat([Buffer.from(secret), label])));
    expect(toHex(topicOf(secret))).toBe(toHex(expected));
    expect(topicOf(secret)).toHaveLength(32);
  });

  it('fingerprints are 16 bytes and shown as four groups of four hex digits', () => {
    const key = random.bytes(32);
    expect(fingerprint(key)).toHaveLength(16);
    expect(shortFingerprint(key)).toMatch(/^[0-9a-f]{4}(-[0-9a-f]{4}){3}$/);
    expect(shortFingerprint(key)).toBe(toHex(fingerprint(key)).slice(0, 16).match(/.{4}/g)!.join('-'));
  });
});

describe('tickets', () => {
  const ticket: Ticket = {
    v: 2,
    secret: random.bytes(32),
    endpoint: random.bytes(32),
    kid: random.bytes(32),
    fp: random.bytes(16),
    relay: 'wss://relay.example.org/sov',
    rk: random.bytes(32),
    inv: random.bytes(16),
  };
  const text = (value: unknown): string => TICKET_PREFIX + toBase64Url(encodeCbor(value));

  it('round-trips, tolerating surrounding whitespace', () => {
    const encoded = encodeTicket(ticket);
    expect(encoded.startsWith('sov1.')).toBe(true);
    const decoded = decodeTicket(`  ${encoded}\n`);
    expect(decoded.ok).toBe(true);
    if (!decoded.ok) return;
    expect(toHex(decoded.value.secret)).toBe(toHex(ticket.secret));
    expect(encodeTicket(decoded.value)).toBe(encoded);
  });

  it.each<[string, string]>([
    ['empty', ''],
    ['another prefix', encodeTicket(ticket).replace('sov1.', 'sov2.')],
    ['not base64url', 'sov1.@@@@'],
    ['a base64url length of 4n+1', 'sov1.AAAAA'],
    ['not CBOR', 'sov1.' + toBase64Url(Uint8Array.of(0xff))],
    ['version 1', text({ ...ticket, v: 1 })],
    ['version 3', text({ ...ticket, v: 3 })],
    ['an extra field', text({ ...ticket, x: 1 })],
    [
      'a missing field',
      text({
        v: 2,
        secret: ticket.secret,
        endpoint: ticket.endpoint,
        fp: ticket.fp,
        relay: ticket.relay,
        inv: ticket.inv,
      }),
    ],
    ['a 31-byte secret', text({ ...ticket, secret: ticket.secret.subarray(1) })],
    ['a 32-byte fingerprint', text({ ...ticket, fp: ticket.secret })],
    ['a 16-byte frame key', text({ ...ticket, kid: ticket.fp })],
    ['a 16-byte relay key', text({ ...ticket, rk: ticket.fp })],
    ['an http relay', text({ ...ticket, relay: 'https://relay.example.org' })],
    ['a relay that is not a URL', text({ ...ticket, relay: 'relay.example.org' })],
    ['too many characters', 'sov1.' + 'A'.repeat(2048)],
  ])('a ticket with %s → InvalidTicket', (_, value) => {
    expect(decodeTicket(value)).toMatchObject({ ok: false, error: { type: 'InvalidTicket' } });
  });
});

describe('relay wire', () => {
  const b = (n: number) => random.bytes(n);
  const endpointMessages: EndpointToRelay[] = [
    { t: 'auth', topic: b(32), endpoint: b(32), sig: b(64), cnonce: b(32) },
    { t: 'auth', topic: b(32), endpoint: b(32), sig: b(64), cnonce: b(32), invite: b(16) },
    { t: 'admit', record: b(300) },
    { t: 'send', to: b(32), body: b(100) },
    { t: 'send', to: b(32), body: new Uint8Array(0) },
    { t: 'ack', ids: [0, 1, 2 ** 40] },
    { t: 'ack', ids: [] },
  ];
  const relayMessages: RelayToEndpoint[] = [
    { t: 'challenge', v: 1, nonce: b(32), relay: b(32) },
    { t: 'ready', endpoint: b(32), proof: b(64) },
    { t: 'admitted', version: 1_700_000_000_000 },
    { t: 'frame', id: 12, from: b(32), body: b(50) },
    { t: 'error', code: 'rate-limited', message: 'slow down' },
  ];

  it.each(endpointMessages)('endpoint → relay $t round-trips', (m) => {
    expect(decodeEndpointMessage(encodeRelayMessage(m))).toEqual({ ok: true, value: m });
  });

  it.each(relayMessages)('relay → endpoint $t round-trips', (m) => {
    expect(decodeRelayMessage(encodeRelayMessage(m))).toEqual({ ok: true, value: m });
  });

  it('round-trips any send frame (property)', () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 32, maxLength: 32 }), fc.uint8Array({ maxLength: 2000 }), (to, body) => {
        const decoded = decodeEndpointMessage(encodeRelayMessage({ t: 'send', to, body }));
        expect(decoded.ok && toHex(decoded.value.t === 'send' ? decoded.value.body : new Uint8Array(1))).toBe(
          toHex(body),
        );
      }),
    );
  });

  it.each<[string, unknown]>([
    ['auth with a 31-byte topic', { t: 'auth', topic: b(31), endpoint: b(32), sig: b(64) }],
    ['auth with a 63-byte signature', { t: 'auth', topic: b(32), endpoint: b(32), sig: b(63) }],
    ['auth with an extra field', { t: 'auth', topic: b(32), endpoint: b(32), sig: b(64), x: 1 }],
    ['send with a missing body', { t: 'send', to: b(32) }],
    ['send with a string body', { t: 'send', to: b(32), body: 'hi' }],
    ['send with a body over the limit', { t: 'send', to: b(32), body: new Uint8Array(MAX_FRAME_BODY + 1) }],
    ['a message over the size limit', { t: 'send', to: b(32), body: new Uint8Array(MAX_RELAY_MESSAGE) }],
    ['ack with a negative id', { t: 'ack', ids: [-1] }],
    ['ack with too many ids', { t: 'ack', ids: Array.from({ length: MAX_ACK_IDS + 1 }, (_, i) => i) }],
    ['an unknown t', { t: 'hello' }],
    ['a relay-only message', { t: 'ready', endpoint: b(32), proof: b(64) }],
    ['auth without a client nonce', { t: 'auth', topic: b(32), endpoint: b(32), sig: b(64) }],
    [
      'auth with a 15-byte invite',
      { t: 'auth', topic: b(32), endpoint: b(32), sig: b(64), cnonce: b(32), invite: b(15) },
    ],
    ['admit without a record', { t: 'admit' }],
    ['no t', { to: b(32), body: b(1) }],
    ['not a map', [1, 2]],
  ])('endpoint → relay: %s → MalformedFrame', (_, value) => {
    expect(decodeEndpointMessage(encodeCbor(value))).toMatchObject({ ok: false, error: { type: 'MalformedFrame' } });
  });

  it.each<[string, unknown]>([
    ['challenge with a 16-byte nonce', { t: 'challenge', v: 1, nonce: b(16), relay: b(32) }],
    ['challenge without the relay key', { t: 'challenge', v: 1, nonce: b(32) }],
    ['ready with an extra field', { t: 'ready', endpoint: b(32), proof: b(64), x: 0 }],
    ['ready without a proof', { t: 'ready', endpoint: b(32) }],
    ['frame with a fractional id', { t: 'frame', id: 1.5, from: b(32), body: b(1) }],
    ['frame with a 33-byte sender', { t: 'frame', id: 1, from: b(33), body: b(1) }],
    ['error with a numeric code', { t: 'error', code: 7, message: 'x' }],
    ['an endpoint-only message', { t: 'send', to: b(32), body: b(1) }],
  ])('relay → endpoint: %s → MalformedFrame', (_, value) => {
    expect(decodeRelayMessage(encodeCbor(value))).toMatchObject({ ok: false, error: { type: 'MalformedFrame' } });
  });

  it('refuses non-canonical and garbage bytes', () => {
    const bytes = encodeRelayMessage({ t: 'ack', ids: [1] });
    expect(decodeEndpointMessage(Uint8Array.from([...bytes, 0])).ok).toBe(false);
    expect(decodeEndpointMessage(random.bytes(64)).ok).toBe(false);
  });
});

describe('peer wire', () => {
  const b = (n: number) => random.bytes(n);
  const messages: PeerMessage[] = [
    { t: 'events', after: 7, upto: 9, events: [b(100), b(200)] },
    { t: 'events', after: 0, upto: 0, events: [] },
    { t: 'want', ids: ['ab.GENERAL.1', 'cd.CONTROL.1'] },
    { t: 'sweep', after: 12 },
    { t: 'resent', events: [b(100)], sweep: true, next: 40, done: false },
    { t: 'ack', upto: 42 },
    { t: 'join-request', inv: b(16), signer: b(32), endpoint: b(32), name: 'laptop', commit: b(32) },
    { t: 'join-challenge', inv: b(16), signer: b(32), nonce: b(32) },
    { t: 'join-reveal', inv: b(16), nonce: b(32) },
    {
      t: 'join-confirm',
      inv: b(16),
      kps: [
        ['CONTROL', b(300)],
        ['GENERAL', b(300)],
      ],
    },
    {
      t: 'join-accept',
      inv: b(16),
      signer: b(32),
      anchors: [b(32)],
      welcomes: [['CONTROL', b(900)]],
      classes: [['device_profiles', 'trusted']],
    },
    { t: 'mls-welcome', domain: 'RESTRICTED', bundle: b(900) },
    { t: 'mls-heads', receipts: [b(200), b(200)] },
    { t: 'mls-groupinfo-request', domain: 'GENERAL' },
    { t: 'mls-groupinfo', domain: 'GENERAL', info: b(700) },
    { t: 'join-refused', inv: b(16), reason: 'ticket already used' },
  ];

  it.each(messages)('$t round-trips', (m) => {
    expect(decodePeerMessage(encodePeerMessage(m))).toEqual({ ok: true, value: m });
  });

  it.each<[string, unknown]>([
    ['events with a negative upto', { t: 'events', after: 0, upto: -1, events: [] }],
    ['events with after beyond upto', { t: 'events', after: 5, upto: 4, events: [] }],
    ['events without after', { t: 'events', upto: 1, events: [] }],
    ['events with a string entry', { t: 'events', after: 0, upto: 1, events: ['x'] }],
    [
      'events with too many entries',
      { t: 'events', after: 0, upto: 1, events: Array.from({ length: MAX_EVENTS_PER_FRAME + 1 }, () => b(1)) },
    ],
    [
      'events with an oversize entry',
      { t: 'events', after: 0, upto: 1, events: [new Uint8Array(MAX_SEALED_BYTES + 1)] },
    ],
    ['events with an extra field', { t: 'events', after: 0, upto: 1, events: [], x: 1 }],
    ['events with again not true', { t: 'events', after: 0, upto: 1, events: [], again: false }],
    [
      'a message over the size limit',
      { t: 'events', after: 0, upto: 1, events: Array.from({ length: 14 }, () => new Uint8Array(MAX_SEALED_BYTES)) },
    ],
    ['ack with a fractional upto', { t: 'ack', upto: 0.5 }],
    [
      'join-request with a 15-byte invitation',
      { t: 'join-request', inv: b(15), signer: b(32), endpoint: b(32), name: 'x', commit: b(32) },
    ],
    [
      'join-request with a long name',
      { t: 'join-request', inv: b(16), signer: b(32), endpoint: b(32), name: 'x'.repeat(65), commit: b(32) },
    ],
    [
      'join-accept still carrying raw keys',
      { t: 'join-accept', inv: b(16), signer: b(32), anchors: [], keys: [], classes: [] },
    ],
    [
      'join-accept with an ill-formed domain name',
      { t: 'join-accept', inv: b(16), signer: b(32), anchors: [], welcomes: [['x y', b(10)]], classes: [] },
    ],
    [
      'join-accept with one domain twice',
      {
        t: 'join-accept',
        inv: b(16),
        signer: b(32),
        anchors: [],
        welcomes: [
          ['GENERAL', b(10)],
          ['GENERAL', b(10)],
        ],
        classes: [],
      },
    ],
    ['join-confirm without key packages', { t: 'join-confirm', inv: b(16) }],
    ['join-confirm with an oversized key package', { t: 'join-confirm', inv: b(16), kps: [['GENERAL', b(5000)]] }],
    ['mls-welcome for an ill-formed domain', { t: 'mls-welcome', domain: 'general', bundle: b(10) }],
    ['mls-groupinfo without its GroupInfo', { t: 'mls-groupinfo', domain: 'GENERAL' }],
    ['mls-groupinfo-request for an ill-formed domain', { t: 'mls-groupinfo-request', domain: '' }],
    ['mls-heads with too many receipts', { t: 'mls-heads', receipts: Array.from({ length: 65 }, () => b(10)) }],
    [
      'join-accept with a class for an unknown table',
      { t: 'join-accept', inv: b(16), signer: b(32), anchors: [], welcomes: [], classes: [['nope', 'public']] },
    ],
    [
      'join-accept with an unknown class',
      {
        t: 'join-accept',
        inv: b(16),
        signer: b(32),
        anchors: [],
        welcomes: [],
        classes: [['device_profiles', 'open']],
      },
    ],
    ['join-accept without classes', { t: 'join-accept', inv: b(16), signer: b(32), anchors: [], keys: [] }],
    ['join-refused without a reason', { t: 'join-refused', inv: b(16) }],
    ['an unknown t', { t: 'gossip' }],
    ['not a map', 'events'],
  ])('%s → MalformedMessage', (_, value) => {
    expect(decodePeerMessage(encodeCbor(value))).toMatchObject({ ok: false, error: { type: 'MalformedMessage' } });
  });

  it('bounds the whole message before decoding it', () => {
    const big = encodeCbor({
      t: 'events',
      after: 0,
      upto: 1,
      events: Array.from({ length: 14 }, () => new Uint8Array(MAX_SEALED_BYTES)),
    });
    expect(big.length).toBeGreaterThan(MAX_PEER_MESSAGE);
    expect(decodePeerMessage(big)).toMatchObject({ ok: false, error: { reason: /exceeds/ } });
    const relayBig = encodeCbor({ t: 'send', to: b(32), body: new Uint8Array(MAX_RELAY_MESSAGE) });
    expect(decodeEndpointMessage(relayBig)).toMatchObject({ ok: false, error: { reason: /exceeds/ } });
    const justOver = encodeCbor({ t: 'send', to: b(32), body: new Uint8Array(MAX_FRAME_BODY + 1) });
    expect(decodeEndpointMessage(justOver)).toMatchObject({ ok: false, error: { reason: /send: body exceeds limit/ } });
  });

  it('truncates an overlong refusal reason rather than echoing it', () => {
    const decoded = decodePeerMessage(encodeCbor({ t: 'join-refused', inv: b(16), reason: 'r'.repeat(1000) }));
    expect(decoded.ok && decoded.value.t === 'join-refused' && decoded.value.reason.length).toBe(256);
  });
});
