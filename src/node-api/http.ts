/**
 * What every route of the node's API answers with (server.ts, object-routes.ts): typed
 * refusals, bodies read within a limit, JSON and byte responses, and responses checked
 * against the OpenAPI document before they leave.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ValidateFunction } from 'ajv/dist/2020.js';

/** A request the API refuses: its HTTP status and the typed body's type and reason. */
export class Refusal extends Error {
  constructor(
    readonly status: number,
    readonly type: string,
    readonly reason: string,
  ) {
    super(`${type}: ${reason}`);
  }
}

export const refusal = (status: number, type: string, reason: string): Refusal => new Refusal(status, type, reason);

export const isRefusal = (e: unknown): e is Refusal => e instanceof Refusal;

/** An answer that is not JSON: a decrypted object as CSV or Parquet. */
export class Bytes {
  constructor(
    readonly contentType: string,
    readonly bytes: Uint8Array,
  ) {}
}

/** A typed error of the core (`{ type, reason? | detail? | … }`) as the refusal a client gets. */
export function refusalOf(status: number, e: { readonly type: string }): Refusal {
  const fields = e as { reason?: unknown; detail?: unknown; message?: unknown };
  const reason = [fields.reason, fields.detail, fields.message].find((x): x is string => typeof x === 'string');
  // Otherwise the error's names (a table, a column, an id), never a cell: errors carry no row data.
  const named = Object.entries(e as Record<string, unknown>)
    .filter((f): f is [string, string | number] => f[0] !== 'type' && ['string', 'number'].includes(typeof f[1]))
    .map(([k, v]) => `${k} ${v}`)
    .join(', ');
  return refusal(status, e.type, reason ?? named);
}

/** A response checked against its schema: a mismatch is the node's fault, a 500, never sent. */
export function checked<T>(validate: ValidateFunction, body: T): T {
  if (!validate(body))
    throw new Error(`api: a response does not match the document (${JSON.stringify(validate.errors)})`);
  return body;
}

export function decode(part: string): string {
  try {
    return decodeURIComponent(part);
  } catch {
    throw refusal(400, 'BadRequest', 'a path part is not valid percent-encoding');
  }
}

/**
 * A request's body of media type `type`, at most `max` bytes: 415 for another type, 413 past
 * the limit (counted as it arrives, so an oversized body is never held whole).
 */
export async function readBody(req: IncomingMessage, type: string, max: number): Promise<Buffer> {
  if (!(req.headers['content-type'] ?? '').startsWith(type)) {
    throw refusal(415, 'UnsupportedMediaType', `send ${type}`);
  }
  const declared = Number(req.headers['content-length'] ?? 0);
  if (declared > max) throw refusal(413, 'TooLarge', `a body is at most ${max} bytes`);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > max) throw refusal(413, 'TooLarge', `a body is at most ${max} bytes`);
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

export async function readJson(req: IncomingMessage, max: number): Promise<unknown> {
  const body = await readBody(req, 'application/json', max);
  try {
    return JSON.parse(body.toString('utf8')) as unknown;
  } catch {
    throw refusal(400, 'BadRequest', 'the body is not JSON');
  }
}

export function send(res: ServerResponse, status: number, body: unknown): void {
  const bytes = body instanceof Bytes ? body.bytes : Buffer.from(JSON.stringify(body), 'utf8');
  res.writeHead(status, {
    'content-type': body instanceof Bytes ? body.contentType : 'application/json',
    'content-length': bytes.length,
    'cache-control': 'no-store',
  });
  res.end(bytes);
}
