/**
 * Holding bytes is not reading them: a full scenario — pair (with the pairing
 * code), edit, realtime sync, offline catch-up through the mailbox, and a
 * service-worker batch fetch — while the relay's wire tap records every byte
 * it receives and sends, and its database keeps every byte it stores. None of
 * the plaintext canaries the test writes may appear in any of them, searched
 * as UTF-8, UTF-16LE, hex and base64: not the values, not the table, row or
 * column names, and not the group secret (which only ever travels inside the
 * ticket, out of band). Private keys are non-extractable WebCrypto keys, so no
 * code path can even produce their bytes; the search covers what could leak.
 * And every frame's message is padded to its size class (core/padding.ts).
 */
import { readFileSync } from 'node:fs';
import { decodeFrame, FRAME_VERSION } from '../../src/core/frame.ts';
import { sizeClass } from '../../src/core/padding.ts';
import { decodeEndpointMessage } from '../../src/core/relay-wire.ts';
import { decodeTicket } from '../../src/core/ticket.ts';
import { readTap } from '../../src/relay/tap.ts';
import { bytesForms, forms, hits, relayHoldings } from '../helpers/relay-audit.ts';
import { confirmCodes, expect, foundMesh, profile, RELAY_SEES_DISCONNECT, test, view } from './relay-process.ts';

const CANARY_VALUES = ['canary-Ωmega-7f3a north shed', 'canary-hourly-91c0', 'canary-filters-0b14 ✓'];
const STRUCTURAL = ['device_profiles', 'location', 'schedule', 'notes', 'keyring'];

test('the relay never sees a plaintext canary, a schema name or the group secret', async ({ browser, relay }) => {
  const [ca, cb] = [await browser.newContext(), await browser.newContext()];
  const [a, b] = [await ca.newPage(), await cb.newPage()];
  const ticketText = await foundMesh(relay, a);
  const ticket = decodeTicket(ticketText);
  if (!ticket.ok) throw new Error(ticket.error.reason);
  await b.goto(relay.url);
  await b.getByTestId('machine-name').fill('collector');
  await b.getByTestId('ticket-input').fill(ticketText);
  await b.getByTestId('join-mesh').click();
  await confirmCodes(a, b);
  await expect(b.getByTestId('new-profile-name')).toBeVisible();

  // Realtime: a profile whose name and values are canaries.
  await view(a, 'profiles');
  await a.getByTestId('new-profile-name').fill(CANARY_VALUES[0]!);
  await a.getByTestId('add-profile').click();
  await expect(profile(b, CANARY_VALUES[0]!)).toBeVisible();
  const row = (await profile(a, CANARY_VALUES[0]!).getAttribute('data-row'))!;

  // Offline catch-up: B is away while A edits; the relay stores the frames, B fetches them on return.
  const badge = b.getByTestId('fingerprint');
  const [topic, endpointB] = [(await badge.getAttribute('data-topic'))!, (await badge.getAttribute('data-endpoint'))!];
  await cb.setOffline(true);
  await expect(b.getByTestId('relay-state')).toHaveText('offline');
  await expect.poll(async () => (await relay.presence(topic, endpointB)).online, RELAY_SEES_DISCONNECT).toBe(false);
  const card = profile(a, CANARY_VALUES[0]!);
  await card.getByTestId('edit-profile').click();
  await card.getByTestId('edit-schedule').fill(CANARY_VALUES[1]!);
  await card.getByTestId('edit-notes').fill(CANARY_VALUES[2]!);
  await card.getByTestId('save-profile').click();
  await expect.poll(async () => (await relay.presence(topic, endpointB)).pending).toBeGreaterThan(0);
  await cb.setOffline(false);
  await expect(profile(b, CANARY_VALUES[0]!).getByTestId('value-notes')).toHaveText(CANARY_VALUES[2]!);

  const held = relayHoldings(relay.tapFile, relay.dataDir);
  expect(held.length).toBeGreaterThan(10);
  expect(held.reduce((n, b) => n + b.length, 0)).toBeGreaterThan(10_000);
  const needles: [string, Buffer[]][] = [
    ...[...CANARY_VALUES, ...STRUCTURAL, row, 'workstation', 'collector'].map((t): [string, Buffer[]] => [t, forms(t)]),
    ['group secret', bytesForms(ticket.value.secret)],
    ['ticket', forms(ticketText.slice(5, 60))],
  ];
  const found = hits(held, needles);
  expect(found).toEqual([]);
  // The search itself works: the topic the relay routes by is in its bytes.
  expect(held.some((h) => h.includes(Buffer.from(topic, 'hex')))).toBe(true);

  // Sizes: every frame a browser sent is padded (version 2), its message to a size class (Padmé, two bits coarser),
  // so a frame's length tells the relay the message's size class, not its length.
  const sent = readTap(readFileSync(relay.tapFile)).flatMap((r) => {
    const m = r.direction === 'in' && r.channel === 'ws' ? decodeEndpointMessage(r.bytes) : undefined;
    return m?.ok && m.value.t === 'send' ? [m.value.body] : [];
  });
  expect(sent.length).toBeGreaterThan(10);
  const unpadded = sent.flatMap((body) => {
    const frame = decodeFrame(body);
    const padded = frame.ok ? frame.value.ct.length - 12 - 16 : -1;
    return frame.ok && frame.value.header.v === FRAME_VERSION && sizeClass(padded) === padded ? [] : [padded];
  });
  expect(unpadded).toEqual([]);
});
