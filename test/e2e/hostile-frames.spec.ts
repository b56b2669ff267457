/**
 * Hostile endpoints against a member. A stranger that knows the group's topic
 * but is on no admission list is refused by the relay outright. A hostile
 * ticket holder — admitted by the relay on its invitation, so it can reach the
 * inviter — sends garbage, bytes that claim to be events, and well-formed
 * end-to-end frames sealed with its own keys, for this group and labelled for
 * another. The member rejects each before any import, counts it by typed reason
 * in the sync panel, and stores nothing; an oversized frame is refused by the
 * relay itself.
 */
import { ed25519 } from '@noble/curves/ed25519.js';
import { WebSocket } from 'ws';
import { fromHex } from '../../src/core/bytes.ts';
import { decodeTicket } from '../../src/core/ticket.ts';
import { topicOf } from '../../src/core/identity.ts';
import { encodePeerMessage } from '../../src/core/peer-wire.ts';
import { systemClock } from '../../src/runtime/clock.ts';
import { FrameChannel, generateFrameKey } from '../../src/runtime/frame-channel.ts';
import { webRandom } from '../../src/runtime/webcrypto.ts';
import { decodeRelayMessage, encodeRelayMessage, MAX_FRAME_BODY, relayAuthPayload } from '../../src/core/relay-wire.ts';
import { expect, foundMesh, test, view } from './relay-process.ts';

async function hostileSession(wsUrl: string, topic: Uint8Array, invite?: Uint8Array) {
  const secret = ed25519.utils.randomSecretKey();
  const endpoint = ed25519.getPublicKey(secret);
  const ws = new WebSocket(wsUrl);
  const errors: string[] = [];
  await new Promise<void>((resolve, reject) => {
    ws.on('error', reject);
    ws.on('message', (data: Buffer) => {
      const message = decodeRelayMessage(new Uint8Array(data));
      if (!message.ok) return reject(new Error(message.error.reason));
      const m = message.value;
      if (m.t === 'challenge') {
        const sig = ed25519.sign(relayAuthPayload(m.nonce, topic, endpoint), secret);
        const cnonce = webRandom.bytes(32);
        ws.send(encodeRelayMessage({ t: 'auth', topic, endpoint, sig, cnonce, ...(invite ? { invite } : {}) }));
      } else if (m.t === 'ready') resolve();
      else if (m.t === 'error') {
        errors.push(m.code);
        if (m.code === 'not-admitted') resolve();
      }
    });
  });
  return {
    ws,
    endpoint,
    errors,
    send: (to: Uint8Array, body: Uint8Array) => ws.send(encodeRelayMessage({ t: 'send', to, body })),
  };
}

test('frames from a stranger are rejected before import and counted', async ({ browser, relay }) => {
  const page = await (await browser.newContext()).newPage();
  const ticket = decodeTicket(await foundMesh(relay, page));
  if (!ticket.ok) throw new Error(ticket.error.reason);
  const badge = page.getByTestId('fingerprint');
  const topic = fromHex((await badge.getAttribute('data-topic'))!)!;
  const target = fromHex((await badge.getAttribute('data-endpoint'))!)!;
  const targetFrame = fromHex((await badge.getAttribute('data-frame'))!)!;
  await view(page, 'sync');
  const logBefore = await page.getByTestId('sync-panel').textContent();

  const wsUrl = relay.url.replace('http', 'ws') + '/ws';
  const outsider = await hostileSession(wsUrl, topic);
  expect(outsider.errors).toContain('not-admitted');
  const stranger = await hostileSession(wsUrl, topic, ticket.value.inv);
  stranger.send(target, new Uint8Array(64).fill(7));
  stranger.send(target, new Uint8Array([0xa1, 0x61, 0x74, 0x66, 0x65, 0x76, 0x65, 0x6e, 0x74, 0x73]));
  stranger.send(target, new Uint8Array(MAX_FRAME_BODY + 1));
  // Well-formed frames under the stranger's own frame key: for this group, and labelled for another.
  const frameKey = await generateFrameKey();
  const sealer = (t: Uint8Array) =>
    new FrameChannel({ endpoint: stranger.endpoint, frameKey, topic: t, clock: systemClock, random: webRandom });
  const events = encodePeerMessage({ t: 'events', after: 0, upto: 1, events: [new Uint8Array(40)] });
  const to = { endpoint: target, kid: targetFrame };
  stranger.send(target, await sealer(topic).seal(to, events));
  stranger.send(target, await sealer(topicOf(webRandom.bytes(32))).seal(to, events));

  const rejected = (reason: string) => page.locator(`[data-testid="rejection"][data-reason="${reason}"]`);
  await expect(rejected('MalformedFrame')).toHaveAttribute('data-count', '2');
  await expect(rejected('UnknownEndpoint')).toHaveAttribute('data-count', '1');
  await expect(rejected('WrongGroup')).toHaveAttribute('data-count', '1');
  await expect.poll(() => stranger.errors).toContain('frame-too-large');
  // Nothing was imported: the log length shown in the panel is unchanged.
  const logLine = (text: string | null) => /Log(\d+)events/.exec((text ?? '').replace(/\s+/g, ''))?.[1];
  expect(logLine(logBefore)).toMatch(/^\d+$/);
  expect(logLine(await page.getByTestId('sync-panel').textContent())).toBe(logLine(logBefore));
  stranger.ws.close();
});
