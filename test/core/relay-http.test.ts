/**
 * The HTTP mailbox codec (core/relay-http.ts): every message round-trips through canonical
 * CBOR (fast-check), the signing payload binds each of its inputs, and out-of-bound input is
 * refused with its typed code before anything is allocated for it.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { bytesEqual, toBase64Url } from '../../src/core/bytes.js';
import { encodeCbor } from '../../src/core/cbor.js';
import {
  MAX_FETCH_LIMIT,
  decodeAuthHeader,
  decodeErrorBody,
  decodeMailboxRequest,
  decodeMailboxResponse,
  encodeAuthHeader,
  encodeMailboxBody,
  httpSigningPayload,
  isFresh,
} from '../../src/core/relay-http.js';
import { MAX_ACK_IDS, MAX_FRAME_BODY } from '../../src/core/relay-wire.js';

const bytes = (n: number) => fc.uint8Array({ minLength: n, maxLength: n });
const uint = fc.nat({ max: Number.MAX_SAFE_INTEGER });

describe('relay-http codec', () => {
  it('round-trips the auth header', () => {
    const auth = fc.record({ topic: bytes(32), endpoint: bytes(32), ts: uint, nonce: bytes(16), sig: bytes(64) });
    fc.assert(
      fc.property(auth, (a) => {
        expect(decodeAuthHeader(encodeAuthHeader(a))).toEqual({ ok: true, value: a });
      }),
    );
  });

  it('round-trips every request and response body', () => {
    fc.assert(
      fc.property(uint, fc.integer({ min: 1, max: MAX_FETCH_LIMIT }), (after, limit) => {
        expect(decodeMailboxRequest('fetch', encodeMailboxBody({ after, limit }))).toEqual({
          ok: true,
          value: { after, limit },
        });
      }),
    );
    fc.assert(
      fc.property(fc.array(uint, { maxLength: 50 }), (ids) => {
        expect(decodeMailboxRequest('ack', encodeMailboxBody({ ids }))).toEqual({ ok: true, value: { ids } });
      }),
    );
    fc.assert(
      fc.property(bytes(32), fc.uint8Array({ maxLength: 300 }), (to, body) => {
        expect(decodeMailboxRequest('send', encodeMailboxBody({ to, body }))).toEqual({
          ok: true,
          value: { to, body },
        });
      }),
    );
    const frame = fc.record({ from: bytes(32), body: fc.uint8Array({ maxLength: 64 }) });
    fc.assert(
      fc.property(fc.array(frame, { maxLength: 20 }), fc.boolean(), (list, more) => {
        const frames = list.map((f, i) => ({ id: i + 1, ...f }));
        expect(decodeMailboxResponse('fetch', encodeMailboxBody({ frames, more }))).toEqual({
          ok: true,
          value: { frames, more },
        });
      }),
    );
    expect(decodeMailboxResponse('ack', encodeMailboxBody({ acked: 3 }))).toEqual({ ok: true, value: { acked: 3 } });
    expect(decodeMailboxResponse('send', encodeMailboxBody({ id: 9 }))).toEqual({ ok: true, value: { id: 9 } });
    const refusal = { code: 'stale', message: 'x' } as const;
    expect(decodeErrorBody(encodeMailboxBody(refusal))).toEqual({ ok: true, value: refusal });
  });

  it('binds method, path, time, nonce, body, topic and endpoint into the signed bytes', () => {
    const base = [
      'POST',
      '/api/v1/mailbox/ack',
      5,
      new Uint8Array(16),
      new Uint8Array(3),
      new Uint8Array(32),
      new Uint8Array(32),
    ] as const;
    const reference = httpSigningPayload(...base);
    const variants: Parameters<typeof httpSigningPayload>[] = [
      ['GET', base[1], base[2], base[3], base[4], base[5], base[6]],
      [base[0], '/api/v1/mailbox/send', base[2], base[3], base[4], base[5], base[6]],
      [base[0], base[1], 6, base[3], base[4], base[5], base[6]],
      [base[0], base[1], base[2], new Uint8Array(16).fill(1), base[4], base[5], base[6]],
      [base[0], base[1], base[2], base[3], new Uint8Array(4), base[5], base[6]],
      [base[0], base[1], base[2], base[3], base[4], new Uint8Array(32).fill(1), base[6]],
      [base[0], base[1], base[2], base[3], base[4], base[5], new Uint8Array(32).fill(1)],
    ];
    for (const v of variants) expect(bytesEqual(httpSigningPayload(...v), reference)).toBe(false);
  });

  it('refuses out-of-bound input with its typed code', () => {
    const code = (r: { ok: boolean; error?: { code: string } }) => (r.ok ? 'ok' : r.error!.code);
    const header = encodeAuthHeader({
      topic: new Uint8Array(32),
      endpoint: new Uint8Array(32),
      ts: 1,
      nonce: new Uint8Array(16),
      sig: new Uint8Array(64),
    });
    const vectors: [string, { ok: boolean; error?: { code: string } }, string][] = [
      ['header missing', decodeAuthHeader(undefined), 'malformed'],
      ['header too long', decodeAuthHeader(header + 'A'.repeat(512)), 'malformed'],
      ['header not base64url', decodeAuthHeader(header.replace(/.$/, '=')), 'malformed'],
      [
        'header negative ts',
        decodeAuthHeader(toBase64Url(encodeCbor({ ...decodeAuthHeaderValue(header), ts: -1 }))),
        'malformed',
      ],
      ['fetch limit 0', decodeMailboxRequest('fetch', encodeCbor({ after: 0, limit: 0 })), 'malformed'],
      ['fetch extra field', decodeMailboxRequest('fetch', encodeCbor({ after: 0, limit: 1, x: 1 })), 'malformed'],
      [
        'ack too many ids',
        decodeMailboxRequest('ack', encodeCbor({ ids: Array<number>(MAX_ACK_IDS + 1).fill(1) })),
        'malformed',
      ],
      ['ack fractional id', decodeMailboxRequest('ack', encodeCbor({ ids: [1.5] })), 'malformed'],
      [
        'send body too large',
        decodeMailboxRequest('send', encodeCbor({ to: new Uint8Array(32), body: new Uint8Array(MAX_FRAME_BODY + 1) })),
        'frame-too-large',
      ],
      [
        'response ids not ascending',
        decodeMailboxResponse(
          'fetch',
          encodeCbor({
            frames: [
              { id: 2, from: new Uint8Array(32), body: new Uint8Array(0) },
              { id: 1, from: new Uint8Array(32), body: new Uint8Array(0) },
            ],
            more: false,
          }),
        ),
        'malformed',
      ],
      ['error body unknown code', decodeErrorBody(encodeCbor({ code: 'teapot', message: '' })), 'malformed'],
    ];
    for (const [name, result, expected] of vectors) expect([name, code(result)]).toEqual([name, expected]);
  });

  it('is fresh within ±120 s only', () => {
    expect(isFresh(1_000_000, 1_000_000 + 120_000)).toBe(true);
    expect(isFresh(1_000_000, 1_000_000 - 120_000)).toBe(true);
    expect(isFresh(1_000_000, 1_000_000 + 120_001)).toBe(false);
    expect(isFresh(1_000_000, 1_000_000 - 120_001)).toBe(false);
  });
});

function decodeAuthHeaderValue(header: string) {
  const decoded = decodeAuthHeader(header);
  if (!decoded.ok) throw new Error(decoded.error.reason);
  return decoded.value;
}
