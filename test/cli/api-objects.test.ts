/**
 * The object plane through the headless node's API, on a real `sov node` process that founds a
 * mesh on a real relay: a CSV imported into an encrypted object, listed, its manifest opened,
 * downloaded decrypted, queried with SQL (scoped to domains), placement read and written, peers
 * and a sync cycle; refusals typed (400, 404, 405, 413, 415, 422); every answer matches the
 * node's document. Then MCP over streamable HTTP at `/mcp` with an MCP client from
 * `@modelcontextprotocol/sdk`: behind the token, the object tools called within the node's
 * `--mcp-domains`, and refused outside it.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, describe, expect, it } from 'vitest';
import { SCHEMAS } from '../../src/node-api/openapi.ts';
import { MCP_TOOLS } from '../../src/node-api/mcp.ts';
import { NodeApiClient } from '../../src/sdk/client.ts';
import { freePort, spawnRelay } from '../helpers/relay-child.ts';
import { sovNode, stop } from '../helpers/sov-node.ts';

const dir = mkdtempSync(join(tmpdir(), 'sov-api-objects-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const CSV = [
  'ts,site,temp',
  ...Array.from({ length: 40 }, (_, i) =>
    [new Date(Date.UTC(2026, 0, 1) + i * 3_600_000).toISOString(), i % 2 ? 'north' : 'south', (i / 2).toFixed(1)].join(
      ',',
    ),
  ),
].join('\n');

const ajv = new Ajv2020({ strict: true, allowUnionTypes: true });
ajv.addKeyword('components');
ajv.addSchema({ $id: 'api', components: { schemas: SCHEMAS } });
const matches = (name: keyof typeof SCHEMAS, value: unknown) =>
  ajv.validate({ $ref: `api#/components/schemas/${name}` }, value) || ajv.errorsText();

/** A request's options with plain headers (added to the bearer token's). */
type Init = Omit<RequestInit, 'headers'> & { headers?: Record<string, string> };

const text = (result: Awaited<ReturnType<Client['callTool']>>): string =>
  (result.content as { type: string; text: string }[]).map((c) => c.text).join('');

async function mcpOverHttp(url: string, token: string): Promise<Client> {
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { authorization: `Bearer ${token}` } },
  });
  const client = new Client({ name: 'sov-test', version: '1' });
  await client.connect(transport);
  return client;
}

