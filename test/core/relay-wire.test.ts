/**
 * The relay wire protocol's messages (core/relay-wire.ts), each way: every message type
 * round-trips; a missing, extra, mistyped or mis-sized field is refused with its exact reason;
 * every bound is accepted at its limit and refused one past it; the texts a relay may send
 * are cut to their bounds. The two signed payloads are pinned byte for byte.
 */
import { describe, expect, it } from 'vitest';
import { toHex, utf8 } from '../../src/core/bytes.js';
import { encodeCbor } from '../../src/core/cbor.js';
import {
  decodeEndpointMessage,
  decodeRelayMessage,
  encodeRelayMessage,
  MAX_ACK_IDS,
  MAX_ADMISSION_RECORD,
  MAX_COMMIT_PAGE,
  MAX_FRAME_BODY,
  MAX_WIRE_BUNDLE,
  relayAuthPayload,
  relayProofPayload,
  type EndpointToRelay,
  type RelayToEndpoint,
} from '../../src/core/relay-wire.js';

const b = (n: number, fill = 1) => new Uint8Array(n).fill(fill);
const malformed = (reason: string) => ({
  ok: false,
  error: { type: 'MalformedFrame', reason: `relay-wire: ${reason}` },
});
const toRelay = (m: Record<string, unknown>) => decodeEndpointMessage(encodeCbor(m));
const toEndpoint = (m: Record<string, unknown>) => decodeRelayMessage(encodeCbor(m));

describe('signed payloads', () => {
  it('pins the auth and proof payloads: label, then the fields in order', () => {
    expect(toHex(relayAuthPayload(b(1, 0xa1), b(1, 0xb2), b(1, 0xc3)))).toBe(
      toHex(utf8('sov/1/relay-auth')) + 'a1b2c3',
    );
    expect(toHex(relayProofPayload(b(1, 0xa1), b(1, 0xd4), b(1, 0xb2), b(1, 0xc3)))).toBe(
      toHex(utf8('sov/1/relay-proof')) + 'a1d4b2c3',
    );
    expect(toHex(utf8('sov/1/relay-auth'))).toBe('736f762f312f72656c61792d61757468');
  });
});

