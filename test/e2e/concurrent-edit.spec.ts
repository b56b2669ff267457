/**
 * An open form never reverts someone else's edit: two machines open the edit form of
 * the same profile, each changes a different field and saves. Both changes stay on
 * both machines — a form sends only the fields its user changed, not its stale copy
 * of the others.
 */
import type { Page } from '@playwright/test';
import { expect, pair, profile, test } from './relay-process.ts';

async function openForm(page: Page, name: string): Promise<void> {
  await profile(page, name).getByTestId('edit-profile').click();
  await expect(profile(page, name).getByTestId('edit-location')).toBeVisible();
}

test('two machines edit different fields of one row with their forms open: both edits stay', async ({
  browser,
  relay,
}) => {
  const a = await (await browser.newContext()).newPage();
  const b = await (await browser.newContext()).newPage();
  await pair(relay, a, b);
  await a.getByTestId('new-profile-name').fill('Pump 1');
  await a.getByTestId('new-profile-location').fill('north shed');
  await a.getByTestId('add-profile').click();
  await expect(profile(b, 'Pump 1').getByTestId('value-location')).toHaveText('north shed');

  // Both open the form on the same state of the row.
  await openForm(a, 'Pump 1');
  await openForm(b, 'Pump 1');

  // A changes the schedule and saves; B's form, still open, holds the old schedule.
  await profile(a, 'Pump 1').getByTestId('edit-schedule').fill('hourly');
  await profile(a, 'Pump 1').getByTestId('save-profile').click();
  await expect(profile(a, 'Pump 1').getByTestId('value-schedule')).toHaveText('hourly');
  // A's edit has reached B: B acknowledged it, so A has nothing pending…
  await expect(a.getByTestId('pending')).toHaveAttribute('data-count', '0');

  // …and B changes only the notes and saves.
  await profile(b, 'Pump 1').getByTestId('edit-notes').fill('filter changed');
  await profile(b, 'Pump 1').getByTestId('save-profile').click();

  for (const page of [a, b]) {
    await expect(profile(page, 'Pump 1').getByTestId('value-notes')).toHaveText('filter changed');
    await expect(profile(page, 'Pump 1').getByTestId('value-schedule')).toHaveText('hourly');
    await expect(profile(page, 'Pump 1').getByTestId('value-location')).toHaveText('north shed');
  }
});