describe('the headless node API: objects, queries, placement, MCP over HTTP', () => {
  it('imports, lists, opens, downloads and queries objects; MCP reads them only within its scope', async () => {
    const relayPort = await freePort();
    const relay = await spawnRelay(relayPort, join(dir, 'relay'));
    const apiPort = await freePort();
    const data = join(dir, 'node');
    const node = await sovNode(
      [
        ...['--role', 'server', '--data', data, '--name', 'server', '--api', `127.0.0.1:${apiPort}`],
        ...['--mcp-domains', 'GENERAL', '--found', '--relay', `ws://127.0.0.1:${relayPort}/ws`],
      ],
      /relay=ready/,
    );
    const clients: Client[] = [];
    try {
      const token = readFileSync(join(data, 'api.token'), 'utf8').trim();
      const url = `http://127.0.0.1:${apiPort}/v1`;
      const api = new NodeApiClient({ url, token });
      const raw = (path: string, init: Init = {}) =>
        fetch(`${url}${path}`, { ...init, headers: { authorization: `Bearer ${token}`, ...init.headers } });

      // A CSV file becomes one encrypted object in GENERAL, published.
      const imported = await api.importCsv('GENERAL', 'readings', CSV);
      if (!imported.ok) throw new Error(`${imported.error.type}: ${imported.error.reason}`);
      expect(matches('ObjectSummary', imported.value)).toBe(true);
      expect(imported.value).toMatchObject({ domain: 'GENERAL', table: 'readings', rows: 40, readable: true });
      const id = imported.value.id;
      expect((await api.sync()).ok).toBe(true);
      const listed = await api.objects({ table: 'readings' });
      if (!listed.ok) throw new Error(listed.error.type);
      expect(matches('ObjectList', listed.value)).toBe(true);
      expect(listed.value.objects.map((o) => [o.id, o.kind])).toEqual([[id, 'data']]);
      expect(await api.objects({ domain: 'LAB' })).toMatchObject({ ok: true, value: { objects: [] } });

      // Its manifest: provenance and the pruning statistics.
      const opened = await api.object(id);
      if (!opened.ok) throw new Error(opened.error.type);
      expect(matches('ObjectDetail', opened.value)).toBe(true);
      expect(opened.value.manifest).toMatchObject({ storageId: id, table: 'readings', rows: 40 });
      expect(opened.value.manifest.schema.map((c) => c.name)).toEqual(expect.arrayContaining(['ts', 'site', 'temp']));
      expect(opened.value.manifest.columns.find((c) => c.name === 'site')).toMatchObject({
        min: 'north',
        max: 'south',
      });

      // Downloaded decrypted, as CSV and as plaintext Parquet.
      const csv = await api.download(id);
      if (!csv.ok) throw new Error(csv.error.type);
      const lines = new TextDecoder().decode(csv.value).trim().split('\n');
      expect(lines).toHaveLength(41);
      expect(lines[0]).toMatch(/ts.*site.*temp/);
      const parquet = await api.download(id, 'parquet');
      expect(parquet.ok && new TextDecoder().decode(parquet.value.subarray(0, 4))).toBe('PAR1');

      // SQL over the catalog: rows and the explain summary; scoped to a domain with no objects, none.
      const query = await api.query("SELECT site, count(*) AS n FROM readings WHERE site = 'north' GROUP BY site");
      if (!query.ok) throw new Error(`${query.error.type}: ${query.error.reason}`);
      expect(matches('QueryResult', query.value)).toBe(true);
      expect(query.value).toMatchObject({ table: 'readings', rows: [['north', 20]], truncated: false });
      expect(query.value.explain).toMatchObject({ considered: 1, scanned: 1 });
      const limited = await api.query('SELECT ts FROM readings', { limit: 5 });
      expect(limited.ok && [limited.value.rows.length, limited.value.truncated]).toEqual([5, true]);
      const elsewhere = await api.query('SELECT count(*) AS n FROM readings', { domains: ['LAB'] });
      expect(elsewhere.ok || elsewhere.error).toMatchObject({
        status: 422,
        type: 'UnknownTable',
        reason: 'table readings',
      });

      // Rows deleted by their identities once an admin allows it: gone from queries and downloads.
      const north = await api.query("SELECT ts FROM readings WHERE site = 'north'");
      if (!north.ok || !north.value.rowIds) throw new Error('a plain query answers row identities');
      expect(north.value.rowIds).toHaveLength(20);
      const early = await api.deleteObjectRows('readings', north.value.rowIds.slice(0, 3));
      expect(early.ok || early.error).toMatchObject({ status: 422, type: 'InvalidDelete' });
      expect(await api.allowDeletes('readings')).toMatchObject({ ok: true, value: { tables: ['readings'] } });
      const deleted = await api.deleteObjectRows('readings', north.value.rowIds.slice(0, 3));
      expect(deleted.ok && deleted.value.deleteObjects).toHaveLength(1);
      const count = async () => {
        const n = await api.query('SELECT count(*) AS n FROM readings');
        return n.ok ? n.value.rows[0]![0] : n.error.type;
      };
      expect(await count()).toBe(37);
      const shown = await api.download(id);
      expect(shown.ok && new TextDecoder().decode(shown.value).trim().split('\n')).toHaveLength(38);
      // A second object, then a compaction of both: the deleted rows left out, queries answering the same.
      const second = await api.importCsv('GENERAL', 'readings', CSV);
      if (!second.ok) throw new Error(second.error.type);
      expect(await count()).toBe(77);
      const compacted = await api.compact('GENERAL', 'readings');
      if (!compacted.ok) throw new Error(`${compacted.error.type}: ${compacted.error.reason}`);
      expect(matches('Compacted', compacted.value)).toBe(true);
      expect(compacted.value.compacted).toMatchObject({ inputs: 2, rows: 77, dropped: 3 });
      expect(await count()).toBe(77);
      expect(await api.compact('GENERAL', 'readings')).toMatchObject({ ok: true, value: { compacted: null } });

      // Peers, placement (this admin places itself), a sync cycle.
      const peers = await api.peers();
      expect(peers.ok && matches('Peers', peers.value)).toBe(true);
      const status = await api.status();
      if (!status.ok) throw new Error(status.error.type);
      const self = status.value.signer;
      expect((await api.setPlacement(self, 'GENERAL')).ok).toBe(true);
      const placement = await api.placement();
      expect(placement.ok && placement.value.placement).toEqual([{ signer: self, name: 'server', domains: 'GENERAL' }]);
      expect(await api.sync()).toMatchObject({ ok: true, value: { online: true } });

      // Refusals, typed: bad input 400, unknown 404, wrong method 405, too large 413, wrong type 415, refused 422.
      const refusals: [string, Init, number, string][] = [
        ['/objects/nothex', {}, 400, 'BadRequest'],
        [`/objects/${'0'.repeat(64)}`, {}, 404, 'UnknownObject'],
        [`/objects/${'0'.repeat(64)}/data`, {}, 404, 'UnknownObject'],
        [`/objects/${id}/data?format=xlsx`, {}, 400, 'BadRequest'],
        ['/objects?domain=general', {}, 400, 'BadRequest'],
        ['/objects', { method: 'DELETE' }, 405, 'MethodNotAllowed'],
        ['/query', { method: 'GET' }, 405, 'MethodNotAllowed'],
        [
          '/objects/deletes',
          {
            method: 'POST',
            body: '{"table":"readings","rows":["xyz"]}',
            headers: { 'content-type': 'application/json' },
          },
          400,
          'BadRequest',
        ],
        ['/object-tables/Bad-Name', { method: 'PUT' }, 404, 'NotFound'],
        ['/objects?domain=GENERAL&table=t', { method: 'POST', body: CSV }, 415, 'UnsupportedMediaType'],
        [
          '/objects?domain=GENERAL',
          { method: 'POST', body: CSV, headers: { 'content-type': 'text/csv' } },
          400,
          'BadRequest',
        ],
        [
          '/objects?domain=NOPE&table=t',
          { method: 'POST', body: CSV, headers: { 'content-type': 'text/csv' } },
          422,
          'NoDomainKey',
        ],
        [
          '/objects?domain=GENERAL&table=t',
          { method: 'POST', body: 'only a header', headers: { 'content-type': 'text/csv' } },
          422,
          '',
        ],
        ['/query', { method: 'POST', body: '{"sql":""}', headers: { 'content-type': 'application/json' } }, 400, ''],
        [
          '/query',
          { method: 'POST', body: '{"sql":"DROP TABLE readings"}', headers: { 'content-type': 'application/json' } },
          422,
          '',
        ],
        [
          '/query',
          {
            method: 'POST',
            body: JSON.stringify({ sql: 'x'.repeat(300_000) }),
            headers: { 'content-type': 'application/json' },
          },
          413,
          'TooLarge',
        ],
        [
          `/placement/${'ab'.repeat(32)}`,
          { method: 'PUT', body: '{"domains":"*"}', headers: { 'content-type': 'application/json' } },
          404,
          'UnknownMachine',
        ],
        [
          `/placement/${self}`,
          { method: 'PUT', body: '{"domains":"<script>"}', headers: { 'content-type': 'application/json' } },
          400,
          'BadRequest',
        ],
      ];
      for (const [path, init, status, type] of refusals) {
        const res = await raw(path, init);
        const body = (await res.json()) as { error: { type: string } };
        expect([path, res.status]).toEqual([path, status]);
        expect(matches('Error', body)).toBe(true);
        if (type) expect([path, body.error.type]).toEqual([path, type]);
      }
      // None of the refused imports formed an object (the table's objects: the import, a delete, a compaction).
      const after = await api.objects({ table: 'readings' });
      expect(after.ok && after.value.objects.filter((o) => o.kind === 'data').map((o) => o.id)).toEqual(
        expect.arrayContaining([id, second.value.id]),
      );
      expect(after.ok && after.value.objects.filter((o) => o.kind === 'data')).toHaveLength(2);

      // MCP over HTTP: the token is required.
      const mcpUrl = `http://127.0.0.1:${apiPort}/mcp`;
      expect((await fetch(mcpUrl, { method: 'POST' })).status).toBe(401);
      const mcp = await mcpOverHttp(mcpUrl, token);
      clients.push(mcp);
      expect((await mcp.listTools()).tools.map((t) => t.name).sort()).toEqual([...MCP_TOOLS].sort());
      const objects = JSON.parse(text(await mcp.callTool({ name: 'list-objects', arguments: {} }))) as {
        objects: { id: string }[];
      };
      expect(objects.objects.map((o) => o.id)).toContain(id);
      const answered = await mcp.callTool({
        name: 'query',
        arguments: { sql: 'SELECT count(*) AS n FROM readings' },
      });
      expect(JSON.parse(text(answered))).toMatchObject({ rows: [[77]], objectsOutOfScope: 0 });
      expect(JSON.parse(text(await mcp.callTool({ name: 'sync-push', arguments: {} })))).toEqual({ online: true });
      expect(JSON.parse(text(await mcp.callTool({ name: 'sync-peers', arguments: {} })))).toMatchObject({
        machines: [{ name: 'server' }],
        mode: expect.any(String) as unknown,
      });
      // The node's log has the calls' shapes, never the SQL.
      expect(node.lines.some((l) => /mcp: tool query \{sql: string\} → ok/.test(l))).toBe(true);
      expect(node.lines.join('\n')).not.toMatch(/SELECT|north/);
    } finally {
      for (const c of clients) await c.close();
      await stop(node);
      relay.kill('SIGTERM');
    }
  }, 180_000);

  it('refuses MCP a domain outside the node’s --mcp-domains', async () => {
    const relayPort = await freePort();
    const relay = await spawnRelay(relayPort, join(dir, 'relay-scope'));
    const apiPort = await freePort();
    const data = join(dir, 'unscoped');
    const node = await sovNode(
      [
        ...['--role', 'server', '--data', data, '--name', 'server', '--api', `127.0.0.1:${apiPort}`],
        ...['--mcp-tools', 'list-objects,query', '--found', '--relay', `ws://127.0.0.1:${relayPort}/ws`],
      ],
      /relay=ready/,
    );
    let mcp: Client | undefined;
    try {
      const token = readFileSync(join(data, 'api.token'), 'utf8').trim();
      const api = new NodeApiClient({ url: `http://127.0.0.1:${apiPort}/v1`, token });
      expect((await api.importCsv('GENERAL', 'readings', CSV)).ok).toBe(true);
      mcp = await mcpOverHttp(`http://127.0.0.1:${apiPort}/mcp`, token);
      expect((await mcp.listTools()).tools.map((t) => t.name).sort()).toEqual(['list-objects', 'query']);
      expect(JSON.parse(text(await mcp.callTool({ name: 'list-objects', arguments: {} })))).toEqual({ objects: [] });
      const refused = await mcp.callTool({ name: 'query', arguments: { sql: 'SELECT count(*) AS n FROM readings' } });
      expect([refused.isError, text(refused)]).toEqual([true, expect.stringMatching(/^OutOfScope/)]);
      const absent = await mcp.callTool({ name: 'sync-status', arguments: {} });
      expect(absent.isError).toBe(true);
    } finally {
      await mcp?.close();
      await stop(node);
      relay.kill('SIGTERM');
    }
  }, 180_000);
});
