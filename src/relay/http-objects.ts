/**
 * The relay's blind object store over signed HTTP (wire format in core/relay-objects.ts,
 * bytes on disk in object-store.ts). Each request, in order: route and method (POST),
 * content type, body bound (413 before reading), `sov-auth`, authentication shared with the
 * mailbox (http-auth.ts), then the route's decoder and the store. The relay checks sizes and
 * hashes; it never opens an object.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  AUTH_HEADER,
  CBOR_CONTENT_TYPE,
  HTTP_STATUS,
  decodeAuthHeader,
  encodeMailboxBody,
  type HttpAuth,
  type RelayHttpError,
  type RelayHttpErrorCode,
} from '../core/relay-http.js';
import {
  MAX_OBJECT_REQUEST,
  OBJECT_ROUTES,
  decodeObjectRequest,
  encodeObjectBody,
  type ObjectRoute,
} from '../core/relay-objects.js';
import { ok, type Result } from '../core/result.js';
import type { HttpAuthenticator } from './http-auth.js';
import { readBody, reply } from './http-auth.js';
import type { BlindObjectStore } from './object-store.js';

const ROUTES = new Map<string, ObjectRoute>(
  Object.entries(OBJECT_ROUTES).map(([route, path]) => [path, route as ObjectRoute]),
);

type Answer = Result<Uint8Array, RelayHttpError>;

export class HttpObjects {
  readonly #auth: HttpAuthenticator;
  readonly #store: BlindObjectStore;
  readonly #log: (line: string) => void;

  constructor(options: { auth: HttpAuthenticator; store: BlindObjectStore; log: (line: string) => void }) {
    this.#auth = options.auth;
    this.#store = options.store;
    this.#log = options.log;
  }

  async handle(req: IncomingMessage, res: ServerResponse, pathname: string): Promise<void> {
    const route = ROUTES.get(pathname);
    if (route === undefined) return this.#refuse(res, 404, 'malformed', 'relay: no such objects route');
    if (req.method !== 'POST') return this.#refuse(res, 405, 'malformed', 'relay: use POST', { Allow: 'POST' });
    if (req.headers['content-type']?.split(';')[0]?.trim().toLowerCase() !== CBOR_CONTENT_TYPE) {
      return this.#refuse(res, 415, 'malformed', `relay: content-type must be ${CBOR_CONTENT_TYPE}`);
    }
    const body = await readBody(req, MAX_OBJECT_REQUEST[route]);
    if (!body.ok) return this.#refuse(res, 413, body.error.code, body.error.reason, { Connection: 'close' });
    const header = req.headers[AUTH_HEADER];
    const auth = decodeAuthHeader(typeof header === 'string' ? header : undefined);
    const checked = auth.ok ? this.#auth.check(auth.value, 'POST', OBJECT_ROUTES[route], body.value) : auth;
    const answer = checked.ok && auth.ok ? await this.#answer(route, auth.value, body.value) : (checked as Answer);
    if (answer.ok) return reply(res, 200, answer.value);
    this.#log(`relay: objects ${route} refused: ${answer.error.code}`);
    this.#refuse(res, HTTP_STATUS[answer.error.code], answer.error.code, answer.error.reason);
  }

  async #answer(route: ObjectRoute, auth: HttpAuth, body: Uint8Array): Promise<Answer> {
    switch (route) {
      case 'put': {
        const r = decodeObjectRequest('put', body);
        if (!r.ok) return r;
        const put = await this.#store.put(auth.topic, r.value);
        return put.ok ? ok(encodeObjectBody(put.value)) : put;
      }
      case 'status': {
        const r = decodeObjectRequest('status', body);
        return r.ok ? ok(encodeObjectBody(this.#store.status(auth.topic, r.value.id))) : r;
      }
      case 'get': {
        const r = decodeObjectRequest('get', body);
        if (!r.ok) return r;
        const got = this.#store.read(auth.topic, r.value.id, r.value.offset, r.value.length);
        return got.ok ? ok(encodeObjectBody(got.value)) : got;
      }
      case 'list': {
        const r = decodeObjectRequest('list', body);
        return r.ok ? ok(encodeObjectBody(this.#store.list(auth.topic, r.value.tag, r.value.after, r.value.limit))) : r;
      }
    }
  }

  #refuse(
    res: ServerResponse,
    status: number,
    code: RelayHttpErrorCode,
    message: string,
    extra: Record<string, string> = {},
  ): void {
    reply(res, status, encodeMailboxBody({ code, message }), extra);
  }
}
