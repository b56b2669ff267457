/**
 * `sov mcp` (src/node-api/mcp.ts) in front of a real `sov node --api` process, driven by an MCP
 * client from `@modelcontextprotocol/sdk` over stdio: the tools it lists, each allowed one
 * called, a domain or a tool outside the operator's scope refused, and a log of argument
 * shapes that never holds a value.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterAll, describe, expect, it } from 'vitest';
import { MCP_TOOLS } from '../../src/node-api/mcp.ts';
import { NodeApiClient } from '../../src/sdk/client.ts';
import { freePort, spawnRelay } from '../helpers/relay-child.ts';
import { sovNode, stop } from '../helpers/sov-node.ts';

const dir = mkdtempSync(join(tmpdir(), 'sov-mcp-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** An MCP client of `sov mcp --data DIR` with `scope` arguments; its standard error collected. */
async function mcpClient(data: string, scope: readonly string[]) {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: ['src/cli/sov.mjs', 'mcp', '--data', data, ...scope],
    stderr: 'pipe',
  });
  const log: string[] = [];
  transport.stderr?.on('data', (d: Buffer) => log.push(d.toString()));
  const client = new Client({ name: 'sov-test', version: '1' });
  await client.connect(transport);
  return { client, log };
}

const text = (result: Awaited<ReturnType<Client['callTool']>>): string =>
  (result.content as { type: string; text: string }[]).map((c) => c.text).join('');

describe('sov mcp', () => {
  it('offers the node’s tools over stdio, within the tools and domains the operator allows', async () => {
    const relayPort = await freePort();
    const relay = await spawnRelay(relayPort, join(dir, 'relay'));
    const data = join(dir, 'node');
    const node = await sovNode(
      [
        ...['--role', 'server', '--data', data, '--name', 'server', '--api', `127.0.0.1:${await freePort()}`],
        ...['--found', '--relay', `ws://127.0.0.1:${relayPort}/ws`],
      ],
      /relay=ready/,
    );
    const clients: Client[] = [];
    try {
      const url = readFileSync(join(data, 'api.url'), 'utf8').trim();
      const api = new NodeApiClient({ url, token: readFileSync(join(data, 'api.token'), 'utf8').trim() });
      expect((await api.writeRow('device_profiles', 'p1', { name: 'Pump 1' })).ok).toBe(true);

      // Scoped to GENERAL (where device profiles live): every tool, called.
      const scoped = await mcpClient(data, ['--mcp-domains', 'GENERAL']);
      clients.push(scoped.client);
      const { tools } = await scoped.client.listTools();
      expect(tools.map((t) => t.name).sort()).toEqual([...MCP_TOOLS].sort());
      expect(JSON.parse(text(await scoped.client.callTool({ name: 'sync-status', arguments: {} })))).toMatchObject({
        status: 'member',
        relay: 'ready',
      });
      expect(JSON.parse(text(await scoped.client.callTool({ name: 'sync-peers', arguments: {} })))).toMatchObject({
        machines: [expect.objectContaining({ name: 'server', role: 'admin' })],
        peers: [],
      });
      const read = await scoped.client.callTool({
        name: 'read-rows',
        arguments: { table: 'device_profiles', limit: 10 },
      });
      expect((JSON.parse(text(read)) as { rows: { row: string }[] }).rows.map((r) => r.row)).toEqual(['p1']);
      const wrote = await scoped.client.callTool({
        name: 'write-row',
        arguments: { table: 'device_profiles', row: 'p2', cells: { name: 'Pump 2' } },
      });
      expect(wrote.isError).toBeFalsy();
      expect(await api.rows('device_profiles')).toMatchObject({ ok: true, value: { total: 2 } });
      expect(JSON.parse(text(await scoped.client.callTool({ name: 'sync-push', arguments: {} })))).toEqual({
        online: true,
      });
      expect(JSON.parse(text(await scoped.client.callTool({ name: 'list-objects', arguments: {} })))).toEqual({
        objects: [],
      });
      const noObjects = await scoped.client.callTool({ name: 'query', arguments: { sql: 'SELECT count(*) FROM t' } });
      expect([noObjects.isError, text(noObjects)]).toEqual([true, expect.stringMatching(/^UnknownTable/)]);
      // Bad arguments are refused by the tool's schema.
      const bad = await scoped.client.callTool({
        name: 'read-rows',
        arguments: { table: 'device_profiles', limit: 0 },
      });
      expect(bad.isError).toBe(true);

      // No domain in scope: status and machines only; rows neither read nor written.
      const unscoped = await mcpClient(data, []);
      clients.push(unscoped.client);
      const refusedRead = await unscoped.client.callTool({
        name: 'read-rows',
        arguments: { table: 'device_profiles' },
      });
      expect([refusedRead.isError, text(refusedRead)]).toEqual([true, expect.stringMatching(/^OutOfScope/)]);
      const refusedWrite = await unscoped.client.callTool({
        name: 'write-row',
        arguments: { table: 'device_profiles', row: 'p3', cells: { name: 'x' } },
      });
      expect(refusedWrite.isError).toBe(true);
      expect(await api.rows('device_profiles')).toMatchObject({ ok: true, value: { total: 2 } });

      // Only the tools allowed are offered; another is no tool at all.
      const narrow = await mcpClient(data, ['--mcp-tools', 'sync-status', '--mcp-domains', 'GENERAL']);
      clients.push(narrow.client);
      expect((await narrow.client.listTools()).tools.map((t) => t.name)).toEqual(['sync-status']);
      const absent = await narrow.client.callTool({ name: 'read-rows', arguments: { table: 'device_profiles' } });
      expect(absent.isError).toBe(true);

      // The log has each call's shape, never a value.
      const log = scoped.log.join('');
      expect(log).toMatch(/tool read-rows \{table: string, limit: number\} → ok/);
      expect(log).toMatch(/tool write-row \{table: string, row: string, cells: \{name\}\} → ok/);
      expect(log).not.toMatch(/Pump|p2/);
      expect(unscoped.log.join('')).toMatch(/tool read-rows \{table: string\} → refused/);
    } finally {
      for (const c of clients) await c.close();
      await stop(node);
      relay.kill('SIGTERM');
    }
  }, 180_000);
});
