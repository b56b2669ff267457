/**
 * Pairing by camera, end to end in the real app: the workstation shows its
 * one-time ticket as a QR code; that picture becomes the fake webcam of a
 * second Chromium (`--use-file-for-fake-video-capture`), whose "Scan QR code"
 * reads the ticket; both machines then show the same pairing code, both humans
 * confirm it, and the collector is a member that syncs.
 */
import { chromium } from '@playwright/test';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import playwrightConfig from '../../playwright.config.ts';
import { displayedPixels, writeY4m } from './fake-camera.ts';
import { confirmCodes, expect, foundMesh, profile, test, view } from './relay-process.ts';

test('pair by scanning the QR code through a fake camera, with the code confirmed on both sides', async ({
  browser,
  relay,
}) => {
  const a = await (await browser.newContext()).newPage();
  const ticket = await foundMesh(relay, a);
  const image = await displayedPixels(a, a.getByTestId('qr-code'));
  const camera = join(mkdtempSync(join(tmpdir(), 'sov-camera-')), 'ticket.y4m');
  writeY4m(camera, image.rgba, image.width, image.height);

  const scanner = await chromium.launch({
    executablePath: process.env['SOV_CHROMIUM'] ?? '/usr/bin/chromium',
    args: [
      ...(playwrightConfig.use?.launchOptions?.args ?? []),
      '--use-fake-ui-for-media-stream',
      '--use-fake-device-for-media-stream',
      `--use-file-for-fake-video-capture=${camera}`,
    ],
  });
  try {
    const b = await (await scanner.newContext()).newPage();
    await b.goto(relay.url);
    await b.getByTestId('machine-name').fill('collector');
    await b.getByTestId('scan-ticket').click();
    await expect(b.getByTestId('ticket-input')).toHaveValue(ticket, { timeout: 30_000 });
    await b.getByTestId('join-mesh').click();
    await confirmCodes(a, b);
    await expect(b.getByTestId('new-profile-name')).toBeVisible();
    await expect(a.getByTestId('machine')).toHaveCount(2);
    await b.getByTestId('new-profile-name').fill('Scanned in');
    await b.getByTestId('add-profile').click();
    await view(a, 'profiles');
    await expect(profile(a, 'Scanned in')).toBeVisible();
  } finally {
    await scanner.close();
  }
});
