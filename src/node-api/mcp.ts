/**
 * `sov mcp --data DIR`: the Model Context Protocol over standard input and output, for AI
 * agents and their hosts (issue 27), built on `@modelcontextprotocol/sdk`. It is a client of
 * the running node's loopback API (server.ts), found through `DIR/api.url` and `DIR/api.token`
 * — so it acts as that machine, within the same trust rules — and the operator narrows it
 * further:
 *
 *   --mcp-tools A,B     only these tools are offered (default: every one below)
 *   --mcp-domains D,E   only these domains' rows may leave the node through MCP (default: none;
 *                       the status and the machines are not domain data)
 *
 * Tools: `sync-status`, `sync-push`, `sync-peers`, `read-rows`, `write-row`, `list-objects`,
 * `query`. Every call is logged (standard error here, the node's log over HTTP) with its
 * arguments' shape (names and types), never their values. The node's API serves the same
 * tools over streamable HTTP at `/mcp` (`mcpHttp`), scoped by the node's own `--mcp-tools`
 * and `--mcp-domains`. Not built: the journal tools (there is no journal yet: issue 28).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { z } from 'zod';
import { parseSql } from '../core/query/sql.js';
import { domainOf, tableSpec } from '../core/schema.js';
import { NodeApiClient, type ApiResult, type Cell } from '../sdk/client.js';
import { refusal } from './http.js';
import { TOKEN_FILE, URL_FILE } from './token.js';

export const MCP_TOOLS = [
  'sync-status',
  'sync-push',
  'sync-peers',
  'read-rows',
  'write-row',
  'list-objects',
  'query',
] as const;
type ToolName = (typeof MCP_TOOLS)[number];

export const MCP_USAGE = 'mcp --data DIR [--mcp-tools NAME,…] [--mcp-domains DOMAIN,…]';

type Reply = { content: { type: 'text'; text: string }[]; isError?: boolean };
const reply = (value: unknown): Reply => ({ content: [{ type: 'text', text: JSON.stringify(value) }] });
const refuse = (reason: string): Reply => ({ content: [{ type: 'text', text: reason }], isError: true });
const answer = <T>(result: ApiResult<T>, shape: (v: T) => unknown = (v) => v): Reply =>
  result.ok ? reply(shape(result.value)) : refuse(`${result.error.type}: ${result.error.reason}`);

/** The names and types of a call's arguments, never their values (cells by name only). */
export function argumentShape(args: Record<string, unknown>): string {
  const shape = (v: unknown): string =>
    v === null
      ? 'null'
      : Array.isArray(v)
        ? 'array'
        : typeof v === 'object'
          ? `{${Object.keys(v).sort().join(',')}}`
          : typeof v;
  return `{${Object.entries(args)
    .map(([k, v]) => `${k}: ${shape(v)}`)
    .join(', ')}}`;
}

export type McpScope = { readonly tools: ReadonlySet<ToolName>; readonly domains: ReadonlySet<string> };

