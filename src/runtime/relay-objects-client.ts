/**
 * Client of the relay's blind object store (core/relay-objects.ts). Uploads resume from
 * whatever the relay already holds (`status`, then `put` from there, one chunk at a time);
 * downloads are chunked and verified against the storage id before they are returned, so a
 * relay that serves other bytes is caught here, not by the Parquet reader. Requests are
 * signed with the endpoint key exactly as the mailbox's are.
 */
import { bytesEqual } from '../core/bytes.js';
import { blake3Stream } from '../core/hash.js';
import {
  MAX_OBJECT_CHUNK,
  OBJECT_ROUTES,
  MAX_LIST_LIMIT,
  decodeObjectResponse,
  encodeObjectBody,
  type ListedObject,
  type ObjectRequest,
  type ObjectResponse,
  type ObjectRoute,
} from '../core/relay-objects.js';
import type { ByteSource } from '../core/parquet/source.js';
import { err, ok, type Result } from '../core/result.js';
import { postSigned, type RelayHttpClientError, type RelayHttpClientOptions } from './relay-http-client.js';

export type ObjectClientError =
  | RelayHttpClientError
  | { readonly type: 'HashMismatch'; readonly reason: string }
  | { readonly type: 'NotFound'; readonly reason: string };

export type Progress = (done: number, total: number) => void;

const RESPONSE_SLACK = 4096;

export class RelayObjectClient {
  readonly #opts: RelayHttpClientOptions;
  readonly #chunk: number;

  /** `chunkBytes` (≤ 4 MiB) exists so tests can make many-chunk uploads out of small objects. */
  constructor(options: RelayHttpClientOptions & { readonly chunkBytes?: number }) {
    this.#opts = options;
    this.#chunk = Math.max(1, Math.min(options.chunkBytes ?? MAX_OBJECT_CHUNK, MAX_OBJECT_CHUNK));
  }

  status(id: Uint8Array): Promise<Result<ObjectResponse['status'], ObjectClientError>> {
    return this.#call('status', { id });
  }

