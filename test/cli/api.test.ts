/**
 * The headless node's loopback API (src/node-api/) on a real `sov node` process that founds
 * a mesh on a real relay, driven through the SDK (src/sdk/client.ts): every route, the token
 * (required, 0600, a readable one refused), typed 400s for malformed input, the event stream
 * (a write's event within a second, resumed after a drop with no gap and no duplicate), a
 * non-loopback address refused, and every answer checked against the node's own document.
 */
import { chmodSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { request as httpsRequest } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { selfSignedCert } from '../helpers/tls-cert.ts';
import { afterAll, describe, expect, it } from 'vitest';
import { OPENAPI, SCHEMAS } from '../../src/node-api/openapi.ts';
import { NodeApiClient, type NodeEvent, type Pairing } from '../../src/sdk/client.ts';
import { machinesIn, until } from '../helpers/headless-mesh.ts';
import { freePort, spawnRelay } from '../helpers/relay-child.ts';
import { sovNode, stop } from '../helpers/sov-node.ts';

const dir = mkdtempSync(join(tmpdir(), 'sov-api-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Events as they arrive on one raw stream (no reconnects), for checking ids across a drop. */
function rawStream(url: string, token: string, lastEventId?: string) {
  const events: NodeEvent[] = [];
  const stopper = new AbortController();
  const done = (async () => {
    const res = await fetch(`${url}/events`, {
      headers: { authorization: `Bearer ${token}`, ...(lastEventId ? { 'last-event-id': lastEventId } : {}) },
      signal: stopper.signal,
    });
    const reader = res.body!.getReader();
    const decoder = new TextDecoder();
    let buffer = '';
    for (;;) {
      const { value, done: end } = await reader.read();
      if (end) return;
      buffer += decoder.decode(value, { stream: true });
      let cut: number;
      while ((cut = buffer.indexOf('\n\n')) >= 0) {
        const block = buffer.slice(0, cut);
        buffer = buffer.slice(cut + 2);
        const field = (name: string) => new RegExp(`^${name}: ?(.*)$`, 'm').exec(block)?.[1];
        const [id, type, data] = [field('id'), field('event'), field('data')];
        if (id && type && data) events.push({ id, type, data: JSON.parse(data) as unknown });
      }
    }
  })().catch(() => undefined);
  return { events, close: () => stopper.abort(), done };
}

const eventually = async (check: () => boolean, what: string, ms = 10_000, poll?: () => Promise<void>) => {
  const deadline = Date.now() + ms;
  for (await poll?.(); !check(); await poll?.()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
};

describe('the headless node API', () => {
  it('serves status, rows, writes and events to the token holder, as the document says', async () => {
    const relayPort = await freePort();
    const relay = await spawnRelay(relayPort, join(dir, 'relay'));
    const apiPort = await freePort();
    const data = join(dir, 'node');
    const args = ['--role', 'server', '--data', data, '--name', 'server', '--api', `127.0.0.1:${apiPort}`];
    let node = await sovNode([...args, '--found', '--relay', `ws://127.0.0.1:${relayPort}/ws`], /relay=ready/);
    try {
      expect(node.lines.some((l) => /api listening at http:\/\/127\.0\.0\.1:\d+\/v1/.test(l))).toBe(true);
      const tokenFile = join(data, 'api.token');
      expect(statSync(tokenFile).mode & 0o777).toBe(0o600);
      const token = readFileSync(tokenFile, 'utf8').trim();
      expect(node.lines.join('\n')).not.toContain(token);
      const url = `http://127.0.0.1:${apiPort}/v1`;
      const api = new NodeApiClient({ url, token });

      // Every answer matches the node's own document.
      const ajv = new Ajv2020({ strict: true, allowUnionTypes: true });
      ajv.addKeyword('components');
      ajv.addSchema({ $id: 'api', components: { schemas: SCHEMAS } });
      const matches = (name: keyof typeof SCHEMAS, value: unknown) =>
        ajv.validate({ $ref: `api#/components/schemas/${name}` }, value) || ajv.errorsText();
      const doc = await api.openapi();
      expect(doc.ok && doc.value).toMatchObject({ openapi: '3.1.0', info: { version: '1' } });
      expect(Object.keys(OPENAPI.paths)).toEqual(Object.keys((doc.ok && (doc.value['paths'] as object)) || {}));

      const status = await api.status();
      if (!status.ok) throw new Error(status.error.type);
      expect(matches('Status', status.value)).toBe(true);
      expect(status.value).toMatchObject({ status: 'member', relay: 'ready', name: 'server' });
      expect(status.value.machines).toEqual([expect.objectContaining({ name: 'server', role: 'admin' })]);
      expect(status.value.domains).toEqual(
        expect.arrayContaining([
          { domain: 'GENERAL', reads: true },
          { domain: 'CONTROL', reads: true },
        ]),
      );

      // The token is required, and only this node's.
      for (const bad of [new NodeApiClient({ url, token: 'x'.repeat(43) }), new NodeApiClient({ url, token: '' })]) {
        const refused = await bad.status();
        expect(refused.ok || refused.error).toMatchObject({ status: 401, type: 'Unauthorized' });
        expect(matches('Error', { error: { type: 'Unauthorized', reason: '…' } })).toBe(true);
      }
      expect((await fetch(`${url}/openapi.json`)).status).toBe(401);

      // A write, read back; its event arrives within a second; a delete.
      const stream = rawStream(url, token);
      await eventually(() => stream.events.some((e) => e.type === 'status'), 'the stream says the status');
      const written = await api.writeRow('device_profiles', 'p1', { name: 'Pump 1', notes: 'filter changed' });
      if (!written.ok) throw new Error(`${written.error.type}: ${written.error.reason}`);
      expect(matches('Written', written.value)).toBe(true);
      // How fast is the bench's figure (bench api: sse_p50_ms, sse_p99_ms), not a wall-clock assertion here.
      await eventually(() => stream.events.some((e) => e.type === 'rows'), 'a rows event');
      const page = await api.rows('device_profiles', { limit: 10 });
      if (!page.ok) throw new Error(page.error.type);
      expect(matches('RowPage', page.value)).toBe(true);
      expect(page.value.rows.map((r) => [r.row, r.alive, r.values['name'], r.values['notes']])).toEqual([
        ['p1', true, 'Pump 1', 'filter changed'],
      ]);

      // Paging: a page past the end is empty, never the last row again.
      expect(await api.rows('device_profiles', { offset: 1, limit: 10 })).toMatchObject({
        ok: true,
        value: { rows: [] },
      });
      expect(await api.rows('device_profiles', { offset: 0, limit: 1 })).toMatchObject({
        ok: true,
        value: { total: 1, offset: 0, rows: [{ row: 'p1' }] },
      });

      // A dropped stream resumes after its last event: nothing missed, nothing twice.
      stream.close();
      const seen = stream.events.at(-1)!.id;
      for (const i of [2, 3])
        expect((await api.writeRow('device_profiles', `p${i}`, { name: `Pump ${i}` })).ok).toBe(true);
      const resumed = rawStream(url, token, seen);
      await eventually(() => resumed.events.filter((e) => e.type === 'rows').length >= 2, 'both writes’ events');
      const n = (id: string) => Number(id.split('-')[1]);
      expect(resumed.events.map((e) => n(e.id))).toEqual(resumed.events.map((_, i) => n(seen) + 1 + i));
      resumed.close();
      // An id from another run of the node, or older than it keeps: a reset first.
      const stranger = rawStream(url, token, '000000000000-5');
      await eventually(() => stranger.events.length > 0, 'a reset');
      expect(stranger.events[0]!.type).toBe('reset');
      stranger.close();
      // The SDK's own stream follows along.
      const got: NodeEvent[] = [];
      const follow = api.events((e) => void got.push(e));
      expect((await api.deleteRow('device_profiles', 'p3')).ok).toBe(true);
      await eventually(() => got.some((e) => e.type === 'rows'), 'the SDK sees the delete');
      follow.close();
      const alive = await api.rows('device_profiles');
      expect(alive.ok && alive.value.rows.map((r) => r.row)).toEqual(['p1', 'p2']);

      // Malformed input: typed 400s (415 for a body that is not JSON at all), nothing written.
      const put = (body: string, type = 'application/json') =>
        fetch(`${url}/tables/device_profiles/rows/p9`, {
          method: 'PUT',
          headers: { authorization: `Bearer ${token}`, 'content-type': type },
          body,
        });
      for (const body of [
        '{"cells":{}}',
        '{"cells":{"Bad-Name":1}}',
        '{"cells":{"a":{"b":1}}}',
        '{"x":1}',
        'not json',
      ]) {
        const res = await put(body);
        expect([body, res.status]).toEqual([body, 400]);
        expect(matches('Error', await res.json())).toBe(true);
      }
      expect((await put('{"cells":{"name":"x"}}', 'text/plain')).status).toBe(415);
      for (const query of ['limit=0', 'limit=abc', 'offset=-1', 'deleted=maybe', 'other=1']) {
        const res = await fetch(`${url}/tables/device_profiles/rows?${query}`, {
          headers: { authorization: `Bearer ${token}` },
        });
        expect([query, res.status]).toEqual([query, 400]);
      }
      const unknown = await api.rows('no_such_table');
      expect(unknown.ok || unknown.error).toMatchObject({ status: 404, type: 'UnknownTable' });
      // The mesh's rules: no domain LAB to write a note into.
      const refused = await api.writeRow('field_notes', 'LAB:n1', { title: 't', text: 'x' });
      expect(refused.ok || refused.error).toMatchObject({ status: 422, type: 'InvalidEdit' });
      // Nothing of the refused writes landed: p1, p2, and p3 deleted.
      expect(await api.rows('device_profiles', { deleted: true })).toMatchObject({ ok: true, value: { total: 3 } });

      // The log names routes, never row keys or values.
      expect(node.lines.some((l) => l.includes('PUT /v1/tables/device_profiles/rows/{row} 200'))).toBe(true);
      expect(node.lines.join('\n')).not.toMatch(/p1|Pump|filter changed/);

      // A token file others can read is refused at the next start.
      await stop(node);
      chmodSync(tokenFile, 0o644);
      node = await sovNode(args, /api refused/);
      expect(node.lines.join('\n')).toMatch(/readable by other users/);
      expect(await node.exited).toBe(1);
    } finally {
      await stop(node);
      relay.kill('SIGTERM');
    }
  }, 180_000);

  it('refuses an address off the loopback', async () => {
    const node = await sovNode(
      ['--role', 'server', '--data', join(dir, 'off'), '--api', '0.0.0.0:7420'],
      /not a loopback/,
    );
    expect(await node.exited).toBe(2);
    const bare = await sovNode(
      ['--role', 'server', '--data', join(dir, 'off'), '--api', '0.0.0.0:7420', '--api-tls'],
      /go together|needs|tls/,
    );
    expect(await bare.exited).toBe(2);
  });

  it('serves HTTPS with --api-tls and a certificate, behind the same token', async () => {
    selfSignedCert(dir);
    const port = await freePort();
    const relayPort = await freePort();
    const relay = await spawnRelay(relayPort, join(dir, 'relay-tls'));
    const data = join(dir, 'tls');
    const tls = ['--api-tls', '--tls-cert', join(dir, 'cert.pem'), '--tls-key', join(dir, 'key.pem')];
    const node = await sovNode(
      [
        ...['--role', 'server', '--data', data, '--api', `127.0.0.1:${port}`, ...tls],
        ...['--found', '--relay', `ws://127.0.0.1:${relayPort}/ws`],
      ],
      /relay=ready/,
    );
    try {
      expect(node.lines.join('\n')).toContain(`api listening at https://127.0.0.1:${port}/v1`);
      const get = (token: string) =>
        new Promise<number>((resolve, reject) => {
          httpsRequest(
            `https://127.0.0.1:${port}/v1/openapi.json`,
            { ca: readFileSync(join(dir, 'cert.pem')), headers: { authorization: `Bearer ${token}` } },
            (res) => {
              res.resume();
              resolve(res.statusCode ?? 0);
            },
          )
            .on('error', reject)
            .end();
        });
      expect(await get(readFileSync(join(data, 'api.token'), 'utf8').trim())).toBe(200);
      expect(await get('wrong')).toBe(401);
    } finally {
      await stop(node);
      relay.kill('SIGTERM');
    }
  });

  it('invites and admits a machine, and streams that machine’s edits', async () => {
    const relayPort = await freePort();
    const relay = await spawnRelay(relayPort, join(dir, 'relay-pairing'));
    const apiPort = await freePort();
    const data = join(dir, 'inviter');
    const node = await sovNode(
      [
        ...['--role', 'server', '--data', data, '--name', 'inviter', '--api', `127.0.0.1:${apiPort}`],
        ...['--found', '--relay', `ws://127.0.0.1:${relayPort}/ws`],
      ],
      /relay=ready/,
    );
    const joiner = await machinesIn(dir)('joiner');
    try {
      const api = new NodeApiClient({
        url: `http://127.0.0.1:${apiPort}/v1`,
        token: readFileSync(join(data, 'api.token'), 'utf8').trim(),
      });
      const invited = await api.invite();
      if (!invited.ok) throw new Error(invited.error.reason);
      expect(node.lines.join('\n')).not.toContain(invited.value.ticket);
      expect((await joiner.node.pairing.join(invited.value.ticket, 'joiner')).ok).toBe(true);
      const shown = await until(joiner, (s) => s.join.sas !== undefined, 'the joiner shows the code');
      let asking: Pairing | undefined;
      await eventually(
        () => asking?.sas !== undefined,
        'the inviter shows the code',
        30_000,
        async () => {
          const p = await api.pairings();
          asking = p.ok ? p.value.pairings[0] : undefined;
        },
      );
      expect(asking!.sas).toBe(shown.join.sas);
      expect(await api.answerPairing('ffff', true)).toMatchObject({ ok: false, error: { status: 404 } });
      await joiner.node.pairing.answerJoin(true);
      expect((await api.answerPairing(asking!.inv, true)).ok).toBe(true);
      await until(joiner, (s) => s.status === 'member' && s.relay === 'ready', 'the joiner is a member');

      // The joiner's edit reaches the node's event stream within a second, then its rows.
      const got: { type: string; at: number }[] = [];
      const follow = api.events((e) => void got.push({ type: e.type, at: Date.now() }));
      await eventually(() => got.length > 0, 'the stream is open');
      const wrote = await joiner.node.writes.editProfile('j1', { name: 'Joiner pump' });
      expect(wrote.ok).toBe(true);
      const written = Date.now();
      await eventually(() => got.some((e) => e.type === 'rows' && e.at >= written), 'the peer edit’s event', 30_000);
      follow.close();
      const rows = await api.rows('device_profiles');
      expect(rows.ok && rows.value.rows.map((r) => [r.row, r.values['name']])).toEqual([['j1', 'Joiner pump']]);
      const status = await api.status();
      expect(status.ok && status.value.machines.map((m) => m.name).sort()).toEqual(['inviter', 'joiner']);
    } finally {
      await joiner.close();
      await stop(node);
      relay.kill('SIGTERM');
    }
  }, 180_000);
});