/** The MCP server over `api`, offering the tools `scope` allows; `log` gets one line per call. */
export function meshMcpServer(api: NodeApiClient, scope: McpScope, log: (line: string) => void): McpServer {
  const server = new McpServer({ name: 'sovereign-mesh', version: '1' });
  const offered = (name: ToolName): boolean => scope.tools.has(name);
  const done = (name: ToolName, args: Record<string, unknown>, result: Reply): Reply => {
    log(`tool ${name} ${argumentShape(args)} → ${result.isError ? 'refused' : 'ok'}`);
    return result;
  };
  const inScope = (domain: string | undefined): boolean => domain !== undefined && scope.domains.has(domain);

  if (offered('sync-status')) {
    const description = 'This machine, its relay session, pending frames, the mesh’s domains';
    server.registerTool('sync-status', { description }, async () =>
      done(
        'sync-status',
        {},
        answer(await api.status(), ({ status, name, relay, pending, domains }) => ({
          status,
          name,
          relay,
          pending,
          domains,
        })),
      ),
    );
  }
  if (offered('sync-push')) {
    const description = 'Runs a sync cycle now: unacknowledged events offered again, objects published';
    server.registerTool('sync-push', { description }, async () => done('sync-push', {}, answer(await api.sync())));
  }
  if (offered('sync-peers')) {
    const description = 'The machines of the mesh and, per peer, what it acknowledged and what is pending';
    server.registerTool('sync-peers', { description }, async () => {
      const [status, peers] = await Promise.all([api.status(), api.peers()]);
      const result = status.ok ? answer(peers, (p) => ({ machines: status.value.machines, ...p })) : answer(status);
      return done('sync-peers', {}, result);
    });
  }
  if (offered('read-rows')) {
    const inputSchema = {
      table: z.string().min(1).max(64),
      offset: z.number().int().min(0).optional(),
      limit: z.number().int().min(1).max(500).optional(),
    };
    const read = async ({
      table,
      offset,
      limit,
    }: {
      table: string;
      offset?: number | undefined;
      limit?: number | undefined;
    }) => {
      const spec = tableSpec(table);
      if (!spec) return refuse(`UnknownTable: no table ${table}`);
      if (spec.domain !== 'row' && !inScope(spec.domain)) {
        return refuse(`OutOfScope: ${table} is in domain ${spec.domain}, outside this MCP server's scope`);
      }
      const page = await api.rows(table, { offset: offset ?? 0, limit: limit ?? 100 });
      // Tables whose rows each name a domain: only the rows of domains in scope.
      return answer(page, (p) => ({ ...p, rows: p.rows.filter((r) => inScope(domainOf(table, r.row))) }));
    };
    const description = 'A page of a table’s rows (only domains this server is scoped to)';
    server.registerTool('read-rows', { description, inputSchema }, async (args) =>
      done('read-rows', args, await read(args)),
    );
  }
  if (offered('write-row')) {
    const inputSchema = {
      table: z.string().min(1).max(64),
      row: z.string().min(1).max(200),
      cells: z.record(z.union([z.string(), z.number(), z.boolean(), z.null()])),
    };
    const write = async ({ table, row, cells }: { table: string; row: string; cells: Record<string, Cell> }) => {
      const domain = domainOf(table, row);
      if (!inScope(domain))
        return refuse(`OutOfScope: ${table} ${domain ?? '(no domain)'} is outside this MCP server's scope`);
      return answer(await api.writeRow(table, row, cells));
    };
    const description = 'Writes cells of a row, signed by this machine (only domains this server is scoped to)';
    server.registerTool('write-row', { description, inputSchema }, async (args) =>
      done('write-row', args, await write(args)),
    );
  }
  if (offered('list-objects')) {
    const inputSchema = { table: z.string().min(1).max(64).optional() };
    const listObjects = async ({ table }: { table?: string | undefined }) =>
      answer(await api.objects(table === undefined ? {} : { table }), (l) => ({
        objects: l.objects.filter((o) => inScope(o.domain ?? undefined)),
      }));
    const description = 'The objects of the domains this server is scoped to: table, rows, producer, when formed';
    server.registerTool('list-objects', { description, inputSchema }, async (args) =>
      done('list-objects', args, await listObjects(args)),
    );
  }
  if (offered('query')) {
    const inputSchema = { sql: z.string().min(1).max(10_000), limit: z.number().int().min(1).max(500).optional() };
    const query = async ({ sql, limit }: { sql: string; limit?: number | undefined }) => {
      // The table the SQL reads, and its objects this machine reads outside the scope.
      const parsed = parseSql(sql);
      if (!parsed.ok) return refuse(`${parsed.error.type}: the SQL does not parse`);
      const listed = await api.objects({ table: parsed.value.table });
      if (!listed.ok) return answer(listed);
      const outside = listed.value.objects.filter((o) => o.readable && !inScope(o.domain ?? undefined)).length;
      const inside = listed.value.objects.filter((o) => o.readable && inScope(o.domain ?? undefined)).length;
      if (inside === 0 && outside > 0)
        return refuse(
          `OutOfScope: the objects of ${parsed.value.table} are in domains outside this MCP server’s scope`,
        );
      if (scope.domains.size === 0) return refuse('OutOfScope: no domain is in this MCP server’s scope');
      const result = await api.query(sql, { limit: limit ?? 100, domains: [...scope.domains] });
      return answer(result, (r) => ({ ...r, objectsOutOfScope: outside }));
    };
    const description =
      'SQL (SELECT … FROM table [WHERE …] [GROUP BY …]) over the objects of the domains in scope: rows and the explain summary';
    server.registerTool('query', { description, inputSchema }, async (args) => done('query', args, await query(args)));
  }
  return server;
}

