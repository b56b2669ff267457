/**
 * SyncManifest privacy classes in two real browsers through the real relay: a
 * table a machine narrowed to Local keeps its canary at home while the peer
 * acknowledges past it, and what it withheld meanwhile it takes in once the
 * narrowing is lifted; a table an admin classes Trusted reaches a member only
 * once the admin marks it trusted. Every table shows its class.
 */
import type { Page } from '@playwright/test';
import { expect, pair, profile, test, view } from './relay-process.ts';

async function addProfile(page: Page, name: string): Promise<void> {
  await view(page, 'profiles');
  await page.getByTestId('new-profile-name').fill(name);
  await page.getByTestId('add-profile').click();
  await expect(profile(page, name)).toBeVisible();
}

/** The writer's only peer acknowledged everything in its log (delivered, or passed over). */
async function peerCaughtUp(writer: Page): Promise<void> {
  await view(writer, 'sync');
  await expect(writer.getByTestId('peer-pending')).toHaveText('0 pending');
}

const tableClass = (page: Page) => page.locator('[data-testid="table-class"][data-table="device_profiles"]');

test('a table narrowed to local keeps its canary on its machine; a trusted table waits for trust', async ({
  browser,
  relay,
}) => {
  const [a, b] = [await (await browser.newContext()).newPage(), await (await browser.newContext()).newPage()];
  await pair(relay, a, b);
  // The founder classed the product's table public; the joiner follows it from the start.
  for (const page of [a, b]) await view(page, 'privacy');
  await expect(tableClass(a)).toHaveAttribute('data-effective', 'public');
  await expect(tableClass(b)).toHaveAttribute('data-effective', 'public');

  // B narrows the table to local for itself: its rows stay on B.
  await tableClass(b).getByTestId('local-class').selectOption('local');
  await expect(tableClass(b)).toHaveAttribute('data-effective', 'local');
  await addProfile(b, 'LOCAL-CANARY-7c1e');
  await peerCaughtUp(b);
  // What A writes meanwhile, B withholds: it keeps only the envelope's identity.
  await addProfile(a, 'while-b-narrowed');
  await peerCaughtUp(a);
  await view(b, 'sync');
  await expect(b.locator('[data-testid="withheld"] [data-reason="NotSyncable"]')).toBeVisible();
  await view(b, 'profiles');
  await expect(profile(b, 'while-b-narrowed')).toHaveCount(0);
  await view(b, 'sync');
  // The list behind the count is paged from the store: its identity and table, no content.
  await b.locator('[data-testid="refusals-toggle"][data-kind="withheld"]').click();
  const withheldList = b.locator('[data-testid="refusals"][data-kind="withheld"]');
  await expect(withheldList.getByTestId('refusal').first()).toHaveAttribute('data-reason', 'NotSyncable');
  await expect(withheldList.getByTestId('refusal').first()).toContainText('a row of device_profiles');
  await expect(withheldList).not.toContainText('while-b-narrowed');
  // B lifts the narrowing: it asks for what it withheld, and what it writes now travels;
  // the canary still does not.
  await view(b, 'privacy');
  await tableClass(b).getByTestId('local-class').selectOption('');
  await view(b, 'profiles');
  await expect(profile(b, 'while-b-narrowed')).toBeVisible();
  await view(b, 'sync');
  await expect(b.getByTestId('withheld')).toHaveText('none');
  await addProfile(b, 'after-narrowing');
  await view(a, 'profiles');
  await expect(profile(a, 'after-narrowing')).toBeVisible();
  await peerCaughtUp(b);
  await expect(profile(a, 'LOCAL-CANARY-7c1e')).toHaveCount(0);
  // A never even saw it to refuse it.
  await view(a, 'sync');
  await expect(a.getByTestId('sync-panel')).toBeVisible();
  await expect(a.locator('[data-testid="rejection"][data-reason="NotSyncable"]')).toHaveCount(0);

  // The admin classes the table trusted; B is a member, not trusted.
  await view(a, 'privacy');
  await tableClass(a).getByTestId('mesh-class').selectOption('trusted');
  await view(b, 'privacy');
  await expect(tableClass(b)).toHaveAttribute('data-effective', 'trusted');
  await addProfile(a, 'TRUSTED-CANARY-51d0');
  await peerCaughtUp(a);
  await view(b, 'profiles');
  await expect(profile(b, 'while-b-narrowed')).toBeVisible();
  await expect(profile(b, 'TRUSTED-CANARY-51d0')).toHaveCount(0);
  await view(b, 'privacy');
  await expect(tableClass(b)).toBeVisible();
  await expect(b.getByTestId('mesh-class')).toHaveCount(0);

  // Once the admin trusts B, A offers it everything again and the row arrives.
  await view(a, 'machines');
  const bOnA = a.locator('[data-testid="machine"][data-name="collector"]');
  await bOnA.getByTestId('toggle-trusted').click();
  await expect(bOnA.getByTestId('trusted-badge')).toBeVisible();
  await view(b, 'profiles');
  await expect(profile(b, 'TRUSTED-CANARY-51d0')).toBeVisible();
  await expect(profile(b, 'after-narrowing')).toBeVisible();
  await expect(profile(b, 'LOCAL-CANARY-7c1e')).toBeVisible();
  await view(a, 'profiles');
  await expect(profile(a, 'TRUSTED-CANARY-51d0')).toBeVisible();
  await expect(profile(a, 'LOCAL-CANARY-7c1e')).toHaveCount(0);
});
