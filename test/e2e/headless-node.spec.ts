/**
 * A headless storage machine (`sov node --role server`, SQLite) beside a browser
 * workstation: it pairs with the pairing code like any machine (ticket on stdin, the
 * operator's "y" after comparing codes), copies the objects its placement names from
 * the relay's blind store into SQLite — a RESTRICTED object byte for byte — and reads
 * the GENERAL object only (positive control). It survives a restart with its keys.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import type { Page } from '@playwright/test';
import { readFileSync } from 'node:fs';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { NodeApiClient, type NodeEvent } from '../../src/sdk/client.ts';
import { samples } from './object-steps.ts';
import { expect, foundMesh, freePort, profile, test, view } from './relay-process.ts';

/** A running `sov node`, its output kept line by line. */
class HeadlessNode {
  readonly lines: string[] = [];
  readonly child: ChildProcessWithoutNullStreams;

  constructor(dataDir: string, join: boolean, extra: readonly string[] = []) {
    this.child = spawn(
      process.execPath,
      [
        'src/cli/sov.mjs',
        'node',
        '--role',
        'server',
        '--data',
        dataDir,
        '--name',
        'server',
        ...(join ? ['--join'] : []),
        ...extra,
      ],
      { stdio: ['pipe', 'pipe', 'pipe'] },
    );
    let partial = '';
    this.child.stdout.on('data', (d: Buffer) => {
      const text = partial + d.toString();
      const parts = text.split('\n');
      partial = parts.pop() ?? '';
      this.lines.push(...parts);
      if (process.env['SOV_DEBUG']) for (const line of parts) console.log(`[node] ${line}`);
      if (partial.startsWith('Does the inviting')) this.lines.push(partial);
    });
    this.child.stderr.on('data', (d: Buffer) => process.stderr.write(`[node] ${d.toString()}`));
  }

  async waitFor(pattern: RegExp, timeout = 60_000): Promise<RegExpMatchArray> {
    let found: RegExpMatchArray | null = null;
    await expect
      .poll(
        () => {
          for (const line of this.lines) if ((found = pattern.exec(line))) return true;
          return false;
        },
        { timeout, message: `sov node never printed ${String(pattern)}; it printed:\n${this.lines.join('\n')}` },
      )
      .toBe(true);
    return found!;
  }

  write(line: string): void {
    this.child.stdin.write(`${line}\n`);
  }

  async stop(): Promise<number | null> {
    if (this.child.exitCode !== null) return this.child.exitCode;
    const exited = new Promise<number | null>((resolve) => this.child.once('exit', (code) => resolve(code)));
    this.child.kill('SIGTERM');
    const killer = setTimeout(() => this.child.kill('SIGKILL'), 10_000);
    const code = await exited;
    clearTimeout(killer);
    return code;
  }
}

/** The node joins with `ticket`; its operator and the workstation's compare the code and confirm. */
async function admit(node: HeadlessNode, ws: Page, ticket: string): Promise<void> {
  node.write(ticket);
  const [, code] = await node.waitFor(/^sov node: pairing code (\d{3} \d{3})$/);
  await expect(ws.getByTestId('pairing-sas')).toHaveText(code!);
  node.write('y');
  await ws.getByTestId('pairing-confirm').click();
  await node.waitFor(/status=member relay=ready machines=2/);
}

const object = (page: Page, table: string) => page.locator(`[data-testid="object"][data-table="${table}"]`);

test('a headless server pairs, stores the objects it is placed, and reads only what it may', async ({
  browser,
  relay,
}) => {
  const ws = await (await browser.newContext()).newPage();
  const ticket = await foundMesh(relay, ws);
  const data = mkdtempSync(join(tmpdir(), 'sov-headless-'));
  const node = new HeadlessNode(data, true);
  try {
    await admit(node, ws, ticket);
    await expect(ws.getByTestId('machine')).toHaveCount(2);
    // The ticket is never echoed.
    expect(node.lines.join('\n')).not.toContain(ticket.slice(5, 40));

    await view(ws, 'domains');
    await ws.getByTestId('domain-name').fill('RESTRICTED');
    await ws.getByTestId('domain-purpose').fill('not for the server');
    await ws.locator('[data-testid="domain-exclude"][data-name="server"]').check();
    await ws.getByTestId('domain-create-submit').click();
    await expect(ws.locator('[data-testid="domain"][data-domain="RESTRICTED"]')).toHaveAttribute('data-member', 'yes');
    await view(ws, 'objects');
    await ws.locator('[data-testid="placement"][data-name="server"]').getByTestId('placement-select').selectOption('*');

    await ws.getByTestId('object-domain').selectOption('RESTRICTED');
    await ws.getByTestId('object-file').setInputFiles({
      name: 'cores.csv',
      mimeType: 'text/csv',
      buffer: Buffer.from('time,depth\n2026-12-01T00:00:00Z,1.5\n2026-12-01T01:00:00Z,2.5\n'),
    });
    await ws.getByTestId('object-import').click();
    await expect(object(ws, 'cores')).toHaveAttribute('data-state', 'published');
    const restricted = (await object(ws, 'cores').getAttribute('data-id'))!;
    await ws.getByTestId('object-domain').selectOption('GENERAL');
    await ws.getByTestId('sample-rows').fill('5000');
    await ws.getByTestId('object-sample').click();
    await expect(object(ws, 'measurements')).toHaveAttribute('data-state', 'published');
    await expect(object(ws, 'cores')).toHaveAttribute('data-size', /\d+/);

    // Its batch cycle (15 s) publishes nothing and fetches its placement: both objects, one readable.
    await node.waitFor(/objects_held=2 objects_readable=1$/, 90_000);
    const db = new Database(join(data, 'objects.sqlite'), { readonly: true });
    const row = db.prepare('SELECT bytes, domain FROM blobs WHERE id = ?').get(restricted) as
      { bytes: Buffer; domain: string | null } | undefined;
    db.close();
    expect(row?.domain).toBeNull();
    const digest = createHash('sha256').update(row!.bytes).digest('hex');
    const relayCopy = await ws.evaluate(async (id) => {
      const db = await new Promise<IDBDatabase>((resolve, reject) => {
        const open = indexedDB.open('sov-objects');
        open.onsuccess = () => resolve(open.result);
        open.onerror = () => reject(new Error(String(open.error)));
      });
      const record = await new Promise<{ bytes: Uint8Array }>((resolve, reject) => {
        const get = db.transaction('bytes').objectStore('bytes').get(id);
        get.onsuccess = () => resolve(get.result as { bytes: Uint8Array });
        get.onerror = () => reject(new Error(String(get.error)));
      });
      const d = new Uint8Array(await crypto.subtle.digest('SHA-256', new Uint8Array(record.bytes)));
      return Array.from(d, (b) => b.toString(16).padStart(2, '0')).join('');
    }, restricted);
    expect(digest).toBe(relayCopy);
    expect(await node.stop()).toBe(0);

    // A restart keeps its identity, membership and objects.
    const again = new HeadlessNode(data, false);
    try {
      await again.waitFor(/status=member relay=ready machines=2 objects_held=2 objects_readable=1$/);
    } finally {
      expect(await again.stop()).toBe(0);
    }
  } finally {
    await node.stop();
  }
});