/**
 * MCP over streamable HTTP for the node's API at `/mcp` (server.ts checks the token first):
 * stateless, one server and transport per request, JSON responses.
 */
export function mcpHttp(
  api: () => NodeApiClient | undefined,
  scope: McpScope,
  log: (line: string) => void,
): (req: IncomingMessage, res: ServerResponse) => Promise<void> {
  return async (req, res) => {
    const client = api();
    if (!client) throw refusal(503, 'Starting', 'the node is starting');
    const server = meshMcpServer(client, scope, log);
    // No session id generator: stateless, as the SDK's own stateless example.
    const transport = new StreamableHTTPServerTransport({ enableJsonResponse: true });
    res.once('close', () => {
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(req, res);
  };
}

/** The scope `--mcp-tools` and `--mcp-domains` give (every tool, no domain, by default); a problem names unknown tools. */
export function mcpScope(
  tools: string | undefined,
  domains: string | undefined,
): { ok: true; scope: McpScope } | { ok: false; problem: string } {
  const named = tools === undefined ? [...MCP_TOOLS] : list(tools);
  const unknown = named.filter((t) => !(MCP_TOOLS as readonly string[]).includes(t));
  if (unknown.length > 0)
    return { ok: false, problem: `unknown tools: ${unknown.join(', ')} (there are: ${MCP_TOOLS.join(', ')})` };
  return { ok: true, scope: { tools: new Set(named as ToolName[]), domains: new Set(list(domains)) } };
}

function list(value: string | undefined): string[] {
  return (value ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
}

export async function mcpMain(argv: readonly string[]): Promise<number> {
  const say = (line: string): void => void process.stderr.write(`sov mcp: ${line}\n`);
  let values: { data?: string | undefined; 'mcp-tools'?: string | undefined; 'mcp-domains'?: string | undefined };
  try {
    ({ values } = parseArgs({
      args: [...argv],
      strict: true,
      options: { data: { type: 'string' }, 'mcp-tools': { type: 'string' }, 'mcp-domains': { type: 'string' } },
    }));
  } catch (e) {
    say(`${(e as Error).message}\nusage: sov ${MCP_USAGE}`);
    return 2;
  }
  if (!values.data) {
    say(`--data DIR is required\nusage: sov ${MCP_USAGE}`);
    return 2;
  }
  const scoped = mcpScope(values['mcp-tools'], values['mcp-domains']);
  if (!scoped.ok) {
    say(scoped.problem);
    return 2;
  }
  const { scope } = scoped;
  let url: string;
  let token: string;
  try {
    url = readFileSync(join(values.data, URL_FILE), 'utf8').trim();
    token = readFileSync(join(values.data, TOKEN_FILE), 'utf8').trim();
  } catch {
    say(`no API to talk to in ${values.data}: start the node with --api 127.0.0.1:PORT first`);
    return 1;
  }
  const server = meshMcpServer(new NodeApiClient({ url, token }), scope, say);
  await server.connect(new StdioServerTransport());
  say(
    `serving ${[...scope.tools].join(', ')} for ${url}; domains in scope: ${[...scope.domains].join(', ') || 'none'}`,
  );
  await new Promise<void>((resolve) => process.stdin.once('close', resolve));
  await server.close();
  return 0;
}
