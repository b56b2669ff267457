/**
 * The relay under abuse: random bytes, text, malformed and oversized frames,
 * unauthenticated sends and floods, from many sockets at once, while two
 * honest endpoints keep exchanging frames. Every abusive message is refused and
 * counted (/api/health `refused`), none is ever routed, and the honest stream
 * arrives complete and in order.
 */
import { ed25519 } from '@noble/curves/ed25519.js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createConnection, type Socket } from 'node:net';
import { setTimeout as delay } from 'node:timers/promises';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { encodeCbor } from '../../src/core/cbor.js';
import { encodeRelayMessage, MAX_FRAME_BODY, MAX_RELAY_MESSAGE } from '../../src/core/relay-wire.js';
import { isLoopback, startRelay, type RelayHandle } from '../../src/relay/server.js';
import { seededRandom } from '../helpers/deterministic.js';
import { bytes, joinRelay, key, RelayTestClient, text, type Key } from '../helpers/relay-client.js';

const TOPIC = new Uint8Array(32).fill(0xc3);
const [ALICE, BOB, MALLORY] = [key(21), key(22), key(23)];
const HONEST_FRAMES = 150;

const joinAs = (relay: RelayHandle, who: Key) =>
  joinRelay(relay.wsUrl, TOPIC, who.id, (p) => ed25519.sign(p, who.secret));

async function health(relay: RelayHandle): Promise<{ sessions: number; refused: Record<string, number> }> {
  return (await (await fetch(`${relay.url}/api/health`)).json()) as {
    sessions: number;
    refused: Record<string, number>;
  };
}

