/**
 * The SDK is checked against the node's OpenAPI document: every operation the document names is
 * a method of `NodeApiClient` under the same name, and the client calls the route and method the
 * document gives (checked on a fetch that records the requests instead of sending them).
 */
import { describe, expect, it } from 'vitest';
import { OPENAPI } from '../../src/node-api/openapi.ts';
import { NodeApiClient } from '../../src/sdk/client.ts';

type Operation = { operationId: string };
const operations = Object.entries(OPENAPI.paths).flatMap(([path, methods]) =>
  Object.entries(methods as Record<string, Operation>).map(([method, op]) => ({
    path,
    method: method.toUpperCase(),
    id: op.operationId,
  })),
);

/** A client whose requests are recorded and answered `{}`. */
function recording() {
  const seen: { method: string; path: string; type: string | undefined }[] = [];
  const client = new NodeApiClient({
    url: 'http://127.0.0.1:1/v1',
    token: 't',
    fetch: (input, init) => {
      const url = new URL(input instanceof Request ? input.url : input);
      const headers = new Headers(init?.headers);
      seen.push({ method: init?.method ?? 'GET', path: url.pathname, type: headers.get('content-type') ?? undefined });
      return Promise.resolve(new Response('{}', { status: 200, headers: { 'content-type': 'application/json' } }));
    },
  });
  return { client, seen };
}

describe('the SDK against the OpenAPI document', () => {
  it('has a method for every operation of the document', () => {
    const { client } = recording();
    const missing = operations.filter(
      (o) => typeof (client as unknown as Record<string, unknown>)[o.id] !== 'function',
    );
    expect(missing).toEqual([]);
  });

  it('calls each operation at the document’s path and method', async () => {
    const id = 'ab'.repeat(32);
    const calls: Record<string, (c: NodeApiClient) => Promise<unknown>> = {
      status: (c) => c.status(),
      peers: (c) => c.peers(),
      sync: (c) => c.sync(),
      rows: (c) => c.rows('device_profiles', { limit: 5 }),
      writeRow: (c) => c.writeRow('device_profiles', 'p', { name: 'x' }),
      deleteRow: (c) => c.deleteRow('device_profiles', 'p'),
      objects: (c) => c.objects({ table: 'readings' }),
      importCsv: (c) => c.importCsv('GENERAL', 'readings', 'a\n1'),
      object: (c) => c.object(id),
      download: (c) => c.download(id),
      query: (c) => c.query('SELECT 1 FROM t'),
      deleteObjectRows: (c) => c.deleteObjectRows('readings', ['00'.repeat(16)]),
      compact: (c) => c.compact('GENERAL', 'readings'),
      allowDeletes: (c) => c.allowDeletes('readings'),
      placement: (c) => c.placement(),
      setPlacement: (c) => c.setPlacement(id, '*'),
      invite: (c) => c.invite(),
      pairings: (c) => c.pairings(),
      answerPairing: (c) => c.answerPairing('ff', true),
      openapi: (c) => c.openapi(),
    };
    for (const op of operations.filter((o) => o.id !== 'events')) {
      const call = calls[op.id];
      expect([op.id, call !== undefined]).toEqual([op.id, true]);
      const { client, seen } = recording();
      await call!(client);
      const pattern = new RegExp(`^/v1${op.path.replace(/\{[^}]+\}/g, '[^/]+')}$`);
      expect([op.id, seen[0]!.method, pattern.test(seen[0]!.path)]).toEqual([op.id, op.method, true]);
      const body = (OPENAPI.paths as Record<string, Record<string, { requestBody?: { content: object } }>>)[op.path]![
        op.method.toLowerCase()
      ]!.requestBody;
      expect([op.id, seen[0]!.type]).toEqual([op.id, body ? Object.keys(body.content)[0] : undefined]);
    }
  });
});
