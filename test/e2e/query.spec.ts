/**
 * Query in the browser (issue 7): sample measurements imported in two objects, a
 * time-bucketed average over a range one of them covers — the result table, the chart,
 * and the explain summary saying the other object was pruned on the catalog; a
 * streaming query's rows shown while it runs; a cancelled query stops; a bad query is a
 * clear error and no result.
 */
import { readFileSync } from 'node:fs';
import { expect, foundMesh, test, view } from './relay-process.ts';

test('a time-bucketed average draws a chart and explains what was pruned', async ({ browser, relay }) => {
  const page = await (await browser.newContext({ acceptDownloads: true })).newPage();
  await foundMesh(relay, page);
  // Before any object exists, the Query view says what to do first.
  await view(page, 'query');
  await expect(page.getByTestId('query-empty')).toContainText('Nothing to query yet');
  await page.getByTestId('query-empty').getByRole('link', { name: 'Objects' }).click();
  await expect(page.locator('main[data-view="objects"]')).toBeVisible();
  for (const rows of ['3000', '600']) {
    await page.getByTestId('sample-rows').fill(rows);
    await page.getByTestId('object-sample').click();
    await expect(page.getByTestId('import-progress')).toHaveCount(0);
  }
  await expect(page.locator('[data-testid="object"][data-state="published"]')).toHaveCount(2);

  // The builder writes the SQL: hourly average temperature.
  await view(page, 'query');
  await page.getByTestId('query-fn').selectOption('avg');
  await page.getByTestId('query-measure').selectOption('temperature');
  await page.getByTestId('query-bucket').selectOption('1 hour');
  await page.getByTestId('query-build').click();
  await expect(page.getByTestId('query-sql')).toHaveValue(
    "SELECT time_bucket(INTERVAL '1 hour', time) AS bucket, avg(temperature) AS avg_temperature FROM measurements GROUP BY bucket ORDER BY bucket",
  );
  await page.getByTestId('query-run').click();
  await expect(page.getByTestId('query-explain')).toBeVisible();
  await expect(page.getByTestId('query-error')).toHaveCount(0);
  await expect(page.getByTestId('query-explain')).toHaveAttribute('data-scanned', '2');
  await expect(page.getByTestId('query-chart').locator('canvas')).toHaveCount(1);
  const rows = Number(await page.getByTestId('query-results').getAttribute('data-rows'));
  expect(rows).toBeGreaterThan(5);
  // Virtual scrolling: far fewer rows in the page than in the result, when there are many.
  expect(await page.getByTestId('query-row').count()).toBeLessThanOrEqual(Math.min(rows, 24));

  // Export of the result, as CSV.
  const download = page.waitForEvent('download');
  await page.getByTestId('query-export-csv').click();
  const saved = await download;
  const csv = readFileSync(await saved.path(), 'utf8')
    .trimEnd()
    .split('\n');
  expect(csv[0]).toBe('bucket,avg_temperature');
  expect(csv).toHaveLength(rows + 1);
  expect(csv[1]).toMatch(/^\d{4}-\d\d-\d\dT\d\d:00:00\.000Z,-?\d+(\.\d+)?$/);
  // Full precision, not the table's six digits: hourly means of readings in hundredths have more.
  const digits = (value: string) => value.replace(/[-.]/g, '').replace(/^0+/, '').length;
  expect(Math.max(...csv.slice(1).map((line) => digits(line.split(',')[1]!)))).toBeGreaterThan(6);

  // Both samples end now (six devices, a reading a minute each): the small one covers the last
  // 100 minutes, the large one 500. A range 400 to 200 minutes ago cannot match the small one,
  // which is pruned on the catalog before it is opened.
  const sql = await page.getByTestId('query-sql').inputValue();
  const ago = (minutes: number) => new Date(Date.now() - minutes * 60_000).toISOString();
  await page
    .getByTestId('query-sql')
    .fill(
      sql.replace(' GROUP BY', ` WHERE time >= TIMESTAMP '${ago(400)}' AND time < TIMESTAMP '${ago(200)}' GROUP BY`),
    );
  await page.getByTestId('query-run').click();
  await expect(page.getByTestId('query-explain')).toContainText('2 objects considered');
  await expect(page.getByTestId('query-explain')).toHaveAttribute('data-scanned', '1');
  await expect(page.getByTestId('query-explain')).toHaveAttribute('data-pruned', '1');
  await page.getByText('Why objects were pruned').click();
  await expect(page.getByText(/time range: time < TIMESTAMP '\d{4}-\d\d-\d\dT/)).toBeVisible();

  // The builder's filter: one device.
  await page.getByTestId('query-filter-column').selectOption('device');
  await page.getByTestId('query-filter-value').fill('weir');
  await page.getByTestId('query-build').click();
  await expect(page.getByTestId('query-sql')).toHaveValue(/WHERE device = 'weir' GROUP BY bucket/);
  await page.getByTestId('query-run').click();
  await expect(page.getByTestId('query-explain')).toContainText('2 scanned');

  // A query whose rows need no later step hands them out as it scans: the table shows them
  // while it runs (seen by an observer installed before the run), then the whole result.
  await page.evaluate(() => {
    const seen = { live: 0 };
    (window as unknown as { seenLive: typeof seen }).seenLive = seen;
    new MutationObserver(() => {
      const live = document.querySelector('[data-testid="query-results"][data-live="true"]');
      if (live) seen.live = Math.max(seen.live, Number(live.getAttribute('data-rows')));
    }).observe(document.body, { subtree: true, childList: true, attributes: true });
  });
  await page.getByTestId('query-sql').fill("SELECT time, device, temperature FROM measurements WHERE device = 'weir'");
  await page.getByTestId('query-run').click();
  await expect(page.getByTestId('query-explain')).toBeVisible();
  const final = Number(await page.getByTestId('query-results').getAttribute('data-rows'));
  expect(final).toBe(600); // a sixth of the 3,600 sample rows
  const seenLive = await page.evaluate(() => (window as unknown as { seenLive: { live: number } }).seenLive.live);
  expect(seenLive).toBeGreaterThan(0);
  expect(seenLive).toBeLessThanOrEqual(final);
  await expect(page.getByTestId('query-results')).not.toHaveAttribute('data-live', 'true');

  // Cancel, pressed as soon as it shows: the query stops with a typed error and no result.
  await page.getByTestId('query-sql').fill('SELECT time, device, temperature FROM measurements');
  const cancelled = await page.evaluate(async () => {
    (document.querySelector('[data-testid="query-run"]') as HTMLButtonElement).click();
    for (let i = 0; i < 10; i++) {
      const cancel = document.querySelector<HTMLButtonElement>('[data-testid="query-cancel"]');
      if (cancel) {
        cancel.click();
        return true;
      }
      await Promise.resolve();
    }
    return false;
  });
  expect(cancelled).toBe(true);
  await expect(page.getByTestId('query-error')).toHaveText('Cancelled');
  await expect(page.getByTestId('query-explain')).toHaveCount(0);
  await expect(page.getByTestId('query-run')).toBeEnabled();

  // Bad input: a clear error, no result.
  await page.getByTestId('query-sql').fill('SELECT temperature FROM measurements WHERE temperature > 1 OR device = 1');
  await page.getByTestId('query-run').click();
  await expect(page.getByTestId('query-error')).toContainText('UnsupportedSql: OR');
  await expect(page.getByTestId('query-results')).toHaveCount(0);
});

test('a sample named by its person is a table of its own, listed with the domain it lives in', async ({
  browser,
  relay,
}) => {
  const page = await (await browser.newContext()).newPage();
  await foundMesh(relay, page);
  await view(page, 'objects');
  await page.getByTestId('sample-rows').fill('600');
  await page.getByTestId('object-table').fill('North field');
  await page.getByTestId('object-sample').click();
  await expect(page.locator('[data-testid="object"][data-table="north_field"]')).toHaveAttribute(
    'data-state',
    'published',
  );
  await page.getByTestId('object-table').fill('');
  await page.getByTestId('object-sample').click();
  await expect(page.locator('[data-testid="object"][data-table="measurements"]')).toHaveAttribute(
    'data-state',
    'published',
  );
  await view(page, 'query');
  await expect(page.getByTestId('query-table').locator('option')).toHaveText([
    'measurements (in GENERAL)',
    'north_field (in GENERAL)',
  ]);

  // A mean of about 10 and a count of about 60 an hour: an axis each, a colour each, one legend.
  await page
    .getByTestId('query-sql')
    .fill(
      "SELECT time_bucket(INTERVAL '1 hour', time) AS bucket, avg(temperature) AS mean, count(*) AS n FROM north_field GROUP BY bucket ORDER BY bucket",
    );
  await page.getByTestId('query-run').click();
  const chart = page.getByTestId('query-chart');
  await expect(chart.locator('canvas')).toHaveCount(1);
  await expect(chart.locator('.u-axis')).toHaveCount(3);
  await expect(chart.locator('.u-legend .u-series .u-label')).toHaveText(['Time', 'mean', 'n']);
  const colours = await chart
    .locator('.u-legend .u-series .u-marker')
    .evaluateAll((markers) => markers.slice(1).map((m) => getComputedStyle(m).borderColor));
  expect(new Set(colours).size).toBe(2);
});
