/**
 * Walking skeleton, end to end in two real browser contexts against the real
 * relay process: pair by ticket, an edit travels A → B, B goes offline for real
 * (the relay sees it leave), edits, reloads offline from the service worker,
 * the relay restarts with frames stored for B, and both machines converge.
 */
import type { Page } from '@playwright/test';
import { expect, expectMachines, pair, profile, RELAY_SEES_DISCONNECT, test } from './relay-process.ts';

async function identity(page: Page): Promise<{ endpoint: string; topic: string }> {
  const badge = page.getByTestId('fingerprint');
  await expect(badge).toHaveAttribute('data-topic', /^[0-9a-f]{64}$/);
  return { endpoint: (await badge.getAttribute('data-endpoint'))!, topic: (await badge.getAttribute('data-topic'))! };
}

async function editProfile(page: Page, name: string, field: string, value: string): Promise<void> {
  const card = profile(page, name);
  await card.getByTestId('edit-profile').click();
  await card.getByTestId(`edit-${field}`).fill(value);
  await card.getByTestId('save-profile').click();
  await expect(card.getByTestId(`value-${field}`)).toHaveText(value);
}

test('pair, sync both ways, survive offline, reload and a relay restart', async ({ browser, relay }) => {
  const contextA = await browser.newContext();
  const contextB = await browser.newContext();
  const a = await contextA.newPage();
  const b = await contextB.newPage();

  // A founds the mesh and invites B; B joins with the pasted ticket.
  await pair(relay, a, b);
  await expectMachines([b], 2);

  // An edit in A appears in B.
  await a.getByTestId('new-profile-name').fill('Pump 1');
  await a.getByTestId('new-profile-location').fill('north shed');
  await a.getByTestId('add-profile').click();
  await expect(profile(b, 'Pump 1').getByTestId('value-location')).toHaveText('north shed');
  // Nothing was refused on the way (the edit arriving proves the sessions ran): each admission
  // list reached the relay before the commits and fetches it covers.
  for (const page of [a, b]) {
    await expect(page.locator('[data-testid="rejection"][data-reason^="relay:"]')).toHaveCount(0);
  }

  // The service worker controls B, so B can reload without a network.
  await b.evaluate(async () => {
    await navigator.serviceWorker.ready;
  });
  await b.reload();
  await expect(b.getByTestId('relay-state')).toHaveText('ready');
  expect(await b.evaluate(() => navigator.serviceWorker.controller !== null)).toBe(true);

  // B goes offline for real: the relay sees its session end.
  const { endpoint: endpointB, topic } = await identity(b);
  await contextB.setOffline(true);
  await expect(b.getByTestId('relay-state')).toHaveText('offline');
  await expect.poll(async () => (await relay.presence(topic, endpointB)).online, RELAY_SEES_DISCONNECT).toBe(false);

  // B edits while offline and counts the undelivered event.
  await editProfile(b, 'Pump 1', 'schedule', 'hourly');
  await expect(b.getByTestId('pending')).not.toHaveAttribute('data-count', '0');

  // A edits another column meanwhile; the relay stores it for B.
  await editProfile(a, 'Pump 1', 'notes', 'filter changed');
  await expect.poll(async () => (await relay.presence(topic, endpointB)).pending).toBeGreaterThan(0);

  // A reload while offline still renders the app and its local data.
  await b.reload();
  await expect(profile(b, 'Pump 1').getByTestId('value-schedule')).toHaveText('hourly');
  await expect(b.getByTestId('relay-state')).toHaveText('offline');

  // The relay restarts; stored frames survive.
  await relay.stop();
  await relay.start();
  expect((await relay.presence(topic, endpointB)).pending).toBeGreaterThan(0);

  // B comes back: both edits meet on both machines, nothing pending.
  await contextB.setOffline(false);
  await expect(b.getByTestId('relay-state')).toHaveText('ready');
  await expect(a.getByTestId('relay-state')).toHaveText('ready');
  await expect(profile(b, 'Pump 1').getByTestId('value-notes')).toHaveText('filter changed');
  await expect(profile(a, 'Pump 1').getByTestId('value-schedule')).toHaveText('hourly');
  for (const page of [a, b]) {
    const card = profile(page, 'Pump 1');
    await expect(card.getByTestId('value-location')).toHaveText('north shed');
    await expect(page.getByTestId('pending')).toHaveAttribute('data-count', '0');
  }

  await contextA.close();
  await contextB.close();
});
