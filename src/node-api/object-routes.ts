/**
 * The object plane and the sync state through the node's API (issue 27): objects listed,
 * their manifests opened, CSV imported into an encrypted object, objects downloaded
 * decrypted, SQL over the catalog, placement, peers and a sync cycle on demand. Each acts as
 * this machine (MeshNode): an object it cannot read is listed as bytes it stores, never
 * opened; a query reads only what its catalog opens.
 */
import type { IncomingMessage } from 'node:http';
import type { ValidateFunction } from 'ajv/dist/2020.js';
import type { QueryResult } from '../core/query/execute.js';
import { isDomainName, type DomainName } from '../core/schema.js';
import type { MeshNode, NodeSnapshot } from '../runtime/mesh-node.js';
import type { ObjectEntry } from '../runtime/mesh-objects.js';
import { Bytes, checked, readBody, readJson, refusal, refusalOf } from './http.js';

/** The largest CSV file an import through the API takes (the browser's import streams any size). */
export const MAX_IMPORT = 64 * 1024 * 1024;
/** Rows a query answers unless the request asks for fewer (or more, up to the schema's 100,000). */
const QUERY_ROWS = 10_000;

export type ObjectValidators = {
  readonly objectList: ValidateFunction;
  readonly objectSummary: ValidateFunction;
  readonly objectDetail: ValidateFunction;
  readonly queryRequest: ValidateFunction;
  readonly queryResult: ValidateFunction;
  readonly peers: ValidateFunction;
  readonly placement: ValidateFunction;
  readonly setPlacement: ValidateFunction;
  readonly written: ValidateFunction;
  readonly synced: ValidateFunction;
  readonly deleteRows: ValidateFunction;
  readonly deleted: ValidateFunction;
  readonly compact: ValidateFunction;
  readonly compacted: ValidateFunction;
  readonly deletable: ValidateFunction;
  readonly objectsQuery: ValidateFunction;
  readonly importQuery: ValidateFunction;
  readonly downloadQuery: ValidateFunction;
  readonly describe: (v: ValidateFunction) => string;
};

type Deps = {
  readonly node: MeshNode;
  readonly snapshot: () => NodeSnapshot | undefined;
  readonly v: ObjectValidators;
  readonly maxJson: number;
};

/** An object as the API lists it: what the catalog and the opened manifest say, nothing of its rows. */
export function objectSummary(e: ObjectEntry) {
  const m = e.manifest;
  return {
    id: e.id,
    state: e.state,
    domain: e.domain ?? null,
    producer: e.producer ?? null,
    table: m?.table ?? null,
    rows: m?.rows ?? null,
    formedAt: m?.formedAt ?? null,
    kind: !m ? 'unknown' : m.kind === 'delete' ? 'delete' : m.supersedes.length > 0 ? 'compaction' : 'data',
    readable: m !== undefined,
    held: e.held,
    size: e.size ?? null,
    ...((e.error ?? e.refused) === undefined ? {} : { reason: (e.error ?? e.refused)! }),
  };
}

/** JSON has no 64-bit integers: a count or a sum past 2^53 is given as its decimal text. */
const jsonCell = (c: unknown): string | number | boolean | null =>
  typeof c === 'bigint' ? (Number.isSafeInteger(Number(c)) ? Number(c) : c.toString()) : (c as string | number);

function queryAnswer(r: QueryResult, limit: number) {
  const e = r.explain;
  return {
    table: r.table,
    columns: r.columns.map((c) => ({ name: c.name, type: c.type })),
    rows: r.rows.slice(0, limit).map((row) => row.map(jsonCell)),
    ...(r.rowIds ? { rowIds: r.rowIds.slice(0, limit) } : {}),
    truncated: r.rows.length > limit,
    explain: {
      considered: e.considered,
      pruned: e.pruned.map((p) => ({ id: p.id, reason: p.reason })),
      scanned: e.scanned,
      rowGroupsScanned: e.rowGroupsScanned,
      rowGroupsPruned: e.rowGroupsPruned,
      rowsScanned: e.rowsScanned,
      bytesRead: e.bytesRead,
      ...(e.bytesFetched === undefined ? {} : { bytesFetched: e.bytesFetched }),
    },
  };
}

