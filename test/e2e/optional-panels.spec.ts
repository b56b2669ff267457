/**
 * Nothing optional takes the app down: a chart library that cannot be loaded leaves the
 * query result in place and says so where the chart would be; a panel whose code cannot
 * be loaded says so in that panel while every other panel keeps working. (A missing
 * chunk is what a user meets after a deploy removed it, or offline before it was cached.)
 */
import { expect, foundMesh, profile, test, view } from './relay-process.ts';

test('a chart that cannot load is reported in its place; the result table stays', async ({ browser, relay }) => {
  const page = await (await browser.newContext({ serviceWorkers: 'block' })).newPage();
  await page.route(/\/assets\/uPlot[^/]*\.js$/, (route) => route.abort());
  await foundMesh(relay, page);
  await view(page, 'objects');
  await page.getByTestId('sample-rows').fill('600');
  await page.getByTestId('object-sample').click();
  await expect(page.locator('[data-testid="object"][data-state="published"]')).toHaveCount(1);
  await view(page, 'query');
  await page.getByTestId('query-measure').selectOption('temperature');
  await page.getByTestId('query-build').click();
  await page.getByTestId('query-run').click();
  await expect(page.getByTestId('chart-error')).toContainText('The chart could not be drawn');
  await expect(page.getByTestId('query-results')).not.toHaveAttribute('data-rows', '0');
  await expect(page.getByTestId('query-chart').locator('canvas')).toHaveCount(0);
});

test('a panel whose code cannot load says so in that panel; the others work', async ({ browser, relay }) => {
  const page = await (await browser.newContext({ serviceWorkers: 'block' })).newPage();
  await page.route(/\/assets\/Query-[^/]*\.js$/, (route) => route.abort());
  await foundMesh(relay, page);
  await view(page, 'query');
  await expect(page.getByTestId('query-load-error')).toContainText('Could not load');
  await view(page, 'profiles');
  await page.getByTestId('new-profile-name').fill('Pump 1');
  await page.getByTestId('add-profile').click();
  await expect(profile(page, 'Pump 1')).toBeVisible();
  await expect(page.getByTestId('error')).toHaveCount(0);
});
