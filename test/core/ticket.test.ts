/**
 * Pairing tickets refused with their reasons (src/core/ticket.ts): a pasted ticket is
 * untrusted text; everything but a well-formed ticket is a typed refusal that says why.
 */
import { describe, expect, it } from 'vitest';
import { toBase64Url } from '../../src/core/bytes.js';
import { encodeCbor } from '../../src/core/cbor.js';
import { decodeTicket, encodeTicket, MAX_TICKET_CHARS, TICKET_PREFIX, type Ticket } from '../../src/core/ticket.js';

const b = (n: number, fill: number) => new Uint8Array(n).fill(fill);
const TICKET: Ticket = {
  v: 2,
  secret: b(32, 1),
  endpoint: b(32, 2),
  kid: b(32, 3),
  fp: b(16, 4),
  relay: 'wss://relay.example:8443/ws',
  rk: b(32, 5),
  inv: b(16, 6),
};
const text = (value: unknown) => TICKET_PREFIX + toBase64Url(encodeCbor(value));
const reasonOf = (t: string) => {
  const r = decodeTicket(t);
  if (r.ok) return 'accepted';
  expect(r.error.type).toBe('InvalidTicket');
  return r.error.reason;
};

describe('decodeTicket', () => {
  it('reads back what was written, around spaces and line breaks a paste adds', () => {
    const decoded = decodeTicket(`  ${encodeTicket(TICKET)}\n`);
    expect(decoded.ok && decoded.value.relay).toBe(TICKET.relay);
    expect(reasonOf(text({ ...TICKET, relay: 'ws://127.0.0.1:1/ws' }))).toBe('accepted');
    expect(reasonOf(text({ ...TICKET, relay: `wss://r.example/${'p'.repeat(512 - 'wss://r.example/'.length)}` }))).toBe(
      'accepted',
    );
  });

  it.each<[string, string, string | RegExp]>([
    ['too long', `${TICKET_PREFIX}${'A'.repeat(MAX_TICKET_CHARS)}`, 'too long'],
    ['without the prefix', toBase64Url(encodeCbor(TICKET)), 'not a sov1 ticket'],
    ['another version of the prefix', `sov2.${toBase64Url(encodeCbor(TICKET))}`, 'not a sov1 ticket'],
    ['not base64url', `${TICKET_PREFIX}not base64!`, 'not base64url'],
    ['not CBOR', `${TICKET_PREFIX}_w`, /^cbor: /],
    ['version 1', text({ ...TICKET, v: 1 }), 'unsupported version or fields'],
    ['a field more', text({ ...TICKET, extra: 1 }), 'unsupported version or fields'],
    ['a list', text([TICKET]), 'unsupported version or fields'],
    ['a short secret', text({ ...TICKET, secret: b(31, 1) }), 'field sizes'],
    ['a short endpoint', text({ ...TICKET, endpoint: b(31, 1) }), 'field sizes'],
    ['a short frame key', text({ ...TICKET, kid: b(31, 1) }), 'field sizes'],
    ['a long fingerprint', text({ ...TICKET, fp: b(32, 1) }), 'field sizes'],
    ['a short invitation', text({ ...TICKET, inv: b(15, 1) }), 'field sizes'],
    ['an http relay', text({ ...TICKET, relay: 'https://relay.example/ws' }), 'relay must be a ws: or wss: URL'],
    ['a relay that is no URL', text({ ...TICKET, relay: 'relay' }), 'relay must be a ws: or wss: URL'],
    ['a relay URL as bytes', text({ ...TICKET, relay: b(8, 0x77) }), 'relay must be a ws: or wss: URL'],
    // URL() would read the one-element list as its string: only a string is a URL here.
    [
      'a relay URL inside a list',
      text({ ...TICKET, relay: ['wss://relay.example/ws'] }),
      'relay must be a ws: or wss: URL',
    ],
    [
      'a relay URL over 512 characters',
      text({ ...TICKET, relay: `wss://r.example/${'p'.repeat(513 - 'wss://r.example/'.length)}` }),
      'relay must be a ws: or wss: URL',
    ],
    ['a short relay key', text({ ...TICKET, rk: b(31, 1) }), 'relay key size'],
  ])('refuses %s', (_name, ticket, reason) => {
    if (typeof reason === 'string') expect(reasonOf(ticket)).toBe(reason);
    else expect(reasonOf(ticket)).toMatch(reason);
  });

  it('accepts exactly the longest ticket, and refuses one character more', () => {
    const longest = `${TICKET_PREFIX}${'A'.repeat(MAX_TICKET_CHARS - TICKET_PREFIX.length)}`;
    expect(reasonOf(longest)).not.toBe('too long');
    expect(reasonOf(`${longest}A`)).toBe('too long');
  });
});
