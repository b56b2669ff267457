/**
 * The blind object store's codec (src/core/relay-objects.ts): behaviour the mutation run showed
 * unpinned — a full 4 MiB chunk accepted and one byte more refused (put request, get response),
 * the byte caps of the get and list response bodies exactly at and one past their edge, and a
 * body that is not the expected map answered with a typed refusal (never a throw) on the list
 * request and on every response route.
 */
import { describe, expect, it } from 'vitest';
import { encodeCbor } from '../../src/core/cbor.js';
import {
  decodeObjectRequest,
  decodeObjectResponse,
  MAX_LIST_LIMIT,
  MAX_OBJECT_CHUNK,
  type ObjectRoute,
} from '../../src/core/relay-objects.js';

const b = (n: number, fill = 1) => new Uint8Array(n).fill(fill);
const ID = b(32);
const TAG = b(32, 2);

/** The byte caps the module documents for these bodies: their payload plus 4096 bytes of slack for the rest. */
const GET_RESPONSE_CAP = MAX_OBJECT_CHUNK + 4096;
const LIST_RESPONSE_CAP = MAX_LIST_LIMIT * 128 + 4096;

const outcome = (r: { ok: true } | { ok: false; error: { code: string; reason: string } }) =>
  r.ok ? 'accepted' : `${r.error.code}: ${r.error.reason.replace(/^relay-http: /, '')}`;
const request = (route: ObjectRoute, body: Uint8Array) => outcome(decodeObjectRequest(route, body));
const response = (route: ObjectRoute, body: Uint8Array) => outcome(decodeObjectResponse(route, body));

/**
 * The encoding of `make(n)` that is exactly `size` bytes long, `n` being the length of its one
 * padding byte string (which must be over 65535 bytes, so that its head stays 5 bytes).
 */
const encodedAtSize = (size: number, make: (n: number) => unknown): Uint8Array => {
  const probe = size - 1000;
  const overhead = encodeCbor(make(probe)).length - probe;
  const body = encodeCbor(make(size - overhead));
  expect(body.length).toBe(size);
  return body;
};

describe('a put request carrying a chunk of the largest size', () => {
  const put = (n: number) => encodeCbor({ id: ID, tag: TAG, total: n, offset: 0, chunk: b(n) });

  it('accepts a chunk of exactly MAX_OBJECT_CHUNK bytes and reads it back whole', () => {
    const decoded = decodeObjectRequest('put', put(MAX_OBJECT_CHUNK));
    expect(decoded.ok).toBe(true);
    if (!decoded.ok) return;
    expect(decoded.value.chunk.length).toBe(MAX_OBJECT_CHUNK);
    expect(decoded.value.total).toBe(MAX_OBJECT_CHUNK);
  });

  it('refuses a chunk one byte over MAX_OBJECT_CHUNK for its size, though the body itself fits', () => {
    expect(request('put', put(MAX_OBJECT_CHUNK + 1))).toBe(
      'malformed: objects: put chunk is empty, too large, or runs past total',
    );
  });
});

describe('a get response', () => {
  const get = (n: number) => encodeCbor({ total: n, chunk: b(n) });

  it('accepts a chunk of exactly MAX_OBJECT_CHUNK bytes and reads it back whole', () => {
    const decoded = decodeObjectResponse('get', get(MAX_OBJECT_CHUNK));
    expect(decoded.ok).toBe(true);
    if (!decoded.ok) return;
    expect(decoded.value.chunk.length).toBe(MAX_OBJECT_CHUNK);
    expect(decoded.value.total).toBe(MAX_OBJECT_CHUNK);
  });

  it('refuses a chunk one byte over MAX_OBJECT_CHUNK, though the body itself is within its cap', () => {
    const body = get(MAX_OBJECT_CHUNK + 1);
    expect(body.length).toBeLessThanOrEqual(GET_RESPONSE_CAP);
    expect(response('get', body)).toBe('malformed: objects: get response');
  });

  it('reads a body of exactly MAX_OBJECT_CHUNK + 4096 bytes, and refuses one byte more unread', () => {
    // The chunk is too large either way: what differs is whether the body was decoded at all.
    const make = (n: number) => ({ total: 1, chunk: b(n) });
    expect(response('get', encodedAtSize(GET_RESPONSE_CAP, make))).toBe('malformed: objects: get response');
    expect(response('get', encodedAtSize(GET_RESPONSE_CAP + 1, make))).toBe(
      `malformed: cbor: ${GET_RESPONSE_CAP + 1} bytes exceeds ${GET_RESPONSE_CAP}`,
    );
  });
});

describe('a list response body at its byte cap', () => {
  it('reads a body of exactly MAX_LIST_LIMIT * 128 + 4096 bytes, and refuses one byte more unread', () => {
    // `objects` as a byte string pads the body; it is refused for its type once it has been read.
    const make = (n: number) => ({ objects: b(n), more: false });
    expect(response('list', encodedAtSize(LIST_RESPONSE_CAP, make))).toBe('malformed: objects: list response');
    expect(response('list', encodedAtSize(LIST_RESPONSE_CAP + 1, make))).toBe(
      `malformed: cbor: ${LIST_RESPONSE_CAP + 1} bytes exceeds ${LIST_RESPONSE_CAP}`,
    );
  });
});

describe('a body that is not the expected map is refused with a typed error, never a throw', () => {
  type Decode = (route: ObjectRoute, body: Uint8Array) => string;
  it.each<[string, Decode, ObjectRoute, unknown, string]>([
    ['list request', request, 'list', { tag: null, after: null }, 'malformed: fields must be tag, after, limit'],
    ['put response', response, 'put', { have: 1 }, 'malformed: fields must be have, complete'],
    ['status response', response, 'status', { have: 0, total: 1 }, 'malformed: fields must be have, total, complete'],
    ['list response', response, 'list', { objects: [] }, 'malformed: fields must be objects, more'],
  ])('%s: with a field missing, not a map, or not CBOR at all', (_name, decode, route, missing, refusal) => {
    expect(decode(route, encodeCbor(missing))).toBe(refusal);
    expect(decode(route, encodeCbor([1, 2]))).toBe('malformed: body is not a map');
    expect(decode(route, Uint8Array.of(0xff))).toMatch(/^malformed: cbor: /);
  });
});
