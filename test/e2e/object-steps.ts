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

/** Runs `SELECT count(*)` over `table` on `page`'s Query view; its answer's text, or the error's. */
export async function count(page: Page, table: string): Promise<string> {
  await page.getByTestId('query-sql').fill(`SELECT count(*) AS n FROM ${table}`);
  await page.getByTestId('query-run').click();
  const answer = page.getByTestId('query-row').or(page.getByTestId('query-error'));
  await expect(answer.first()).toBeVisible();
  await expect(page.getByTestId('query-progress')).toHaveCount(0);
  return (await answer.first().textContent())!.trim();
}
