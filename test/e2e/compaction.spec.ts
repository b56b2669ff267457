/**
 * Compaction in two browsers (issue 24; seed 003 "Deleting rows, and compaction"). The
 * workstation forms 50 small objects, deletes 10 rows, and compacts the table into one
 * object: on the collector the same queries give the same answers, less the deleted rows,
 * now from one object with the 50 set aside as superseded.
 */
import type { Page } from '@playwright/test';
import { expect, pair, test, view } from './relay-process.ts';
import { count, samples } from './object-steps.ts';

/** The answer of a grouped query, as the text of its rows, and how many objects it scanned. */
async function perDevice(page: Page): Promise<{ rows: string[]; scanned: string | null }> {
  await view(page, 'query');
  await page
    .getByTestId('query-sql')
    .fill(
      'SELECT device, count(*) AS n, min(temperature) AS lo, max(humidity) AS hi FROM readings GROUP BY device ORDER BY device',
    );
  await page.getByTestId('query-run').click();
  await expect(page.getByTestId('query-explain')).toBeVisible();
  await expect(page.getByTestId('query-progress')).toHaveCount(0);
  const explain = page.getByTestId('query-explain');
  return {
    rows: await page.getByTestId('query-row').allTextContents(),
    scanned: await explain.getAttribute('data-scanned'),
  };
}

test('50 objects compacted into 1 answer the same queries, less the deleted rows', async ({ browser, relay }) => {
  test.setTimeout(300_000);
  const contexts = [await browser.newContext(), await browser.newContext()];
  const [ws, col] = await Promise.all(contexts.map((c) => c.newPage()));
  await pair(relay, ws!, col!);
  await samples(ws!, 'GENERAL', 'readings', 50);
  await expect(ws!.locator('[data-testid="object"][data-state="published"]')).toHaveCount(50, { timeout: 120_000 });

  // Ten rows deleted first (the admin allows it).
  await view(ws!, 'query');
  await ws!.getByTestId('query-sql').fill('SELECT device, time FROM readings ORDER BY time');
  await ws!.getByTestId('query-run').click();
  await ws!.getByTestId('query-allow-deletes').click();
  const picks = ws!.getByTestId('query-pick');
  for (let i = 0; i < 10; i++) await picks.nth(i).check();
  await ws!.getByTestId('query-delete').click();
  await expect(ws!.getByTestId('query-results')).toHaveAttribute('data-rows', '240');
  await view(col!, 'query');
  await expect(async () => expect(await count(col!, 'readings')).toBe('240')).toPass({ timeout: 60_000 });
  const before = await perDevice(col!);
  expect(before.scanned).toBe('50');

  await view(ws!, 'objects');
  await ws!.getByTestId('object-table').fill('readings');
  await ws!.getByTestId('objects-compact').click();
  await expect(ws!.getByTestId('compact-result')).toHaveText(
    'Compacted 50 objects (240 rows, 10 deleted rows left out) into one: it replaces them once published.',
    { timeout: 60_000 },
  );
  await expect(ws!.getByTestId('objects-unpublished')).toHaveCount(0, { timeout: 60_000 });

  await expect(async () => expect((await perDevice(col!)).scanned).toBe('1')).toPass({ timeout: 60_000 });
  const after = await perDevice(col!);
  expect(after.rows).toEqual(before.rows);
  expect(await count(col!, 'readings')).toBe('240');
  // Nothing is left worth compacting.
  await ws!.getByTestId('objects-compact').click();
  await expect(ws!.getByTestId('compact-result')).toContainText('Nothing to compact');
});