test('a workstation and a headless node share rows through the node’s loopback API, and objects through MCP', async ({
  browser,
  relay,
}) => {
  const ws = await (await browser.newContext()).newPage();
  const ticket = await foundMesh(relay, ws);
  const data = mkdtempSync(join(tmpdir(), 'sov-headless-api-'));
  const port = await freePort();
  const node = new HeadlessNode(data, true, ['--api', `127.0.0.1:${port}`, '--mcp-domains', 'GENERAL']);
  const clients: Client[] = [];
  try {
    await admit(node, ws, ticket);
    const api = new NodeApiClient({
      url: `http://127.0.0.1:${port}/v1`,
      token: readFileSync(join(data, 'api.token'), 'utf8').trim(),
    });

    // A row written through the API appears on the workstation.
    expect((await api.writeRow('device_profiles', 'api-pump', { name: 'Pump from the API' })).ok).toBe(true);
    await view(ws, 'profiles');
    await expect(profile(ws, 'Pump from the API')).toBeVisible();

    // The workstation's edit reaches the node's event stream, then its rows.
    const events: NodeEvent[] = [];
    const follow = api.events((e) => void events.push(e));
    await expect.poll(() => events.length).toBeGreaterThan(0);
    await ws.getByTestId('new-profile-name').fill('Pump from the workstation');
    await ws.getByTestId('add-profile').click();
    await expect.poll(() => events.filter((e) => e.type === 'rows').length).toBeGreaterThan(0);
    follow.close();
    await expect
      .poll(async () => {
        const rows = await api.rows('device_profiles');
        return rows.ok ? rows.value.rows.map((r) => r.values['name']).sort() : [];
      })
      .toEqual(['Pump from the API', 'Pump from the workstation']);

    // An object imported in the browser: MCP over the node's HTTP endpoint (GENERAL in its scope)
    // lists and queries it; an MCP server scoped to no domain (stdio) neither lists nor queries it.
    await samples(ws, 'GENERAL', 'pumps', 1);
    const token = readFileSync(join(data, 'api.token'), 'utf8').trim();
    const http = new Client({ name: 'e2e', version: '1' });
    await http.connect(
      new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${port}/mcp`), {
        requestInit: { headers: { authorization: `Bearer ${token}` } },
      }),
    );
    clients.push(http);
    const call = async (client: Client, name: string, args: Record<string, unknown> = {}) => {
      const result = await client.callTool({ name, arguments: args });
      const text = (result.content as { text: string }[]).map((c) => c.text).join('');
      return { error: result.isError === true, text };
    };
    await expect
      .poll(async () => (await call(http, 'list-objects', { table: 'pumps' })).text, { timeout: 60_000 })
      .toMatch(/"table":"pumps"/);
    const counted = await call(http, 'query', { sql: 'SELECT count(*) AS n FROM pumps' });
    expect(counted.error).toBe(false);
    expect(JSON.parse(counted.text)).toMatchObject({ rows: [[5]], explain: { considered: 1 } });

    const stdio = new Client({ name: 'e2e', version: '1' });
    await stdio.connect(
      new StdioClientTransport({
        command: process.execPath,
        args: ['src/cli/sov.mjs', 'mcp', '--data', data],
        stderr: 'pipe',
      }),
    );
    clients.push(stdio);
    expect(await call(stdio, 'list-objects')).toEqual({ error: false, text: '{"objects":[]}' });
    const refused = await call(stdio, 'query', { sql: 'SELECT count(*) AS n FROM pumps' });
    expect(refused).toEqual({ error: true, text: expect.stringMatching(/^OutOfScope/) as unknown });
  } finally {
    for (const c of clients) await c.close();
    await node.stop();
  }
});
