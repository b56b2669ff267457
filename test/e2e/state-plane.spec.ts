/**
 * SSP/1 in two real browsers through the real relay: the seed's partition
 * example (north shed / hourly), delete-then-later-edit resurrection with a
 * visible notice, and a removal that fails the removed machine closed.
 */
import type { BrowserContext, Page } from '@playwright/test';
import { expect, pair, profile, RELAY_SEES_DISCONNECT, type RelayProcess, test, view } from './relay-process.ts';

/** What a machine the relay no longer serves shows each time it is turned away (relay/hub.ts, `#auth`). */
const NOT_ADMITTED = "relay refused: relay: this endpoint is not on the group's admission list";

async function edit(page: Page, name: string, field: string, value: string): Promise<void> {
  const card = profile(page, name);
  await card.getByTestId('edit-profile').click();
  await card.getByTestId(`edit-${field}`).fill(value);
  await card.getByTestId('save-profile').click();
  await expect(card.getByTestId(`value-${field}`)).toHaveText(value);
}

async function goOffline(relay: RelayProcess, context: BrowserContext, page: Page): Promise<void> {
  const badge = page.getByTestId('fingerprint');
  const endpoint = (await badge.getAttribute('data-endpoint'))!;
  const topic = (await badge.getAttribute('data-topic'))!;
  await context.setOffline(true);
  await expect(page.getByTestId('relay-state')).toHaveText('offline');
  await expect.poll(async () => (await relay.presence(topic, endpoint)).online, RELAY_SEES_DISCONNECT).toBe(false);
}

test('partitioned edits of different columns meet on both sides', async ({ browser, relay }) => {
  const [ca, cb] = [await browser.newContext(), await browser.newContext()];
  const [a, b] = [await ca.newPage(), await cb.newPage()];
  await pair(relay, a, b);
  await a.getByTestId('new-profile-name').fill('Profile 1');
  await a.getByTestId('add-profile').click();
  await expect(profile(b, 'Profile 1')).toBeVisible();

  await goOffline(relay, ca, a);
  await goOffline(relay, cb, b);
  await edit(a, 'Profile 1', 'location', 'north shed');
  await edit(b, 'Profile 1', 'schedule', 'hourly');

  await ca.setOffline(false);
  await cb.setOffline(false);
  for (const page of [a, b]) {
    await expect(profile(page, 'Profile 1').getByTestId('value-location')).toHaveText('north shed');
    await expect(profile(page, 'Profile 1').getByTestId('value-schedule')).toHaveText('hourly');
  }
  // Who changed what is shown per cell.
  await expect(profile(a, 'Profile 1').getByTestId('by-schedule')).toContainText('collector');
  await expect(profile(b, 'Profile 1').getByTestId('by-location')).toContainText('workstation');
});

test('a delete overtaken by a later edit resurrects the row with a notice', async ({ browser, relay }) => {
  const [ca, cb] = [await browser.newContext(), await browser.newContext()];
  const [a, b] = [await ca.newPage(), await cb.newPage()];
  await pair(relay, a, b);
  await a.getByTestId('new-profile-name').fill('Tank');
  await a.getByTestId('add-profile').click();
  await expect(profile(b, 'Tank')).toBeVisible();

  await goOffline(relay, cb, b);
  await profile(a, 'Tank').getByTestId('delete-profile').click();
  await profile(a, 'Tank').getByTestId('confirm-delete').click();
  await expect(profile(a, 'Tank')).toHaveCount(0);
  await a.getByTestId('show-deleted').check();
  await expect(profile(a, 'Tank')).toHaveAttribute('data-alive', 'false');

  // B, still offline, edits later (a higher HLC) than A's delete.
  await edit(b, 'Tank', 'notes', 'refilled');
  await cb.setOffline(false);

  await expect(profile(a, 'Tank')).toHaveAttribute('data-alive', 'true');
  await expect(profile(a, 'Tank').getByTestId('value-notes')).toHaveText('refilled');
  const notice = (page: Page) => page.locator('[data-testid="notice"][data-kind="resurrection"]');
  await expect(notice(a)).toHaveCount(1);
  await expect(notice(b)).toHaveCount(1);
  await expect(notice(a)).toContainText('The device profile “Tank” came back after it was deleted');
  await expect(profile(b, 'Tank')).toHaveAttribute('data-alive', 'true');

  // Once per resurrection: a later edit of the row tells nothing new.
  await edit(a, 'Tank', 'location', 'yard');
  await expect(profile(b, 'Tank').getByTestId('value-location')).toHaveText('yard');
  await expect(notice(a)).toHaveCount(1);
  await expect(notice(b)).toHaveCount(1);
  // Kept until dismissed, also across a reload; dismissed, it stays dismissed.
  await a.reload();
  await expect(notice(a)).toContainText('“Tank” came back');
  await notice(a).getByTestId('dismiss-notice').click();
  await expect(notice(a)).toHaveCount(0);
  await a.reload();
  await expect(profile(a, 'Tank')).toBeVisible();
  await expect(notice(a)).toHaveCount(0);
  await expect(notice(b)).toHaveCount(1);
});

