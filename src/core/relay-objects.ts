/**
 * The relay's blind object store, version 1: content-addressed, resumable storage of
 * encrypted SOP/1 objects for the machines of one mesh (topic). The relay holds bytes it
 * cannot read and names them only by storage_id = BLAKE3 of the bytes, which it checks
 * before an upload counts. Requests are signed exactly as the HTTP mailbox's
 * (relay-http.ts: `sov-auth`, signature over method, route, ts, nonce and the body's
 * BLAKE3) and bodies are canonical CBOR maps.
 *
 *   POST /api/v1/objects/put     {id: 32B, tag: 32B, total: uint, offset: uint, chunk: ≤ 4 MiB}
 *                                → {have: uint, complete: bool}
 *   POST /api/v1/objects/status  {id: 32B}  → {have: uint, total: uint, complete: bool}
 *   POST /api/v1/objects/get     {id: 32B, offset: uint, length: 1..4 MiB} → {total: uint, chunk}
 *   POST /api/v1/objects/list    {tag: 32B | null, after: 32B | null, limit: 1..1000}
 *                                → {objects: [{id, tag, size}], more: bool}
 *
 * Resuming: `put` appends at `offset`, which must equal what the relay already has (`status`
 * says how much); a put at any other offset is `offset-mismatch` and changes nothing. When
 * `have` reaches `total` the relay hashes the whole and keeps it only if it is `id`
 * (`hash-mismatch` otherwise, and the partial upload is dropped). A complete object is
 * immutable: putting it again answers complete.
 *
 * `tag` is a 32-byte placement label chosen by the uploader — the keyed hash of the object's
 * domain under the group secret — so a storage machine can ask for the objects of the domains
 * it stores without the relay learning which domain a tag stands for. The relay does learn
 * which objects share a tag, and every object's size.
 */
import { isBytes } from './bytes.js';
import { encodeCbor } from './cbor.js';
import { decodeMap, isUint, refuse, type RelayHttpError } from './relay-http.js';
import { ok, type Result } from './result.js';

export const OBJECT_ROUTES = {
  put: '/api/v1/objects/put',
  status: '/api/v1/objects/status',
  get: '/api/v1/objects/get',
  list: '/api/v1/objects/list',
} as const;
export type ObjectRoute = keyof typeof OBJECT_ROUTES;
export const OBJECTS_PREFIX = '/api/v1/objects/';

export const MAX_OBJECT_CHUNK = 4 * 1024 * 1024;
export const MAX_OBJECT_BYTES = 4 * 1024 * 1024 * 1024;
export const MAX_LIST_LIMIT = 1000;
const SMALL = 4096;

export const MAX_OBJECT_REQUEST: Readonly<Record<ObjectRoute, number>> = {
  put: MAX_OBJECT_CHUNK + SMALL,
  status: SMALL,
  get: SMALL,
  list: SMALL,
};

export type PutRequest = {
  readonly id: Uint8Array;
  readonly tag: Uint8Array;
  readonly total: number;
  readonly offset: number;
  readonly chunk: Uint8Array;
};
export type StatusRequest = { readonly id: Uint8Array };
export type GetRequest = { readonly id: Uint8Array; readonly offset: number; readonly length: number };
export type ListRequest = {
  readonly tag: Uint8Array | null;
  readonly after: Uint8Array | null;
  readonly limit: number;
};

export type PutResponse = { readonly have: number; readonly complete: boolean };
export type StatusResponse = { readonly have: number; readonly total: number; readonly complete: boolean };
export type GetResponse = { readonly total: number; readonly chunk: Uint8Array };
export type ListedObject = { readonly id: Uint8Array; readonly tag: Uint8Array; readonly size: number };
export type ListResponse = { readonly objects: readonly ListedObject[]; readonly more: boolean };

export type ObjectRequest = { put: PutRequest; status: StatusRequest; get: GetRequest; list: ListRequest };
export type ObjectResponse = { put: PutResponse; status: StatusResponse; get: GetResponse; list: ListResponse };

const malformed = (reason: string): Result<never, RelayHttpError> => refuse('malformed', `objects: ${reason}`);

const id32 = (v: unknown): v is Uint8Array => isBytes(v, 32);
const optional32 = (v: unknown): v is Uint8Array | null => v === null || isBytes(v, 32);

