/**
 * HTTPS/WSS serving, as a tablet on the local network uses it: a self-signed
 * certificate made with openssl (as the README shows), the app and the API over
 * HTTPS, and a full challenge/auth exchange over WSS.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ed25519 } from '@noble/curves/ed25519.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { decodeRelayMessage, encodeRelayMessage, relayAuthPayload } from '../../src/core/relay-wire.js';
import { startRelay, type RelayHandle } from '../../src/relay/server.js';

let dir: string;
let relay: RelayHandle;
let cert: Buffer;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'sov-tls-'));
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:P-256',
      '-nodes',
      '-days',
      '1',
      '-keyout',
      join(dir, 'key.pem'),
      '-out',
      join(dir, 'cert.pem'),
      '-subj',
      '/CN=127.0.0.1',
      '-addext',
      'subjectAltName=IP:127.0.0.1',
    ],
    { stdio: 'ignore' },
  );
  cert = readFileSync(join(dir, 'cert.pem'));
  relay = await startRelay({
    admission: 'open',
    port: 0,
    dataDir: join(dir, 'data'),
    tls: { cert, key: readFileSync(join(dir, 'key.pem')) },
    log: () => undefined,
  });
});

afterAll(async () => {
  await relay.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('relay over TLS', () => {
  it('serves the API over HTTPS to a client that trusts the certificate', async () => {
    expect(relay.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    const body = await new Promise<string>((resolve, reject) => {
      const req = request(`${relay.url}/api/health`, { ca: cert }, (res) => {
        let data = '';
        res.on('data', (chunk: Buffer) => (data += chunk.toString()));
        res.on('end', () => resolve(data));
      });
      req.on('error', reject);
      req.end();
    });
    expect(JSON.parse(body)).toMatchObject({ ok: true, protocol: 'sov-relay/1' });
  });

  it('refuses clients that do not trust the certificate', async () => {
    const error = await new Promise<Error>((resolve) => {
      const req = request(`${relay.url}/api/health`, () => resolve(new Error('unexpected success')));
      req.on('error', resolve);
      req.end();
    });
    expect(error.message).toMatch(/self[- ]signed/i);
  });

  it('authenticates an endpoint over WSS', async () => {
    expect(relay.wsUrl).toMatch(/^wss:\/\//);
    const secret = new Uint8Array(32).fill(7);
    const endpoint = ed25519.getPublicKey(secret);
    const topic = new Uint8Array(32).fill(9);
    const ws = new WebSocket(relay.wsUrl, { ca: cert });
    const ready = await new Promise<string>((resolve, reject) => {
      ws.on('error', reject);
      ws.on('message', (data: Buffer) => {
        const message = decodeRelayMessage(new Uint8Array(data));
        if (!message.ok) return reject(new Error(message.error.reason));
        if (message.value.t === 'challenge') {
          const sig = ed25519.sign(relayAuthPayload(message.value.nonce, topic, endpoint), secret);
          ws.send(encodeRelayMessage({ t: 'auth', topic, endpoint, sig, cnonce: new Uint8Array(32) }));
        } else resolve(message.value.t);
      });
    });
    expect(ready).toBe('ready');
    ws.close();
  });
});
