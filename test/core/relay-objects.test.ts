/**
 * The blind object store's request and response codec (src/core/relay-objects.ts): each request
 * and response read back as written, the bounds accepted at their edge, and every malformed body
 * refused with its code and reason before anything is allocated for it.
 */
import { describe, expect, it } from 'vitest';
import { encodeCbor } from '../../src/core/cbor.js';
import {
  decodeObjectRequest,
  decodeObjectResponse,
  encodeObjectBody,
  MAX_LIST_LIMIT,
  MAX_OBJECT_BYTES,
  MAX_OBJECT_CHUNK,
  type ObjectRoute,
} from '../../src/core/relay-objects.js';

const b = (n: number, fill = 1) => new Uint8Array(n).fill(fill);
const ID = b(32);
const PUT = { id: ID, tag: b(32, 2), total: 10, offset: 0, chunk: b(10) };
const GET = { id: ID, offset: 0, length: 10 };
const LIST = { tag: null, after: null, limit: 10 };

const request = (route: ObjectRoute, value: unknown) => {
  const r = decodeObjectRequest(route, encodeCbor(value));
  return r.ok ? 'accepted' : `${r.error.code}: ${r.error.reason.replace(/^relay-http: /, '')}`;
};
const response = (route: ObjectRoute, value: unknown) => {
  const r = decodeObjectResponse(route, encodeCbor(value));
  return r.ok ? 'accepted' : `${r.error.code}: ${r.error.reason.replace(/^relay-http: /, '')}`;
};

describe('object requests', () => {
  it('read back as written, at the edges of each bound', () => {
    for (const [route, value] of [
      ['put', PUT],
      ['put', { ...PUT, total: MAX_OBJECT_BYTES, offset: MAX_OBJECT_BYTES - 10 }],
      ['put', { ...PUT, total: 10, offset: 9, chunk: b(1) }],
      ['status', { id: ID }],
      ['get', GET],
      ['get', { ...GET, length: MAX_OBJECT_CHUNK }],
      ['get', { ...GET, length: 1 }],
      ['list', LIST],
      ['list', { tag: ID, after: ID, limit: MAX_LIST_LIMIT }],
      ['list', { ...LIST, limit: 1 }],
    ] as const) {
      expect(request(route, value), `${route} ${JSON.stringify(value).slice(0, 60)}`).toBe('accepted');
      const decoded = decodeObjectRequest(route, encodeObjectBody(value as never));
      expect(decoded.ok && encodeCbor(decoded.value)).toEqual(encodeCbor(value));
    }
  });

  it.each<[ObjectRoute, string, unknown, string]>([
    ['put', 'a short id', { ...PUT, id: b(31) }, 'malformed: objects: put fields'],
    ['put', 'a short tag', { ...PUT, tag: b(31) }, 'malformed: objects: put fields'],
    ['put', 'a total as text', { ...PUT, total: '10' }, 'malformed: objects: put fields'],
    ['put', 'a negative offset', { ...PUT, offset: -1 }, 'malformed: objects: put fields'],
    ['put', 'a chunk as text', { ...PUT, chunk: 'c' }, 'malformed: objects: put fields'],
    ['put', 'an empty object', { ...PUT, total: 0 }, `object-too-large: objects: total must be 1..${MAX_OBJECT_BYTES}`],
    [
      'put',
      'an object one byte over the limit',
      { ...PUT, total: MAX_OBJECT_BYTES + 1 },
      `object-too-large: objects: total must be 1..${MAX_OBJECT_BYTES}`,
    ],
    [
      'put',
      'an empty chunk',
      { ...PUT, chunk: b(0) },
      'malformed: objects: put chunk is empty, too large, or runs past total',
    ],
    [
      'put',
      'a chunk that runs one byte past the total',
      { ...PUT, offset: 1 },
      'malformed: objects: put chunk is empty, too large, or runs past total',
    ],
    ['status', 'a short id', { id: b(31) }, 'malformed: objects: status id'],
    [
      'get',
      'a length of zero',
      { ...GET, length: 0 },
      `malformed: objects: get fields (length 1..${MAX_OBJECT_CHUNK})`,
    ],
    [
      'get',
      'a length over a chunk',
      { ...GET, length: MAX_OBJECT_CHUNK + 1 },
      `malformed: objects: get fields (length 1..${MAX_OBJECT_CHUNK})`,
    ],
    [
      'get',
      'a negative offset',
      { ...GET, offset: -1 },
      `malformed: objects: get fields (length 1..${MAX_OBJECT_CHUNK})`,
    ],
    ['get', 'a short id', { ...GET, id: b(31) }, `malformed: objects: get fields (length 1..${MAX_OBJECT_CHUNK})`],
    ['list', 'a limit of zero', { ...LIST, limit: 0 }, `malformed: objects: list fields (limit 1..${MAX_LIST_LIMIT})`],
    [
      'list',
      'a limit over the most',
      { ...LIST, limit: MAX_LIST_LIMIT + 1 },
      `malformed: objects: list fields (limit 1..${MAX_LIST_LIMIT})`,
    ],
    ['list', 'a short tag', { ...LIST, tag: b(31) }, `malformed: objects: list fields (limit 1..${MAX_LIST_LIMIT})`],
    [
      'list',
      'a short cursor',
      { ...LIST, after: b(31) },
      `malformed: objects: list fields (limit 1..${MAX_LIST_LIMIT})`,
    ],
  ])('%s: refuses %s', (route, _name, value, refusal) => {
    expect(request(route, value)).toBe(refusal);
  });

  it('refuses a body with a field missing or added, whatever the route', () => {
    expect(request('status', { id: ID, x: 1 })).toMatch(/^malformed: /);
    expect(request('get', { id: ID, offset: 0 })).toMatch(/^malformed: /);
  });
});