describe('endpoint → relay', () => {
  const valid: EndpointToRelay[] = [
    { t: 'auth', topic: b(32), endpoint: b(32, 2), sig: b(64, 3), cnonce: b(32, 4) },
    { t: 'auth', topic: b(32), endpoint: b(32, 2), sig: b(64, 3), cnonce: b(32, 4), invite: b(16, 5) },
    { t: 'admit', record: b(10) },
    { t: 'send', to: b(32), body: b(0) },
    { t: 'ack', ids: [0, 1, 2 ** 40] },
    { t: 'ack', ids: [] },
    { t: 'pong', n: 7 },
    { t: 'commit', rid: 1, bundle: b(3) },
    { t: 'commits', rid: 2, group: b(1), from: 0 },
  ];

  it.each(valid.map((m) => [m.t, m] as const))('round-trips %s', (_t, message) => {
    expect(decodeEndpointMessage(encodeRelayMessage(message))).toEqual({ ok: true, value: message });
  });

  const auth = { t: 'auth', topic: b(32), endpoint: b(32), sig: b(64), cnonce: b(32) };
  it.each<[string, Record<string, unknown>, string]>([
    ['auth without cnonce', { ...auth, cnonce: undefined }, 'auth: fields'],
    ['auth with an extra field', { ...auth, x: 1 }, 'auth: fields'],
    ['auth with a short topic', { ...auth, topic: b(31) }, 'auth: field sizes'],
    ['auth with a long endpoint', { ...auth, endpoint: b(33) }, 'auth: field sizes'],
    ['auth with a short signature', { ...auth, sig: b(63) }, 'auth: field sizes'],
    ['auth with a short cnonce', { ...auth, cnonce: b(31) }, 'auth: field sizes'],
    ['auth with a long invite', { ...auth, invite: b(17) }, 'auth: invite size'],
    ['auth with a text invite', { ...auth, invite: 'x' }, 'auth: invite size'],
    ['admit of text', { t: 'admit', record: 'x' }, 'admit: fields'],
    ['admit with an extra field', { t: 'admit', record: b(1), x: 1 }, 'admit: fields'],
    ['admit over its bound', { t: 'admit', record: b(MAX_ADMISSION_RECORD + 1) }, 'admit: fields'],
    ['send without body', { t: 'send', to: b(32) }, 'send: fields'],
    ['send to a short id', { t: 'send', to: b(31), body: b(1) }, 'send: field types'],
    ['send of a text body', { t: 'send', to: b(32), body: 'x' }, 'send: field types'],
    ['send over the frame bound', { t: 'send', to: b(32), body: b(MAX_FRAME_BODY + 1) }, 'send: body exceeds limit'],
    ['ack of one id', { t: 'ack', ids: 1 }, 'ack: ids'],
    ['ack with a field renamed', { t: 'ack', idz: [] }, 'ack: fields'],
    ['ack with an extra field', { t: 'ack', ids: [], x: 1 }, 'ack: fields'],
    ['ack of a negative id', { t: 'ack', ids: [1, -1] }, 'ack: ids'],
    ['ack of a fraction', { t: 'ack', ids: [1.5] }, 'ack: ids'],
    ['ack of too many ids', { t: 'ack', ids: new Array<number>(MAX_ACK_IDS + 1).fill(0) }, 'ack: ids'],
    ['pong of text', { t: 'pong', n: 'x' }, 'pong: fields'],
    ['pong with an extra field', { t: 'pong', n: 1, x: 1 }, 'pong: fields'],
    ['commit without rid', { t: 'commit', bundle: b(1) }, 'commit: fields'],
    ['commit of a negative rid', { t: 'commit', rid: -1, bundle: b(1) }, 'commit: fields'],
    ['commit of a text bundle', { t: 'commit', rid: 1, bundle: 'x' }, 'commit: fields'],
    [
      'commit over the bundle bound',
      { t: 'commit', rid: 1, bundle: b(MAX_WIRE_BUNDLE + 1) },
      'commit: bundle exceeds limit',
    ],
    ['commits without from', { t: 'commits', rid: 1, group: b(1) }, 'commits: fields'],
    ['commits of a text rid', { t: 'commits', rid: 'x', group: b(1), from: 0 }, 'commits: fields'],
    ['commits from a fraction', { t: 'commits', rid: 1, group: b(1), from: 0.5 }, 'commits: fields'],
    ['commits of an empty group', { t: 'commits', rid: 1, group: b(0), from: 0 }, 'commits: group'],
    ['commits of a long group', { t: 'commits', rid: 1, group: b(256), from: 0 }, 'commits: group'],
    ['commits of a text group', { t: 'commits', rid: 1, group: 'x', from: 0 }, 'commits: group'],
    ['a relay message', { t: 'ping', n: 1 }, 'unknown message type'],
    ['an untagged map', { n: 1 }, 'not a tagged map'],
    ['a number tag', { t: 1 }, 'not a tagged map'],
  ])('refuses %s', (_name, message, reason) => {
    const clean = Object.fromEntries(Object.entries(message).filter(([, v]) => v !== undefined));
    expect(toRelay(clean)).toEqual(malformed(reason));
  });

  it('refuses what is not a map, or not CBOR, with the decoder’s reason', () => {
    expect(decodeEndpointMessage(encodeCbor([1]))).toEqual(malformed('not a tagged map'));
    expect(decodeEndpointMessage(Uint8Array.of(0x01, 0x01))).toEqual(malformed('cbor: 1 trailing bytes at byte 1'));
  });

  it('accepts every bound at its limit', () => {
    expect(toRelay({ t: 'admit', record: b(MAX_ADMISSION_RECORD) }).ok).toBe(true);
    expect(toRelay({ t: 'send', to: b(32), body: b(MAX_FRAME_BODY) }).ok).toBe(true);
    expect(toRelay({ t: 'ack', ids: new Array<number>(MAX_ACK_IDS).fill(0) }).ok).toBe(true);
    expect(toRelay({ t: 'commit', rid: 1, bundle: b(MAX_WIRE_BUNDLE) }).ok).toBe(true);
    expect(toRelay({ t: 'commits', rid: 1, group: b(255), from: 0 }).ok).toBe(true);
  });

  it('keeps no invite field when none was sent', () => {
    const decoded = toRelay(auth);
    expect(decoded.ok && 'invite' in decoded.value).toBe(false);
  });
});