  /**
   * Stores `bytes` as object `id` under placement `tag`, continuing a partial upload. Answers
   * once the relay holds the whole, verified object (it hashes it itself).
   */
  async upload(
    id: Uint8Array,
    tag: Uint8Array,
    bytes: Uint8Array,
    progress?: Progress,
  ): Promise<Result<{ readonly resumedFrom: number }, ObjectClientError>> {
    const status = await this.status(id);
    if (!status.ok) return status;
    if (status.value.complete) {
      progress?.(bytes.length, bytes.length);
      return ok({ resumedFrom: bytes.length });
    }
    // An upload of another size is someone else's broken attempt at this id; start from 0
    // and let the relay refuse it if it is still in progress.
    const resumedFrom = status.value.total === bytes.length ? status.value.have : 0;
    let offset = resumedFrom;
    for (let retried = false; offset < bytes.length;) {
      const chunk = bytes.subarray(offset, Math.min(offset + this.#chunk, bytes.length));
      const put = await this.#call('put', { id, tag, total: bytes.length, offset, chunk });
      if (!put.ok) {
        // Another writer (a second tab, a retried request) moved the upload on: ask once where it is.
        if (put.error.type === 'HttpRefused' && put.error.code === 'offset-mismatch' && !retried) {
          retried = true;
          const again = await this.status(id);
          if (!again.ok) return again;
          if (again.value.complete) break;
          offset = again.value.have;
          continue;
        }
        return put;
      }
      retried = false;
      offset = put.value.complete ? bytes.length : put.value.have;
      progress?.(offset, bytes.length);
    }
    return ok({ resumedFrom });
  }

  /** The whole object, checked to hash to `id`. */
  async download(id: Uint8Array, progress?: Progress): Promise<Result<Uint8Array, ObjectClientError>> {
    const first = await this.#call('get', { id, offset: 0, length: this.#chunk });
    if (!first.ok) {
      if (first.error.type === 'HttpRefused' && first.error.code === 'not-found') {
        return err({ type: 'NotFound', reason: 'objects: the relay does not hold this object' });
      }
      return first;
    }
    const { total } = first.value;
    const out = new Uint8Array(total);
    let offset = 0;
    for (let part = first.value; ;) {
      if (part.total !== total || part.chunk.length === 0 || offset + part.chunk.length > total) {
        return err({ type: 'BadResponse', reason: 'objects: the relay answered an inconsistent chunk' });
      }
      out.set(part.chunk, offset);
      offset += part.chunk.length;
      progress?.(offset, total);
      if (offset === total) break;
      const next = await this.#call('get', { id, offset, length: this.#chunk });
      if (!next.ok) return next;
      part = next.value;
    }
    const hash = await blake3Stream();
    hash.update(out);
    if (!bytesEqual(hash.digest(), id)) {
      return err({ type: 'HashMismatch', reason: 'objects: the bytes the relay served do not hash to the storage id' });
    }
    return ok(out);
  }

  /**
   * Bytes [start, end) of object `id`, whose size the caller knows from its signed manifest:
   * a relay holding an object of another size, or answering short, is refused. Nothing here
   * is hashed (a range cannot be); an encrypted object's modules are sealed, so the Parquet
   * reader refuses bytes that are not the object's own (core/parquet/source.ts).
   */
  async range(
    id: Uint8Array,
    size: number,
    start: number,
    end: number,
  ): Promise<Result<Uint8Array, ObjectClientError>> {
    if (!(Number.isSafeInteger(start) && Number.isSafeInteger(end) && 0 <= start && start <= end && end <= size)) {
      throw new RangeError(`objects: no range ${start}–${end} in an object of ${size} bytes`);
    }
    const out = new Uint8Array(end - start);
    for (let at = start; at < end;) {
      const length = Math.min(this.#chunk, end - at);
      const part = await this.#call('get', { id, offset: at, length });
      if (!part.ok) {
        if (part.error.type === 'HttpRefused' && part.error.code === 'not-found') {
          return err({ type: 'NotFound', reason: 'objects: the relay does not hold this object' });
        }
        return part;
      }
      if (part.value.total !== size) {
        return err({
          type: 'BadResponse',
          reason: 'objects: the relay holds an object of another size than its manifest says',
        });
      }
      if (part.value.chunk.length !== length) {
        return err({ type: 'BadResponse', reason: 'objects: the relay answered a range short' });
      }
      out.set(part.value.chunk, at - start);
      at += length;
    }
    return ok(out);
  }

  /** One page of the complete objects under `tag` (or all of the mesh's with null) after `after`, in id order. */
  list(
    tag: Uint8Array | null,
    after: Uint8Array | null,
    limit: number,
  ): Promise<Result<ObjectResponse['list'], ObjectClientError>> {
    return this.#call('list', { tag, after, limit: Math.min(limit, MAX_LIST_LIMIT) });
  }

  /** Every complete object under `tag` (or all of the mesh's with null), in id order. */
  async listAll(tag: Uint8Array | null): Promise<Result<ListedObject[], ObjectClientError>> {
    const out: ListedObject[] = [];
    let after: Uint8Array | null = null;
    for (;;) {
      const page: Result<ObjectResponse['list'], ObjectClientError> = await this.list(tag, after, MAX_LIST_LIMIT);
      if (!page.ok) return page;
      out.push(...page.value.objects);
      const last: ListedObject | undefined = page.value.objects.at(-1);
      if (!page.value.more || last === undefined) return ok(out);
      after = last.id;
    }
  }

  async #call<R extends ObjectRoute>(
    route: R,
    request: ObjectRequest[R],
  ): Promise<Result<ObjectResponse[R], ObjectClientError>> {
    const max = route === 'get' ? MAX_OBJECT_CHUNK + RESPONSE_SLACK : MAX_LIST_LIMIT * 128 + RESPONSE_SLACK;
    const answer = await postSigned(this.#opts, OBJECT_ROUTES[route], encodeObjectBody(request), max);
    if (!answer.ok) return answer;
    const decoded = decodeObjectResponse(route, answer.value);
    return decoded.ok ? decoded : err({ type: 'BadResponse', reason: decoded.error.reason });
  }
}

/**
 * Object `id` as a Parquet byte source (core/parquet/source.ts) over the relay's ranged
 * reads: what a query reads of an object this machine does not hold. `size` comes from the
 * object's signed manifest; `onFetched` is told every byte count fetched.
 */
export function relayByteSource(
  client: Pick<RelayObjectClient, 'range'>,
  id: Uint8Array,
  size: number,
  onFetched?: (bytes: number) => void,
): ByteSource {
  return {
    size,
    read: async (start, end) => {
      if (start < 0 || end > size || end < start) {
        return err({ type: 'Truncated', detail: `bytes ${start}–${end} are outside the object` });
      }
      const got = await client.range(id, size, start, end);
      if (!got.ok) {
        const e = got.error;
        return err({
          type: 'Unavailable',
          detail: `${e.type}: ${'reason' in e ? e.reason : `${e.code} ${e.message}`}`,
        });
      }
      onFetched?.(got.value.length);
      return ok(got.value);
    },
  };
}
