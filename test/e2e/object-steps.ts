/** Steps on the Objects and Query views: forming sample objects, counting a table's rows. */
import type { Page } from '@playwright/test';
import { expect, view } from './relay-process.ts';

/** Forms `count` sample objects of five rows each in `table` of `domainName`, one after another. */
export async function samples(page: Page, domainName: string, table: string, count: number): Promise<void> {
  await view(page, 'objects');
  await page.getByTestId('object-domain').selectOption(domainName);
  await page.getByTestId('object-table').fill(table);
  await page.getByTestId('sample-rows').fill('5');
  for (let i = 0; i < count; i++) {
    await page.getByTestId('object-sample').click();
    await expect(page.getByTestId('import-progress')).toHaveCount(0);
  }
}

/**
 * How long a query may run here: one over 200 objects this machine does not hold reads each from the
 * relay in ranges, and on a loaded 2-core CI machine that took longer than the default 20 s (CI,
 * session 30: "158 of 200 objects" shown at 20 s — progressing, not stuck).
 */
const QUERY_MS = 120_000;

/** Runs `SELECT count(*)` over `table` on `page`'s Query view; its answer's text, or the error's. */
export async function count(page: Page, table: string): Promise<string> {
  await page.getByTestId('query-sql').fill(`SELECT count(*) AS n FROM ${table}`);
  await page.getByTestId('query-run').click();
  const answer = page.getByTestId('query-row').or(page.getByTestId('query-error'));
  await expect(answer.first()).toBeVisible({ timeout: QUERY_MS });
  await expect(page.getByTestId('query-progress')).toHaveCount(0);
  return (await answer.first().textContent())!.trim();
}