describe('relay → endpoint', () => {
  const valid: RelayToEndpoint[] = [
    { t: 'challenge', v: 1, nonce: b(32), relay: b(32, 2) },
    { t: 'ready', endpoint: b(32), proof: b(64) },
    { t: 'ready', endpoint: b(32), proof: b(64), admission: 7 },
    { t: 'admitted', version: 3 },
    { t: 'frame', id: 9, from: b(32), body: b(2) },
    { t: 'error', code: 'mailbox-full', message: 'full' },
    { t: 'ping', n: 4 },
    { t: 'sequenced', rid: 1, receipt: b(5) },
    { t: 'refused', rid: 1, code: 'EpochTaken', reason: 'late', receipt: b(1), bundle: b(2) },
    { t: 'commit-log', rid: 1, items: [[b(1), b(2)]] },
    { t: 'commit-log', rid: 1, items: [] },
    { t: 'accepted', receipt: b(1), bundle: b(2) },
  ];

  it.each(valid.map((m) => [m.t, m] as const))('round-trips %s', (_t, message) => {
    expect(decodeRelayMessage(encodeRelayMessage(message))).toEqual({ ok: true, value: message });
  });

  const refused = { t: 'refused', rid: 1, code: 'c', reason: 'r', receipt: b(1), bundle: b(1) };
  it.each<[string, Record<string, unknown>, string]>([
    ['challenge with a short nonce', { t: 'challenge', v: 1, nonce: b(31), relay: b(32) }, 'challenge: fields'],
    ['challenge of a text version', { t: 'challenge', v: 'x', nonce: b(32), relay: b(32) }, 'challenge: fields'],
    ['challenge with an extra field', { t: 'challenge', v: 1, nonce: b(32), relay: b(32), x: 1 }, 'challenge: fields'],
    ['challenge with a short relay key', { t: 'challenge', v: 1, nonce: b(32), relay: b(31) }, 'challenge: relay key'],
    ['ready with a short proof', { t: 'ready', endpoint: b(32), proof: b(63) }, 'ready: fields'],
    ['ready with a short endpoint', { t: 'ready', endpoint: b(31), proof: b(64) }, 'ready: fields'],
    ['ready with an extra field', { t: 'ready', endpoint: b(32), proof: b(64), x: 1 }, 'ready: fields'],
    [
      'ready of a negative admission version',
      { t: 'ready', endpoint: b(32), proof: b(64), admission: -1 },
      'ready: admission version',
    ],
    [
      'ready of a text admission version',
      { t: 'ready', endpoint: b(32), proof: b(64), admission: '7' },
      'ready: admission version',
    ],
    ['admitted of a negative version', { t: 'admitted', version: -1 }, 'admitted: fields'],
    ['admitted with an extra field', { t: 'admitted', version: 1, x: 1 }, 'admitted: fields'],
    ['frame of a text id', { t: 'frame', id: 'x', from: b(32), body: b(1) }, 'frame: fields'],
    ['frame from a short id', { t: 'frame', id: 1, from: b(31), body: b(1) }, 'frame: fields'],
    ['frame of a text body', { t: 'frame', id: 1, from: b(32), body: 'x' }, 'frame: fields'],
    ['frame without body', { t: 'frame', id: 1, from: b(32) }, 'frame: fields'],
    ['error of a number code', { t: 'error', code: 1, message: 'm' }, 'error: fields'],
    ['error of a bytes message', { t: 'error', code: 'c', message: b(1) }, 'error: fields'],
    ['error with an extra field', { t: 'error', code: 'c', message: 'm', x: 1 }, 'error: fields'],
    ['ping of a fraction', { t: 'ping', n: 0.5 }, 'ping: fields'],
    ['ping with an extra field', { t: 'ping', n: 1, x: 1 }, 'ping: fields'],
    ['sequenced of a text receipt', { t: 'sequenced', rid: 1, receipt: 'x' }, 'sequenced: fields'],
    ['sequenced of a negative rid', { t: 'sequenced', rid: -1, receipt: b(1) }, 'sequenced: fields'],
    ['sequenced with an extra field', { t: 'sequenced', rid: 1, receipt: b(1), x: 1 }, 'sequenced: fields'],
    ['refused without bundle', { ...refused, bundle: undefined }, 'refused'],
    ['refused of a text rid', { ...refused, rid: 'x' }, 'refused'],
    ['refused of a number code', { ...refused, code: 1 }, 'refused: field types'],
    ['refused of a bytes reason', { ...refused, reason: b(1) }, 'refused: field types'],
    ['refused of a text receipt', { ...refused, receipt: 'x' }, 'refused: field types'],
    ['refused of a text bundle', { ...refused, bundle: 'x' }, 'refused: field types'],
    ['commit-log of one item', { t: 'commit-log', rid: 1, items: b(1) }, 'commit-log'],
    ['commit-log of a text rid', { t: 'commit-log', rid: 'x', items: [] }, 'commit-log'],
    ['commit-log with an extra field', { t: 'commit-log', rid: 1, items: [], x: 1 }, 'commit-log'],
    [
      'commit-log of too many items',
      { t: 'commit-log', rid: 1, items: new Array(MAX_COMMIT_PAGE + 1).fill([b(1), b(1)]) },
      'commit-log: too many items',
    ],
    ['commit-log of a lone receipt', { t: 'commit-log', rid: 1, items: [[b(1)]] }, 'commit-log: items'],
    ['commit-log of a triple', { t: 'commit-log', rid: 1, items: [[b(1), b(1), b(1)]] }, 'commit-log: items'],
    ['commit-log of a text receipt', { t: 'commit-log', rid: 1, items: [['x', b(1)]] }, 'commit-log: items'],
    ['commit-log of a text bundle', { t: 'commit-log', rid: 1, items: [[b(1), 'x']] }, 'commit-log: items'],
    ['commit-log of a bare bytes item', { t: 'commit-log', rid: 1, items: [b(2)] }, 'commit-log: items'],
    ['accepted of a text bundle', { t: 'accepted', receipt: b(1), bundle: 'x' }, 'accepted: fields'],
    ['accepted of a text receipt', { t: 'accepted', receipt: 'x', bundle: b(1) }, 'accepted: fields'],
    ['accepted with an extra field', { t: 'accepted', receipt: b(1), bundle: b(1), x: 1 }, 'accepted: fields'],
    ['an endpoint message', { t: 'pong', n: 1 }, 'unknown message type'],
  ])('refuses %s', (_name, message, reason) => {
    const clean = Object.fromEntries(Object.entries(message).filter(([, v]) => v !== undefined));
    expect(toEndpoint(clean)).toEqual(malformed(reason));
  });

  it('refuses what is not CBOR with the decoder’s reason', () => {
    expect(decodeRelayMessage(Uint8Array.of(0x01, 0x01))).toEqual(malformed('cbor: 1 trailing bytes at byte 1'));
    expect(decodeRelayMessage(encodeCbor('challenge'))).toEqual(malformed('not a tagged map'));
  });

  it('accepts a full commit page', () => {
    const items = new Array(MAX_COMMIT_PAGE).fill([b(1), b(2)]);
    expect(toEndpoint({ t: 'commit-log', rid: 1, items })).toEqual({
      ok: true,
      value: { t: 'commit-log', rid: 1, items },
    });
  });

  it('cuts the texts a relay sends to their bounds', () => {
    const long = 'x'.repeat(600);
    expect(toEndpoint({ t: 'error', code: 'malformed', message: long })).toEqual({
      ok: true,
      value: { t: 'error', code: 'malformed', message: 'x'.repeat(512) },
    });
    expect(toEndpoint({ ...refused, code: long, reason: long })).toEqual({
      ok: true,
      value: { ...refused, code: 'x'.repeat(64), reason: 'x'.repeat(512) },
    });
  });
});
