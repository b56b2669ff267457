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
 * Tools: `sync-status`, `sync-peers`, `read-rows`, `write-row`. Every call is logged on
 * standard error with its arguments' shape (names and types), never their values. Not built
 * yet: `sync-push`, `query`, `list-objects`, the journal tools, and MCP over HTTP at `/mcp`.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { z } from 'zod';
import { domainOf, tableSpec } from '../core/schema.js';
import { NodeApiClient, type ApiResult, type Cell } from '../sdk/client.js';
import { TOKEN_FILE, URL_FILE } from './token.js';

export const MCP_TOOLS = ['sync-status', 'sync-peers', 'read-rows', 'write-row'] as const;
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
  if (offered('sync-peers')) {
    const description = 'The machines of the mesh: names, roles, whether removed';
    server.registerTool('sync-peers', { description }, async () =>
      done(
        'sync-peers',
        {},
        answer(await api.status(), (s) => s.machines),
      ),
    );
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
  return server;
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
  const tools = values['mcp-tools'] === undefined ? [...MCP_TOOLS] : list(values['mcp-tools']);
  const unknown = tools.filter((t) => !(MCP_TOOLS as readonly string[]).includes(t));
  if (unknown.length > 0) {
    say(`unknown tools: ${unknown.join(', ')} (there are: ${MCP_TOOLS.join(', ')})`);
    return 2;
  }
  let url: string;
  let token: string;
  try {
    url = readFileSync(join(values.data, URL_FILE), 'utf8').trim();
    token = readFileSync(join(values.data, TOKEN_FILE), 'utf8').trim();
  } catch {
    say(`no API to talk to in ${values.data}: start the node with --api 127.0.0.1:PORT first`);
    return 1;
  }
  const scope: McpScope = { tools: new Set(tools as ToolName[]), domains: new Set(list(values['mcp-domains'])) };
  const server = meshMcpServer(new NodeApiClient({ url, token }), scope, say);
  await server.connect(new StdioServerTransport());
  say(`serving ${tools.join(', ')} for ${url}; domains in scope: ${[...scope.domains].join(', ') || 'none'}`);
  await new Promise<void>((resolve) => process.stdin.once('close', resolve));
  await server.close();
  return 0;
}
