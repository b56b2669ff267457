/**
 * Deleting rows of an object table in two browsers (issue 24; seed 003 "Deleting rows"). Rows
 * of `readings` cannot be deleted until the admin allows it (for good); then the workstation
 * picks ten rows of a query result and deletes them: a delete object, published like any
 * object, hides them on the collector too. Rows formed and deleted while the collector was
 * offline reach it together, and it never shows the deleted ones.
 */
import type { Page } from '@playwright/test';
import { expect, pair, test, view } from './relay-process.ts';
import { count, samples } from './object-steps.ts';

async function runSql(page: Page, sql: string): Promise<void> {
  await view(page, 'query');
  await page.getByTestId('query-sql').fill(sql);
  await page.getByTestId('query-run').click();
  await expect(page.getByTestId('query-explain')).toBeVisible();
  await expect(page.getByTestId('query-progress')).toHaveCount(0);
}

/** Picks the first `n` rows of the result on screen and deletes them; waits for the query to run again. */
async function deleteFirst(page: Page, n: number): Promise<void> {
  const picks = page.getByTestId('query-pick');
  for (let i = 0; i < n; i++) await picks.nth(i).check();
  await expect(page.getByTestId('query-delete')).toHaveAttribute('data-picked', String(n));
  await page.getByTestId('query-delete').click();
  await expect(page.getByTestId('query-deleted')).toContainText(`Deleted ${n} rows of readings`);
  await expect(page.getByTestId('query-delete')).toHaveAttribute('data-picked', '0');
}

test('picked rows of a query result are deleted for good, on every machine', async ({ browser, relay }) => {
  test.setTimeout(240_000);
  const contexts = [await browser.newContext(), await browser.newContext()];
  const [ws, col] = await Promise.all(contexts.map((c) => c.newPage()));
  await pair(relay, ws!, col!);
  await samples(ws!, 'GENERAL', 'readings', 3);
  await expect(ws!.locator('[data-testid="object"][data-state="published"]')).toHaveCount(3, { timeout: 60_000 });
  await view(col!, 'query');
  await expect(async () => expect(await count(col!, 'readings')).toBe('15')).toPass({ timeout: 60_000 });
  // The collector holds none of them: it read them from the relay in ranges, and kept nothing.
  expect(Number(await col!.getByTestId('query-explain').getAttribute('data-fetched'))).toBeGreaterThan(0);
  await expect(col!.getByTestId('query-explain')).toContainText('fetched from the relay');

  // Append-only until an admin says otherwise: the rows cannot be picked.
  await runSql(ws!, 'SELECT device, time FROM readings ORDER BY time');
  await expect(ws!.getByTestId('query-row')).toHaveCount(15);
  await expect(ws!.getByTestId('query-append-only')).toBeVisible();
  await expect(ws!.getByTestId('query-pick').first()).toBeDisabled();
  await ws!.getByTestId('query-allow-deletes').click();
  await expect(ws!.getByTestId('query-delete')).toBeVisible();

  await deleteFirst(ws!, 10);
  await expect(ws!.getByTestId('query-results')).toHaveAttribute('data-rows', '5');
  await view(ws!, 'objects');
  await expect(ws!.locator('[data-testid="object"][data-kind="delete"]')).toHaveAttribute('data-state', 'published', {
    timeout: 60_000,
  });
  await expect(ws!.getByTestId('object-delete')).toHaveText('deletes 10 rows');
  await view(col!, 'query');
  await expect(async () => expect(await count(col!, 'readings')).toBe('5')).toPass({ timeout: 60_000 });

  // While the collector is offline: two more objects, and four of their rows deleted.
  await contexts[1]!.setOffline(true);
  await samples(ws!, 'GENERAL', 'readings', 2);
  await runSql(ws!, 'SELECT device, time FROM readings ORDER BY time DESC');
  await expect(ws!.getByTestId('query-row')).toHaveCount(15);
  await deleteFirst(ws!, 4);
  await expect(ws!.getByTestId('query-results')).toHaveAttribute('data-rows', '11');
  await contexts[1]!.setOffline(false);
  await view(col!, 'query');
  await expect(async () => expect(await count(col!, 'readings')).toBe('11')).toPass({ timeout: 90_000 });
});