describe('object responses', () => {
  it('read back as written', () => {
    for (const [route, value] of [
      ['put', { have: 10, complete: true }],
      ['status', { have: 0, total: 10, complete: false }],
      ['get', { total: MAX_OBJECT_BYTES, chunk: b(10) }],
      ['list', { objects: [{ id: ID, tag: ID, size: 5 }], more: false }],
      ['list', { objects: [], more: true }],
    ] as const) {
      expect(response(route, value)).toBe('accepted');
    }
  });

  it.each<[ObjectRoute, string, unknown, string]>([
    ['put', 'have as text', { have: '1', complete: true }, 'malformed: objects: put response'],
    ['put', 'complete as a number', { have: 1, complete: 1 }, 'malformed: objects: put response'],
    ['status', 'a negative total', { have: 0, total: -1, complete: false }, 'malformed: objects: status response'],
    ['status', 'have as text', { have: '0', total: 1, complete: false }, 'malformed: objects: status response'],
    ['status', 'complete as text', { have: 0, total: 1, complete: 'no' }, 'malformed: objects: status response'],
    [
      'get',
      'a total over the largest object',
      { total: MAX_OBJECT_BYTES + 1, chunk: b(1) },
      'malformed: objects: get response',
    ],
    ['get', 'a chunk as text', { total: 1, chunk: 'c' }, 'malformed: objects: get response'],
    ['list', 'objects as a map', { objects: {}, more: false }, 'malformed: objects: list response'],
    ['list', 'more as a number', { objects: [], more: 0 }, 'malformed: objects: list response'],
    [
      'list',
      'too many objects',
      { objects: Array.from({ length: MAX_LIST_LIMIT + 1 }, () => ({ id: ID, tag: ID, size: 1 })), more: false },
      'malformed: objects: list response',
    ],
    ['list', 'an entry that is a number', { objects: [5], more: false }, 'malformed: objects: list response entry'],
    ['list', 'an entry that is null', { objects: [null], more: false }, 'malformed: objects: list response entry'],
    [
      'list',
      'an entry with a short id',
      { objects: [{ id: b(31), tag: ID, size: 1 }], more: false },
      'malformed: objects: list response entry',
    ],
    [
      'list',
      'an entry with a short tag',
      { objects: [{ id: ID, tag: b(31), size: 1 }], more: false },
      'malformed: objects: list response entry',
    ],
    [
      'list',
      'an entry with a size as text',
      { objects: [{ id: ID, tag: ID, size: '1' }], more: false },
      'malformed: objects: list response entry',
    ],
  ])('%s: refuses %s', (route, _name, value, refusal) => {
    expect(response(route, value)).toBe(refusal);
  });
});
