/**
 * The HTTP mailbox codec (core/relay-http.ts): every message round-trips through canonical
 * CBOR (fast-check), the signing payload binds each of its inputs, and out-of-bound input is
 * refused with its typed code before anything is allocated for it.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { bytesEqual, toBase64Url } from '../../src/core/bytes.js';
import { decodeCbor, encodeCbor } from '../../src/core/cbor.js';
import type { Result } from '../../src/core/result.js';
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
  type RelayHttpError,
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

  it('refuses out-of-bound input with its typed code and a reason naming what is wrong', () => {
    const auth = {
      topic: new Uint8Array(32),
      endpoint: new Uint8Array(32),
      ts: 1,
      nonce: new Uint8Array(16),
      sig: new Uint8Array(64),
    };
    const header = encodeAuthHeader(auth);
    const headerOf = (fields: Record<string, unknown>) => toBase64Url(encodeCbor(fields));
    const frame = (id: unknown, from: unknown = new Uint8Array(32), body: unknown = new Uint8Array(0)) => ({
      id,
      from,
      body,
    });
    const fetched = (frames: unknown, more: unknown = false) =>
      decodeMailboxResponse('fetch', encodeCbor({ frames, more }));
    const vectors: [string, Result<unknown, RelayHttpError>, string, string][] = [
      ['header missing', decodeAuthHeader(undefined), 'malformed', 'missing sov-auth header'],
      ['header too long', decodeAuthHeader(header + 'A'.repeat(512)), 'malformed', 'sov-auth header too long'],
      [
        'header not base64url',
        decodeAuthHeader(header.replace(/.$/, '=')),
        'malformed',
        'sov-auth header is not base64url',
      ],
      [
        'header not CBOR',
        decodeAuthHeader(toBase64Url(Uint8Array.of(0xff))),
        'malformed',
        cborReason(Uint8Array.of(0xff)),
      ],
      ['header an array', decodeAuthHeader(toBase64Url(encodeCbor([1]))), 'malformed', 'body is not a map'],
      [
        'header a field missing',
        decodeAuthHeader(headerOf({ topic: auth.topic, endpoint: auth.endpoint, ts: 1, nonce: auth.nonce })),
        'malformed',
        'fields must be topic, endpoint, ts, nonce, sig',
      ],
      [
        'header negative ts',
        decodeAuthHeader(headerOf({ ...auth, ts: -1 })),
        'malformed',
        'sov-auth field types or sizes',
      ],
      [
        'header short nonce',
        decodeAuthHeader(headerOf({ ...auth, nonce: new Uint8Array(15) })),
        'malformed',
        'sov-auth field types or sizes',
      ],
      [
        'fetch after -1',
        decodeMailboxRequest('fetch', encodeCbor({ after: -1, limit: 1 })),
        'malformed',
        'fetch: after must be a uint',
      ],
      [
        'fetch limit 0',
        decodeMailboxRequest('fetch', encodeCbor({ after: 0, limit: 0 })),
        'malformed',
        'fetch: limit must be 1..500',
      ],
      [
        'fetch limit 501',
        decodeMailboxRequest('fetch', encodeCbor({ after: 0, limit: 501 })),
        'malformed',
        'fetch: limit must be 1..500',
      ],
      [
        'fetch extra field',
        decodeMailboxRequest('fetch', encodeCbor({ after: 0, limit: 1, x: 1 })),
        'malformed',
        'fields must be after, limit',
      ],
      [
        'ack too many ids',
        decodeMailboxRequest('ack', encodeCbor({ ids: Array<number>(MAX_ACK_IDS + 1).fill(1) })),
        'malformed',
        `ack: ids must be at most ${MAX_ACK_IDS} uints`,
      ],
      [
        'ack fractional id',
        decodeMailboxRequest('ack', encodeCbor({ ids: [1.5] })),
        'malformed',
        `ack: ids must be at most ${MAX_ACK_IDS} uints`,
      ],
      ['ack not CBOR', decodeMailboxRequest('ack', Uint8Array.of(0xff)), 'malformed', cborReason(Uint8Array.of(0xff))],
      [
        'send to of 31 bytes',
        decodeMailboxRequest('send', encodeCbor({ to: new Uint8Array(31), body: new Uint8Array(0) })),
        'malformed',
        'send: to must be 32 bytes, body bytes',
      ],
      [
        'send body too large',
        decodeMailboxRequest('send', encodeCbor({ to: new Uint8Array(32), body: new Uint8Array(MAX_FRAME_BODY + 1) })),
        'frame-too-large',
        `send: body exceeds ${MAX_FRAME_BODY} bytes`,
      ],
      [
        'send not CBOR',
        decodeMailboxRequest('send', Uint8Array.of(0xff)),
        'malformed',
        cborReason(Uint8Array.of(0xff)),
      ],
      ['response ids not ascending', fetched([frame(2), frame(1)]), 'malformed', 'fetch response: ids not ascending'],
      ['response ids repeated', fetched([frame(2), frame(2)]), 'malformed', 'fetch response: ids not ascending'],
      ['response frames a map', fetched({}), 'malformed', 'fetch response: fields'],
      ['response more as a number', fetched([], 0), 'malformed', 'fetch response: fields'],
      [
        'response of 501 frames',
        fetched(Array.from({ length: MAX_FETCH_LIMIT + 1 }, (_, i) => frame(i + 1))),
        'malformed',
        'fetch response: fields',
      ],
      [
        'response frame an array',
        fetched([[1, new Uint8Array(32), new Uint8Array(0)]]),
        'malformed',
        'fetch response: frame',
      ],
      ['response frame a field too many', fetched([{ ...frame(1), x: 1 }]), 'malformed', 'fetch response: frame'],
      ['response frame id -1', fetched([frame(-1)]), 'malformed', 'fetch response: frame'],
      ['response frame from 31 bytes', fetched([frame(1, new Uint8Array(31))]), 'malformed', 'fetch response: frame'],
      ['response frame body text', fetched([frame(1, new Uint8Array(32), 'x')]), 'malformed', 'fetch response: frame'],
      [
        'response frame body too large',
        fetched([frame(1, new Uint8Array(32), new Uint8Array(MAX_FRAME_BODY + 1))]),
        'malformed',
        'fetch response: frame',
      ],
      [
        'response not CBOR',
        decodeMailboxResponse('fetch', Uint8Array.of(0xff)),
        'malformed',
        cborReason(Uint8Array.of(0xff)),
      ],
      [
        'ack response negative',
        decodeMailboxResponse('ack', encodeCbor({ acked: -1 })),
        'malformed',
        'response: acked must be a uint',
      ],
      [
        'send response not CBOR',
        decodeMailboxResponse('send', Uint8Array.of(0xff)),
        'malformed',
        cborReason(Uint8Array.of(0xff)),
      ],
      [
        'send response wrong field',
        decodeMailboxResponse('send', encodeCbor({ acked: 1 })),
        'malformed',
        'fields must be id',
      ],
      [
        'error body unknown code',
        decodeErrorBody(encodeCbor({ code: 'teapot', message: '' })),
        'malformed',
        'error body: fields',
      ],
      [
        'error body code a number',
        decodeErrorBody(encodeCbor({ code: 409, message: '' })),
        'malformed',
        'error body: fields',
      ],
      [
        'error body message bytes',
        decodeErrorBody(encodeCbor({ code: 'stale', message: new Uint8Array(1) })),
        'malformed',
        'error body: fields',
      ],
      ['error body not CBOR', decodeErrorBody(Uint8Array.of(0xff)), 'malformed', cborReason(Uint8Array.of(0xff))],
    ];
    for (const [name, result, code, reason] of vectors) {
      expect([name, result]).toEqual([
        name,
        { ok: false, error: { type: 'RelayHttpError', code, reason: `relay-http: ${reason}` } },
      ]);
    }
  });

  it('takes exactly MAX_ACK_IDS ids and 500 frames, and cuts an error message to 512 characters', () => {
    const ids = Array<number>(MAX_ACK_IDS).fill(1);
    expect(decodeMailboxRequest('ack', encodeCbor({ ids }))).toEqual({ ok: true, value: { ids } });
    const frames = Array.from({ length: MAX_FETCH_LIMIT }, (_, i) => ({
      id: i + 1,
      from: new Uint8Array(32),
      body: new Uint8Array(0),
    }));
    expect(decodeMailboxResponse('fetch', encodeCbor({ frames, more: true }))).toMatchObject({
      ok: true,
      value: { more: true },
    });
    const long = decodeErrorBody(encodeCbor({ code: 'stale', message: 'm'.repeat(600) }));
    expect(long.ok && long.value.message).toBe('m'.repeat(512));
  });

  it('is fresh within ±120 s only', () => {
    expect(isFresh(1_000_000, 1_000_000 + 120_000)).toBe(true);
    expect(isFresh(1_000_000, 1_000_000 - 120_000)).toBe(true);
    expect(isFresh(1_000_000, 1_000_000 + 120_001)).toBe(false);
    expect(isFresh(1_000_000, 1_000_000 - 120_001)).toBe(false);
  });
});

/** The CBOR decoder's own reason for refusing `bytes`. */
function cborReason(bytes: Uint8Array): string {
  const decoded = decodeCbor(bytes, 1024);
  if (decoded.ok) throw new Error('cborReason: the bytes decode');
  return decoded.error.reason;
}