const REQUESTS: { [R in ObjectRoute]: (bytes: Uint8Array) => Result<ObjectRequest[R], RelayHttpError> } = {
  put: (bytes) => {
    const m = decodeMap(bytes, MAX_OBJECT_REQUEST.put, ['id', 'tag', 'total', 'offset', 'chunk']);
    if (!m.ok) return m;
    const { id, tag, total, offset, chunk } = m.value;
    if (!id32(id) || !id32(tag) || !isUint(total) || !isUint(offset) || !isBytes(chunk)) return malformed('put fields');
    if (total === 0 || total > MAX_OBJECT_BYTES)
      return refuse('object-too-large', `objects: total must be 1..${MAX_OBJECT_BYTES}`);
    if (chunk.length === 0 || chunk.length > MAX_OBJECT_CHUNK || offset + chunk.length > total) {
      return malformed('put chunk is empty, too large, or runs past total');
    }
    return ok({ id, tag, total, offset, chunk });
  },
  status: (bytes) => {
    const m = decodeMap(bytes, SMALL, ['id']);
    if (!m.ok) return m;
    return id32(m.value['id']) ? ok({ id: m.value['id'] }) : malformed('status id');
  },
  get: (bytes) => {
    const m = decodeMap(bytes, SMALL, ['id', 'offset', 'length']);
    if (!m.ok) return m;
    const { id, offset, length } = m.value;
    if (!id32(id) || !isUint(offset) || !isUint(length) || length < 1 || length > MAX_OBJECT_CHUNK) {
      return malformed(`get fields (length 1..${MAX_OBJECT_CHUNK})`);
    }
    return ok({ id, offset, length });
  },
  list: (bytes) => {
    const m = decodeMap(bytes, SMALL, ['tag', 'after', 'limit']);
    if (!m.ok) return m;
    const { tag, after, limit } = m.value;
    if (!optional32(tag) || !optional32(after) || !isUint(limit) || limit < 1 || limit > MAX_LIST_LIMIT) {
      return malformed(`list fields (limit 1..${MAX_LIST_LIMIT})`);
    }
    return ok({ tag, after, limit });
  },
};

export function decodeObjectRequest<R extends ObjectRoute>(
  route: R,
  bytes: Uint8Array,
): Result<ObjectRequest[R], RelayHttpError> {
  return REQUESTS[route](bytes);
}

const RESPONSES: { [R in ObjectRoute]: (bytes: Uint8Array) => Result<ObjectResponse[R], RelayHttpError> } = {
  put: (bytes) => {
    const m = decodeMap(bytes, SMALL, ['have', 'complete']);
    if (!m.ok) return m;
    const { have, complete } = m.value;
    return isUint(have) && typeof complete === 'boolean' ? ok({ have, complete }) : malformed('put response');
  },
  status: (bytes) => {
    const m = decodeMap(bytes, SMALL, ['have', 'total', 'complete']);
    if (!m.ok) return m;
    const { have, total, complete } = m.value;
    return isUint(have) && isUint(total) && typeof complete === 'boolean'
      ? ok({ have, total, complete })
      : malformed('status response');
  },
  get: (bytes) => {
    const m = decodeMap(bytes, MAX_OBJECT_CHUNK + SMALL, ['total', 'chunk']);
    if (!m.ok) return m;
    const { total, chunk } = m.value;
    // `total` is what the client allocates: bound it as the request side does.
    return isUint(total) && total <= MAX_OBJECT_BYTES && isBytes(chunk) && chunk.length <= MAX_OBJECT_CHUNK
      ? ok({ total, chunk })
      : malformed('get response');
  },
  list: (bytes) => {
    const m = decodeMap(bytes, MAX_LIST_LIMIT * 128 + SMALL, ['objects', 'more']);
    if (!m.ok) return m;
    const { objects, more } = m.value;
    if (!Array.isArray(objects) || objects.length > MAX_LIST_LIMIT || typeof more !== 'boolean')
      return malformed('list response');
    const out: ListedObject[] = [];
    for (const o of objects as unknown[]) {
      const entry = o as Record<string, unknown>;
      if (typeof o !== 'object' || o === null || !id32(entry['id']) || !id32(entry['tag']) || !isUint(entry['size'])) {
        return malformed('list response entry');
      }
      out.push({ id: entry['id'], tag: entry['tag'], size: entry['size'] });
    }
    return ok({ objects: out, more });
  },
};

export function decodeObjectResponse<R extends ObjectRoute>(
  route: R,
  bytes: Uint8Array,
): Result<ObjectResponse[R], RelayHttpError> {
  return RESPONSES[route](bytes);
}

export function encodeObjectBody(value: ObjectRequest[ObjectRoute] | ObjectResponse[ObjectRoute]): Uint8Array {
  return encodeCbor(value);
}
