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
import { createServer as createHttpsServer } from 'node:https';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import type { MeshNode, NodeSnapshot } from '../runtime/mesh-node.js';
import type { ColumnValue } from '../core/schema.js';
import { tableSpec } from '../core/schema.js';
import { EventStream } from './events.js';
import { checked, decode, isRefusal, readJson, refusal, refusalOf, send } from './http.js';
import { objectRoutes } from './object-routes.js';
import { DOWNLOAD_QUERY, IMPORT_QUERY, OBJECTS_QUERY, OPENAPI, ROWS_QUERY, SCHEMAS } from './openapi.js';

export type NodeApiOptions = {
  readonly host: string;
  readonly port: number;
  readonly token: string;
  readonly node: MeshNode;
  readonly fingerprint: () => string;
  readonly log: (line: string) => void;
  /** Serve HTTPS with this certificate and key (PEM) rather than plain HTTP. */
  readonly tls?: { readonly cert: Buffer; readonly key: Buffer } | undefined;
  /** MCP over streamable HTTP at `/mcp` (mcp.ts), behind the same token; none when not given. */
  readonly mcp?: (req: IncomingMessage, res: ServerResponse) => Promise<void>;
};

export type NodeApi = { readonly url: string; close(): Promise<void> };

const MAX_BODY = 256 * 1024;
const LOOPBACK = new Set(['127.0.0.1', '::1', 'localhost']);

/** Why an address may not serve the API (plain HTTP only on the loopback); undefined if it may. */
export function apiAddressProblem(host: string, tls: boolean): string | undefined {
  return tls || LOOPBACK.has(host)
    ? undefined
    : `${host} is not a loopback address: plain HTTP serves 127.0.0.1 or ::1 only; elsewhere give --api-tls with --tls-cert and --tls-key`;
}

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
    objectList: of('ObjectList'),
    objectSummary: of('ObjectSummary'),
    objectDetail: of('ObjectDetail'),
    queryRequest: of('QueryRequest'),
    queryResult: of('QueryResult'),
    peers: of('Peers'),
    placement: of('Placement'),
    setPlacement: of('SetPlacement'),
    synced: of('Synced'),
    deleteRows: of('DeleteRows'),
    deleted: of('Deleted'),
    compact: of('Compact'),
    compacted: of('Compacted'),
    deletable: of('Deletable'),
    rowsQuery: ajv.compile(ROWS_QUERY),
    objectsQuery: ajv.compile(OBJECTS_QUERY),
    importQuery: ajv.compile(IMPORT_QUERY),
    downloadQuery: ajv.compile(DOWNLOAD_QUERY),
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
  let lastObjects = '';
  let lastMachines = '';
  const unsubscribe = node.subscribe((s) => {
    if (snapshot === undefined) lastNotice = Math.max(0, ...s.notices.map((n) => n.id));
    snapshot = s;
    const status = JSON.stringify([s.status, s.relay, s.machines.length, s.domains.length]);
    if (status !== lastStatus) {
      lastStatus = status;
      events.emit({ type: 'status', data: { status: s.status, relay: s.relay } });
    }
    const objects = s.objects.map((o) => `${o.id}:${o.state}:${o.held ? 1 : 0}`).join();
    if (objects !== lastObjects) {
      lastObjects = objects;
      events.emit({ type: 'objects', data: { objects: s.objects.length } });
    }
    const machines = s.machines.map((m) => `${m.signer}:${m.role}:${m.trusted ? 1 : 0}:${m.removed ? 1 : 0}`).join();
    if (machines !== lastMachines) {
      lastMachines = machines;
      events.emit({
        type: 'machines',
        data: {
          machines: s.machines
            .filter((m) => !m.recovery)
            .map((m) => ({ signer: m.signer, name: m.name, removed: m.removed })),
        },
      });
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

  const objects = objectRoutes({ node, snapshot: () => snapshot, v, maxJson: MAX_BODY });

  const route = async (req: IncomingMessage, res: ServerResponse, url: URL): Promise<unknown> => {
    const path = url.pathname;
    const mcp = path === '/mcp' ? options.mcp : undefined;
    if (!path.startsWith('/v1/') && !mcp) throw refusal(404, 'NotFound', `no route ${path}`);
    if (!authorised(req)) throw refusal(401, 'Unauthorized', 'a bearer token is required: the one in <data>/api.token');
    if (mcp) {
      await mcp(req, res);
      return STREAMING;
    }
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
      const body = await readJson(req, MAX_BODY);
      if (!v.answer(body)) throw refusal(400, 'BadRequest', v.describe(v.answer));
      if (!snapshot?.pairings.some((p) => p.inv === pairing[1]))
        throw refusal(404, 'UnknownPairing', 'no such pairing');
      await node.pairing.answer(pairing[1]!, (body as { confirmed: boolean }).confirmed, 'code');
      return checked(v.pairings, pairingsOf(snapshot));
    }
    const answered = await objects(req, url, method);
    if (answered !== undefined) return answered;
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
      const body = await readJson(req, MAX_BODY);
      if (!v.writeRow(body)) throw refusal(400, 'BadRequest', v.describe(v.writeRow));
      const written = await node.writes.writeRow(table, row, (body as { cells: Record<string, ColumnValue> }).cells);
      if (!written.ok) throw refusalOf(422, written.error);
      return checked(v.written, { written: written.value.outerId });
    }
    if (method === 'DELETE') {
      const deleted = await node.writes.deleteRow(table, row);
      if (!deleted.ok) throw refusalOf(422, deleted.error);
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

  const handle = (req: IncomingMessage, res: ServerResponse): void => {
    const url = new URL(req.url ?? '/', 'http://api.invalid');
    // The log names the route, never a row key or a query (they may be data).
    const shown = url.pathname
      .replace(/^(\/v1\/tables\/[^/]+\/rows)\/[^/]+$/, '$1/{row}')
      .replace(/^\/v1\/pairings\/[^/]+$/, '/v1/pairings/{inv}')
      .replace(/^\/v1\/objects\/[0-9a-f]+/, '/v1/objects/{id}')
      .replace(/^\/v1\/object-tables\/[^/]+$/, '/v1/object-tables/{table}')
      .replace(/^\/v1\/placement\/[^/]+$/, '/v1/placement/{signer}');
    route(req, res, url).then(
      (body) => {
        if (body === STREAMING) return log(`api: ${req.method} ${shown} ${res.statusCode} (streamed)`);
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
  };
  const server: Server = options.tls ? createHttpsServer(options.tls, handle) : createServer(handle);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => resolve());
  });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : options.port;
  const host = options.host.includes(':') ? `[${options.host}]` : options.host;
  return {
    url: `${options.tls ? 'https' : 'http'}://${host}:${port}/v1`,
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