describe('relay under abuse', () => {
  let dir: string;
  let relay: RelayHandle;
  const sockets: RelayTestClient[] = [];

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'sov-abuse-'));
    relay = await startRelay({ port: 0, dataDir: join(dir, 'data'), log: () => undefined, admission: 'open' });
  });
  afterEach(async () => {
    for (const s of sockets.splice(0)) s.ws.terminate();
    await relay.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('refuses and counts every kind of garbage, routes none of it, and keeps serving honest endpoints', async () => {
    const alice = await joinAs(relay, ALICE);
    const bob = await joinAs(relay, BOB);
    sockets.push(alice, bob);
    const random = seededRandom('abuse');

    const abuse = async (): Promise<void> => {
      const open = async () => {
        const s = await RelayTestClient.open(relay.wsUrl);
        sockets.push(s);
        await s.expect('challenge');
        return s;
      };
      // Before authenticating: random bytes, text, CBOR that is no relay message, a send without auth.
      for (let i = 0; i < 10; i++) (await open()).ws.send(random.bytes(1 + random.int(2000)));
      (await open()).ws.send('GET / HTTP/1.1');
      (await open()).ws.send(encodeCbor({ t: 'hello', x: [1, 2, 3] }));
      (await open()).ws.send(encodeRelayMessage({ t: 'send', to: BOB.id, body: bytes('unauthenticated') }));
      // Beyond the socket limit: ws closes with 1009 before the relay parses anything.
      (await open()).ws.send(new Uint8Array(MAX_RELAY_MESSAGE + 10));
      // An authenticated abuser: an oversized body (dropped, session kept), then garbage (session closed).
      const mallory = await joinAs(relay, MALLORY);
      sockets.push(mallory);
      mallory.send({ t: 'send', to: BOB.id, body: new Uint8Array(MAX_FRAME_BODY + 1) });
      await mallory.expectError('frame-too-large');
      mallory.ws.send(random.bytes(64));
      await mallory.expectError('malformed');
    };

    const honest = async (): Promise<void> => {
      for (let i = 0; i < HONEST_FRAMES; i++) {
        alice.send({ t: 'send', to: BOB.id, body: bytes(`honest ${i}`) });
        // Pacing, not a barrier: a pause every ten sends lets the abusers' sockets interleave with these.
        if (i % 10 === 0) await delay(1);
      }
    };

    await Promise.all([abuse(), honest()]);
    const received: string[] = [];
    while (received.length < HONEST_FRAMES) {
      const frame = await bob.expect('frame');
      received.push(text(frame.body));
      bob.send({ t: 'ack', ids: [frame.id] });
    }
    expect(received).toEqual(Array.from({ length: HONEST_FRAMES }, (_, i) => `honest ${i}`));

    const counts = await health(relay);
    expect(counts.refused['malformed']).toBeGreaterThanOrEqual(13);
    expect(counts.refused['not-authenticated']).toBeGreaterThanOrEqual(1);
    expect(counts.refused['frame-too-large']).toBe(1);
    await expect.poll(async () => (await health(relay)).refused['message-too-large']).toBe(1);
    // Bob's mailbox holds nothing but what Alice sent: nothing abusive was ever stored or routed to him.
    const presence = (await (
      await fetch(
        `${relay.url}/api/presence?topic=${Buffer.from(TOPIC).toString('hex')}&endpoint=${Buffer.from(BOB.id).toString('hex')}`,
      )
    ).json()) as { pending: number };
    expect(presence.pending).toBe(0);
    // And it still serves: a fresh honest session works.
    const carol = await joinAs(relay, key(24));
    sockets.push(carol);
    alice.send({ t: 'send', to: key(24).id, body: bytes('still here') });
    expect(text((await carol.expect('frame')).body)).toBe('still here');
  });

  it('drops a flooding session’s excess and closes it on sustained abuse, without slowing others', async () => {
    await relay.close();
    relay = await startRelay({
      port: 0,
      dataDir: join(dir, 'flood'),
      log: () => undefined,
      admission: 'open',
      rateLimit: { perSecond: 50, burst: 50, closeAfterDrops: 20 },
    });
    const alice = await joinAs(relay, ALICE);
    const bob = await joinAs(relay, BOB);
    const mallory = await joinAs(relay, MALLORY);
    sockets.push(alice, bob, mallory);
    for (let i = 0; i < 500; i++) mallory.send({ t: 'send', to: BOB.id, body: bytes(`flood ${i}`) });
    alice.send({ t: 'send', to: BOB.id, body: bytes('from alice') });
    expect(await mallory.closed).toBe(1008);
    const seen: string[] = [];
    for (;;) {
      const frame = await bob.expect('frame');
      seen.push(text(frame.body));
      if (seen.at(-1) === 'from alice') break;
    }
    expect(seen.filter((s) => s.startsWith('flood')).length).toBeLessThan(120);
    expect((await health(relay)).refused['rate-limited']).toBeGreaterThan(0);
  });

  describe('plain HTTP', () => {
    let small: RelayHandle;
    const raw: Socket[] = [];
    beforeEach(async () => {
      small = await startRelay({
        port: 0,
        dataDir: join(dir, 'small'),
        log: () => undefined,
        admission: 'open',
        maxConnections: 2,
        maxHttpConnections: 3,
        httpRequestTimeoutMs: 1000,
      });
    });
    afterEach(async () => {
      for (const s of raw.splice(0)) s.destroy();
      await small.close();
    });

    const connect = (): Promise<Socket> =>
      new Promise((resolve, reject) => {
        const socket = createConnection({ host: '127.0.0.1', port: small.port }, () => resolve(socket));
        socket.once('error', reject);
        raw.push(socket);
      });
    const closed = (socket: Socket): Promise<string> =>
      new Promise((resolve) => {
        let answer = '';
        socket.on('data', (d: Buffer) => (answer += d.toString()));
        socket.once('close', () => resolve(answer));
      });

    it('closes a request whose body trickles in, within its time bound, answering 408', async () => {
      const socket = await connect();
      const done = closed(socket);
      socket.write(
        'POST /api/v1/mailbox/send HTTP/1.1\r\nHost: x\r\nContent-Type: application/cbor\r\nContent-Length: 1000\r\n\r\n',
      );
      // One byte every 100 ms: the whole body would take 100 s.
      const trickle = setInterval(() => socket.writable && socket.write('x'), 100);
      const answer = await done;
      clearInterval(trickle);
      expect(answer).toMatch(/^HTTP\/1.1 408/);
    });

    it('refuses connections past the cap, and serves again once they close', async () => {
      const held = await Promise.all(Array.from({ length: 5 }, () => connect()));
      const refused = await connect();
      expect(await closed(refused)).toBe('');
      for (const s of held) s.destroy();
      await delay(200);
      const res = await fetch(`${small.url}/api/health`);
      expect(res.status).toBe(200);
    });
  });
});

describe('presence answers the relay host only', () => {
  // Test servers listen on loopback only, so the refusal is checked on the address test itself.
  it.each<[string | undefined, boolean]>([
    ['127.0.0.1', true],
    ['::1', true],
    ['::ffff:127.0.0.1', true],
    ['127.0.0.2', false],
    ['10.0.0.7', false],
    ['::ffff:10.0.0.7', false],
    ['fe80::1', false],
    [undefined, false],
  ])('%s: %s', (address, loopback) => {
    expect(isLoopback(address)).toBe(loopback);
  });
});