test('a delete asks first, and can be undone on every machine', async ({ browser, relay }) => {
  const [a, b] = [await (await browser.newContext()).newPage(), await (await browser.newContext()).newPage()];
  await pair(relay, a, b);
  await a.getByTestId('new-profile-name').fill('Valve 9');
  await a.getByTestId('new-profile-location').fill('east gate');
  await a.getByTestId('add-profile').click();
  await expect(profile(b, 'Valve 9')).toBeVisible();

  // Keep: nothing is deleted.
  await profile(a, 'Valve 9').getByTestId('delete-profile').click();
  await expect(profile(a, 'Valve 9').getByTestId('delete-question')).toHaveText('Delete it on every machine?');
  await profile(a, 'Valve 9').getByTestId('keep-profile').click();
  await expect(profile(a, 'Valve 9').getByTestId('delete-profile')).toBeVisible();
  await expect(profile(a, 'Valve 9')).toHaveAttribute('data-alive', 'true');

  await profile(a, 'Valve 9').getByTestId('delete-profile').click();
  await profile(a, 'Valve 9').getByTestId('confirm-delete').click();
  await expect(profile(a, 'Valve 9')).toHaveCount(0);
  await expect(a.getByTestId('deleted-notice')).toContainText('Deleted Valve 9 on every machine.');
  await expect(profile(b, 'Valve 9')).toHaveCount(0);
  await expect(b.getByTestId('profile-count')).toHaveText('0 profiles');

  // Undo brings it back, with its values, here and on the other machine.
  await a.getByTestId('undo-delete').click();
  await expect(a.getByTestId('deleted-notice')).toHaveCount(0);
  await expect(profile(a, 'Valve 9').getByTestId('value-location')).toHaveText('east gate');
  await expect(profile(b, 'Valve 9').getByTestId('value-location')).toHaveText('east gate');
  await expect(profile(b, 'Valve 9')).toHaveAttribute('data-alive', 'true');
});

test('a removed machine fails closed', async ({ browser, relay }) => {
  const [ca, cb] = [await browser.newContext(), await browser.newContext()];
  const [a, b] = [await ca.newPage(), await cb.newPage()];
  await pair(relay, a, b);
  await b.getByTestId('new-profile-name').fill('Before removal');
  await b.getByTestId('add-profile').click();
  await expect(profile(a, 'Before removal')).toBeVisible();

  // B is away while it is removed, so nothing tells it: only the relay stands between its next write and A.
  await goOffline(relay, cb, b);
  await view(a, 'machines');
  const collector = a.locator('[data-testid="machine"][data-name="collector"]');
  await collector.getByTestId('remove-machine').click();
  await collector.getByTestId('confirm-remove').click();
  await expect(collector).toHaveAttribute('data-removed', 'true');
  await view(a, 'sync');
  await expect(a.getByTestId('sync-panel')).toBeVisible();
  await expect(a.getByTestId('peer')).toHaveCount(0);
  // A pushes the new admission list, then removes B from each domain's group through the relay's sequencer
  // on the same session: the relay handles a session's messages in order, so B being gone from the readers
  // proves the relay took the list before B comes back.
  await view(a, 'domains');
  const readers = a.locator('[data-testid="domain"][data-domain="GENERAL"]').getByTestId('domain-members');
  await expect(readers).toHaveText('Readers: workstation');

  await b.getByTestId('new-profile-name').fill('After removal');
  await b.getByTestId('add-profile').click();
  await expect(profile(b, 'After removal')).toBeVisible();
  // Back online, B connects at once, after its write, and is turned away: the write, still pending, never left B.
  await cb.setOffline(false);
  await expect(b.getByTestId('relay-state')).toHaveAttribute('title', NOT_ADMITTED);
  await expect(b.getByTestId('pending')).not.toHaveAttribute('data-count', '0');
  await view(a, 'profiles');
  await expect(profile(a, 'After removal')).toHaveCount(0);
  await expect(profile(a, 'Before removal')).toBeVisible();
});

test('an edit made offline that lost is told on its machine: which column, whose value won', async ({
  browser,
  relay,
}) => {
  const [ca, cb] = [await browser.newContext(), await browser.newContext()];
  const [a, b] = [await ca.newPage(), await cb.newPage()];
  await pair(relay, a, b);
  await a.getByTestId('new-profile-name').fill('Pump');
  await a.getByTestId('add-profile').click();
  await expect(profile(b, 'Pump')).toBeVisible();

  await goOffline(relay, cb, b);
  await edit(b, 'Pump', 'location', 'yard');
  // Later than B's edit, made without knowing it: A's value wins everywhere.
  await edit(a, 'Pump', 'location', 'roof');
  await cb.setOffline(false);

  await expect(profile(b, 'Pump').getByTestId('value-location')).toHaveText('roof');
  const lost = (page: Page) => page.locator('[data-testid="notice"][data-kind="warning"]', { hasText: 'offline edit' });
  await expect(lost(b)).toHaveText(
    /Your offline edit of the device profile “Pump” lost: its location stays “roof” from workstation, whose edit was later, not “yard”\./,
  );
  await expect(profile(a, 'Pump').getByTestId('value-location')).toHaveText('roof');
  // Told once, and only where the edit was lost; an online edit that replaces a value is no loss.
  await edit(a, 'Pump', 'location', 'shed');
  await expect(profile(b, 'Pump').getByTestId('value-location')).toHaveText('shed');
  await expect(lost(b)).toHaveCount(1);
  await expect(lost(a)).toHaveCount(0);
});
