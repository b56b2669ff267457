/**
 * `sov node --api 127.0.0.1:PORT`: the headless node's versioned JSON API on the loopback
 * (issue 27; document and schemas in openapi.ts). Every request needs the bearer token kept
 * in `<data>/api.token` (mode 0600, made on first start: token.ts); a missing or wrong one is
 * a 401. Requests and responses are checked against the document's schemas (Ajv); what does
 * not match is a 400 with a typed body, never a guess. The log gets method, route and status
 * only — never a token, a body or a row.
 *
 * It acts as the machine itself: it reads what this machine can read, and writes are signed
 * by this machine and checked by the mesh's rules like any other (MeshWrites).
 */
import { timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import type { MeshNode, NodeSnapshot } from '../runtime/mesh-node.js';
import type { ColumnValue } from '../core/schema.js';
import { tableSpec } from '../core/schema.js';
import { EventStream } from './events.js';
import { OPENAPI, ROWS_QUERY, SCHEMAS } from './openapi.js';

export type NodeApiOptions = {
  readonly host: string;
  readonly port: number;
  readonly token: string;
  readonly node: MeshNode;
  readonly fingerprint: () => string;
  readonly log: (line: string) => void;
};

export type NodeApi = { readonly url: string; close(): Promise<void> };

const MAX_BODY = 256 * 1024;
const LOOPBACK = new Set(['127.0.0.1', '::1', 'localhost']);

/** Why an address may not serve the API (only the loopback, until `--api-tls` exists); undefined if it may. */
export function apiAddressProblem(host: string): string | undefined {
  return LOOPBACK.has(host)
    ? undefined
    : `${host} is not a loopback address: the API serves 127.0.0.1 or ::1 only (TLS for other addresses is not built)`;
}

/** A request the API refuses: its HTTP status and the typed body's type and reason. */
class Refusal extends Error {
  constructor(
    readonly status: number,
    readonly type: string,
    readonly reason: string,
  ) {
    super(`${type}: ${reason}`);
  }
}
const refusal = (status: number, type: string, reason: string): Refusal => new Refusal(status, type, reason);

function compile() {
  const ajv = new Ajv2020({ allErrors: false, strict: true, allowUnionTypes: true });
  // The schemas live where the document keeps them, so their `$ref`s resolve as written there.
  ajv.addKeyword('components');
  ajv.addSchema({ $id: 'api', components: { schemas: SCHEMAS } });
  const of = (name: keyof typeof SCHEMAS): ValidateFunction => ajv.compile({ $ref: `api#/components/schemas/${name}` });
  return {
    status: of('Status'),
    rowPage: of('RowPage'),
    writeRow: of('WriteRow'),
    written: of('Written'),
    invitation: of('Invitation'),
    pairings: of('Pairings'),
    answer: of('Answer'),
    rowsQuery: ajv.compile(ROWS_QUERY),
    describe: (v: ValidateFunction) => ajv.errorsText(v.errors, { dataVar: 'request' }),
  };
}

function statusOf(s: NodeSnapshot, fingerprint: string) {
  return {
    status: s.status,
    name: s.name,
    signer: s.identity.signer,
    fingerprint,
    relay: s.relay,
    pending: s.pending,
    dataVersion: s.dataVersion,
    machines: s.machines
      .filter((m) => !m.recovery)
      .map((m) => ({ signer: m.signer, name: m.name, role: m.role, trusted: m.trusted, removed: m.removed })),
    domains: s.domains.map((d) => ({
      domain: d.domain,
      reads: d.mls !== undefined && !d.mls.removed && !d.mls.awaiting && d.mls.epoch !== undefined,
    })),
  };
}

function pairingsOf(s: NodeSnapshot | undefined) {
  return {
    pairings: (s?.pairings ?? []).map((p) => ({
      inv: p.inv,
      name: p.name,
      fingerprint: p.fingerprint,
      ...(p.sas === undefined ? {} : { sas: p.sas }),
      confirmed: p.confirmed,
      joinerConfirmed: p.joinerConfirmed,
    })),
  };
}

export async function startNodeApi(options: NodeApiOptions): Promise<NodeApi> {
  const { node, log } = options;
  const v = compile();
  const events = new EventStream();
  const token = Buffer.from(options.token, 'utf8');
  let snapshot: NodeSnapshot | undefined;
  let lastStatus = '';
  let lastNotice = 0;
  const unsubscribe = node.subscribe((s) => {
    if (snapshot === undefined) lastNotice = Math.max(0, ...s.notices.map((n) => n.id));
    snapshot = s;
    const status = JSON.stringify([s.status, s.relay, s.machines.length, s.domains.length]);
    if (status !== lastStatus) {
      lastStatus = status;
      events.emit({ type: 'status', data: { status: s.status, relay: s.relay } });
    }
    for (const n of [...s.notices].reverse()) {
      if (n.id <= lastNotice) continue;
      lastNotice = n.id;
      events.emit({ type: 'notice', data: { kind: n.kind, text: n.text } });
    }
  });
  const unRows = node.onRowsChanged((version) => events.emit({ type: 'rows', data: { dataVersion: version } }));

  const authorised = (req: IncomingMessage): boolean => {
    const header = req.headers.authorization ?? '';
    const given = Buffer.from(header.startsWith('Bearer ') ? header.slice(7) : '', 'utf8');
    return given.length === token.length && timingSafeEqual(given, token);
  };

  const route = async (req: IncomingMessage, res: ServerResponse, url: URL): Promise<unknown> => {
    const path = url.pathname;
    if (!path.startsWith('/v1/')) throw refusal(404, 'NotFound', `no route ${path}`);
    if (!authorised(req)) throw refusal(401, 'Unauthorized', 'a bearer token is required: the one in <data>/api.token');
    const method = req.method ?? 'GET';
    if (path === '/v1/openapi.json' && method === 'GET') return OPENAPI;
    if (path === '/v1/status' && method === 'GET') {
      if (!snapshot) throw refusal(503, 'Starting', 'the node is starting');
      return checked(v.status, statusOf(snapshot, options.fingerprint()));
    }
    if (path === '/v1/events' && method === 'GET') {
      const last = req.headers['last-event-id'];
      const now = snapshot && { status: snapshot.status, relay: snapshot.relay };
      events.open(res, typeof last === 'string' ? last : undefined, { type: 'status', data: now ?? {} });
      return STREAMING;
    }
    if (path === '/v1/invitations' && method === 'POST') {
      try {
        return checked(v.invitation, { ticket: await node.pairing.invite() });
      } catch (e) {
        throw refusal(422, 'NotAllowed', (e as Error).message);
      }
    }
    if (path === '/v1/pairings' && method === 'GET') return checked(v.pairings, pairingsOf(snapshot));
    const pairing = /^\/v1\/pairings\/([0-9a-f]{1,64})$/.exec(path);
    if (pairing && method === 'POST') {
      const body = await readJson(req);
      if (!v.answer(body)) throw refusal(400, 'BadRequest', v.describe(v.answer));
      if (!snapshot?.pairings.some((p) => p.inv === pairing[1]))
        throw refusal(404, 'UnknownPairing', 'no such pairing');
      await node.pairing.answer(pairing[1]!, (body as { confirmed: boolean }).confirmed, 'code');
      return checked(v.pairings, pairingsOf(snapshot));
    }
    const rows = /^\/v1\/tables\/([^/]+)\/rows(?:\/([^/]+))?$/.exec(path);
    if (!rows) throw refusal(404, 'NotFound', `no route ${method} ${path}`);
    const table = decode(rows[1]!);
    if (!tableSpec(table)) throw refusal(404, 'UnknownTable', `no table ${table}`);
    if (rows[2] === undefined) {
      if (method !== 'GET') throw refusal(405, 'MethodNotAllowed', `${method} ${path}`);
      return listRows(table, url);
    }
    const row = decode(rows[2]);
    if (row.length === 0 || row.length > 200) throw refusal(400, 'BadRequest', 'a row key is 1 to 200 characters');
    if (method === 'PUT') {
      const body = await readJson(req);
      if (!v.writeRow(body)) throw refusal(400, 'BadRequest', v.describe(v.writeRow));
      const written = await node.writes.writeRow(table, row, (body as { cells: Record<string, ColumnValue> }).cells);
      if (!written.ok) throw refusal(422, written.error.type, 'reason' in written.error ? written.error.reason : '');
      return checked(v.written, { written: written.value.outerId });
    }
    if (method === 'DELETE') {
      const deleted = await node.writes.deleteRow(table, row);
      if (!deleted.ok) throw refusal(422, deleted.error.type, 'reason' in deleted.error ? deleted.error.reason : '');
      return checked(v.written, { written: deleted.value.outerId });
    }
    throw refusal(405, 'MethodNotAllowed', `${method} ${path}`);
  };

  const listRows = async (table: string, url: URL) => {
    const query = Object.fromEntries(url.searchParams);
    if (!v.rowsQuery(query)) throw refusal(400, 'BadRequest', v.describe(v.rowsQuery));
    const offset = Number(query['offset'] ?? 0);
    const page = await node.page({
      table,
      offset,
      limit: Number(query['limit'] ?? 100),
      filter: query['filter'] ?? '',
      deleted: query['deleted'] === 'true',
    });
    // The screen's pages stop at the last row; an API page past the end is empty, so a
    // client reading page after page never sees a row twice.
    const rows = page.offset === offset ? page.rows : [];
    return checked(v.rowPage, {
      table,
      total: page.total,
      offset,
      rows: rows.map((r) => ({ row: r.row, alive: r.alive, values: r.values })),
    });
  };

  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://api.invalid');
    // The log names the route, never a row key or a query (they may be data).
    const shown = url.pathname
      .replace(/^(\/v1\/tables\/[^/]+\/rows)\/[^/]+$/, '$1/{row}')
      .replace(/^\/v1\/pairings\/[^/]+$/, '/v1/pairings/{inv}');
    route(req, res, url).then(
      (body) => {
        if (body === STREAMING) return log(`api: ${req.method} ${shown} 200 (events)`);
        send(res, 200, body);
        log(`api: ${req.method} ${shown} 200`);
      },
      (e: unknown) => {
        const r = isRefusal(e) ? e : refusal(500, 'Internal', 'the node could not answer');
        if (!isRefusal(e)) log(`api: ${req.method} ${shown} failed: ${String(e)}`);
        send(res, r.status, { error: { type: r.type, reason: r.reason } });
        log(`api: ${req.method} ${shown} ${r.status} ${r.type}`);
      },
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => resolve());
  });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : options.port;
  const host = options.host.includes(':') ? `[${options.host}]` : options.host;
  return {
    url: `http://${host}:${port}/v1`,
    close: async () => {
      unsubscribe();
      unRows();
      events.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

const STREAMING = Symbol('streaming');

const isRefusal = (e: unknown): e is Refusal => e instanceof Refusal;

/** A response checked against its schema: a mismatch is the node's fault, a 500, never sent. */
function checked<T>(validate: ValidateFunction, body: T): T {
  if (!validate(body))
    throw new Error(`api: a response does not match the document (${JSON.stringify(validate.errors)})`);
  return body;
}

function decode(part: string): string {
  try {
    return decodeURIComponent(part);
  } catch {
    throw refusal(400, 'BadRequest', 'a path part is not valid percent-encoding');
  }
}

async function readJson(req: IncomingMessage): Promise<unknown> {
  if (!(req.headers['content-type'] ?? '').startsWith('application/json')) {
    throw refusal(415, 'UnsupportedMediaType', 'send application/json');
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY) throw refusal(413, 'TooLarge', `a body is at most ${MAX_BODY} bytes`);
    chunks.push(chunk as Buffer);
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown;
  } catch {
    throw refusal(400, 'BadRequest', 'the body is not JSON');
  }
}

function send(res: ServerResponse, status: number, body: unknown): void {
  const bytes = Buffer.from(JSON.stringify(body), 'utf8');
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': bytes.length,
    'cache-control': 'no-store',
  });
  res.end(bytes);
}