/**
 * The routes under `/v1/objects` (deletes and compactions too), `/v1/object-tables`, `/v1/query`,
 * `/v1/placement`, `/v1/peers` and `/v1/sync`;
 * the handler answers undefined for any other path.
 */
export function objectRoutes({ node, snapshot, v, maxJson }: Deps) {
  const params = (url: URL, validate: ValidateFunction): Record<string, string> => {
    const query = Object.fromEntries(url.searchParams);
    if (!validate(query)) throw refusal(400, 'BadRequest', v.describe(validate));
    return query;
  };
  const entries = async (): Promise<ObjectEntry[]> => {
    const listed = await node.objects.entries();
    if (!listed.ok) throw refusalOf(503, listed.error);
    return listed.value;
  };
  const entry = async (id: string): Promise<ObjectEntry> => {
    const found = (await entries()).find((e) => e.id === id);
    if (!found) throw refusal(404, 'UnknownObject', 'no such object on this machine');
    return found;
  };
  const ready = (): NodeSnapshot => {
    const s = snapshot();
    if (!s) throw refusal(503, 'Starting', 'the node is starting');
    return s;
  };

  const list = async (url: URL) => {
    const { domain, table } = params(url, v.objectsQuery);
    const shown = (await entries()).filter(
      (e) => (domain === undefined || e.domain === domain) && (table === undefined || e.manifest?.table === table),
    );
    return checked(v.objectList, { objects: shown.map(objectSummary) });
  };

  const importCsv = async (req: IncomingMessage, url: URL) => {
    const { domain, table } = params(url, v.importQuery);
    if (!isDomainName(domain)) throw refusal(400, 'BadRequest', 'not a domain name');
    const body = await readBody(req, 'text/csv', MAX_IMPORT);
    const file = new File([new Uint8Array(body)], `${table}.csv`, { type: 'text/csv' });
    const formed = await node.objects.importCsv(file, domain, undefined, table);
    if (!formed.ok) throw refusalOf(422, formed.error);
    return checked(v.objectSummary, objectSummary(await entry(formed.value.id)));
  };

  const detail = async (id: string) => {
    const found = await entry(id);
    if (!found.manifest) throw refusal(422, 'Unreadable', found.error ?? 'this machine cannot open its manifest');
    const m = found.manifest;
    const manifest = {
      storageId: m.storageId,
      domain: m.domain,
      table: m.table,
      producer: m.producer,
      rows: m.rows,
      bytes: m.bytes,
      time: m.time ?? null,
      partitions: m.partitions,
      schema: m.schema.map((c) => ({ name: c.name, type: c.type, nullable: c.nullable })),
      columns: m.columns.map((c) => ({
        name: c.name,
        nulls: c.nulls,
        ...(c.min === undefined ? {} : { min: c.min }),
        ...(c.max === undefined ? {} : { max: c.max }),
      })),
      supersedes: [...m.supersedes],
    };
    return checked(v.objectDetail, { object: objectSummary(found), manifest });
  };

  const download = async (id: string, url: URL) => {
    const format = params(url, v.downloadQuery)['format'] === 'parquet' ? 'parquet' : 'csv';
    const bytes = await node.objects.download(id, format);
    if (!bytes.ok) throw refusalOf(bytes.error.type === 'UnknownObject' ? 404 : 422, bytes.error);
    return new Bytes(format === 'csv' ? 'text/csv; charset=utf-8' : 'application/vnd.apache.parquet', bytes.value);
  };

  const query = async (req: IncomingMessage) => {
    const body = await readJson(req, maxJson);
    if (!v.queryRequest(body)) throw refusal(400, 'BadRequest', v.describe(v.queryRequest));
    const { sql, limit, domains } = body as { sql: string; limit?: number; domains?: string[] };
    const result = await node.objects.query(sql, domains ? { domains: new Set(domains) } : {});
    if (!result.ok) throw refusalOf(422, result.error);
    return checked(v.queryResult, queryAnswer(result.value, limit ?? QUERY_ROWS));
  };

  const deleteRows = async (req: IncomingMessage) => {
    const body = await readJson(req, maxJson);
    if (!v.deleteRows(body)) throw refusal(400, 'BadRequest', v.describe(v.deleteRows));
    const { table, rows } = body as { table: string; rows: string[] };
    const formed = await node.objects.deleteRows(table, rows);
    if (!formed.ok) throw refusalOf(422, formed.error);
    return checked(v.deleted, { deleteObjects: formed.value.map((p) => p.id) });
  };

  const compact = async (req: IncomingMessage) => {
    const body = await readJson(req, maxJson);
    if (!v.compact(body)) throw refusal(400, 'BadRequest', v.describe(v.compact));
    const { domain, table } = body as { domain: DomainName; table: string };
    const done = await node.objects.compact(domain, table);
    if (!done.ok) throw refusalOf(422, done.error);
    const c = done.value;
    return checked(v.compacted, {
      compacted: c ? { object: c.object.id, inputs: c.inputs, rows: c.rows, dropped: c.dropped } : null,
    });
  };

  const allowDeletes = async (table: string) => {
    const allowed = await node.objects.allowDeletes(table);
    if (!allowed.ok) throw refusalOf(422, allowed.error);
    return checked(v.deletable, { tables: [...new Set([...ready().deletableTables, table])].sort() });
  };

  const peers = () => {
    const { sync } = ready();
    return checked(v.peers, {
      mode: sync.mode,
      lastBatchAt: sync.lastBatchAt ?? null,
      logLength: sync.logLength,
      peers: sync.peers.map((p) => ({
        endpoint: p.endpoint,
        name: p.name,
        cursor: p.cursor,
        watermark: p.watermark,
        pending: p.pending,
      })),
    });
  };

  const placement = () => {
    const s = ready();
    const names = new Map(s.machines.map((m) => [m.signer, m.name]));
    return checked(v.placement, {
      placement: Object.entries(s.placement).map(([signer, domains]) => ({
        signer,
        name: names.get(signer) ?? '',
        domains,
      })),
    });
  };

  const place = async (req: IncomingMessage, signer: string) => {
    const body = await readJson(req, maxJson);
    if (!v.setPlacement(body)) throw refusal(400, 'BadRequest', v.describe(v.setPlacement));
    if (!ready().machines.some((m) => m.signer === signer && !m.removed))
      throw refusal(404, 'UnknownMachine', 'no such machine in the mesh');
    const written = await node.writes.setPlacement(signer, (body as { domains: string }).domains);
    if (!written.ok) throw refusalOf(422, written.error);
    return checked(v.written, { written: written.value.outerId });
  };

  return async (req: IncomingMessage, url: URL, method: string): Promise<unknown> => {
    const path = url.pathname;
    const only = (allowed: string): void => {
      if (method !== allowed) throw refusal(405, 'MethodNotAllowed', `${method} ${path}`);
    };
    if (path === '/v1/objects') {
      if (method === 'POST') return importCsv(req, url);
      only('GET');
      return list(url);
    }
    if (path === '/v1/objects/deletes') {
      only('POST');
      return deleteRows(req);
    }
    if (path === '/v1/objects/compactions') {
      only('POST');
      return compact(req);
    }
    const objectTable = /^\/v1\/object-tables\/([a-z][a-z0-9_]{0,63})$/.exec(path);
    if (objectTable) {
      only('PUT');
      return allowDeletes(objectTable[1]!);
    }
    const object = /^\/v1\/objects\/([^/]+)(\/data)?$/.exec(path);
    if (object) {
      only('GET');
      const id = object[1]!;
      if (!/^[0-9a-f]{64}$/.test(id)) throw refusal(400, 'BadRequest', 'an object id is 64 hex digits');
      return object[2] ? download(id, url) : detail(id);
    }
    if (path === '/v1/query') {
      only('POST');
      return query(req);
    }
    if (path === '/v1/peers') {
      only('GET');
      return peers();
    }
    if (path === '/v1/sync') {
      only('POST');
      return checked(v.synced, { online: await node.syncNow() });
    }
    if (path === '/v1/placement') {
      only('GET');
      return placement();
    }
    const placed = /^\/v1\/placement\/([0-9a-f]{1,200})$/.exec(path);
    if (placed) {
      only('PUT');
      return place(req, placed[1]!);
    }
    return undefined;
  };
}
