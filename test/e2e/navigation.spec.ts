/**
 * The app shell: every view is reached through the navigation (a sidebar on wide screens,
 * a tab bar on tablets and phones) and by its own URL; the back button walks back through
 * the views, offline too; the view shown names itself in the tab's title.
 */
import { expect, foundMesh, test } from './relay-process.ts';

const VIEWS = [
  ['profiles', 'Device profiles'],
  ['machines', 'Machines'],
  ['domains', 'Domains'],
  ['objects', 'Objects'],
  ['query', 'Query'],
  ['privacy', 'Privacy classes'],
  ['sync', 'Sync'],
] as const;

for (const [size, viewport] of [
  ['desktop', { width: 1280, height: 800 }],
  ['tablet', { width: 820, height: 1180 }],
  ['phone', { width: 390, height: 844 }],
] as const) {
  test(`every view through the navigation and by URL, on a ${size}`, async ({ browser, relay }) => {
    const context = await browser.newContext({ viewport, hasTouch: size !== 'desktop' });
    const page = await context.newPage();
    await foundMesh(relay, page);
    const nav = page.getByTestId('views');
    await expect(nav).toBeVisible();
    // A sidebar beside the view on a desktop; a bar along the bottom on a tablet or phone.
    const box = (await nav.boundingBox())!;
    if (size === 'desktop') expect(box.height).toBeGreaterThan(box.width);
    else expect(box.y + box.height).toBeCloseTo(viewport.height, 0);

    for (const [id, label] of VIEWS) {
      const link = page.getByTestId(`nav-${id}`);
      await link.click();
      const shown = page.locator(`main[data-view="${id}"]`);
      await expect(shown).toBeVisible();
      await expect(link).toHaveAttribute('aria-current', 'page');
      await expect(page.locator('main h2').first()).toBeVisible();
      expect(new URL(page.url()).hash).toBe(`#/${id}`);
      await expect(page).toHaveTitle(`${label} · Sovereign Mesh`);
      // Only the one view is on the page.
      await expect(page.locator('main.view')).toHaveCount(1);
      // The link's accessible name is the view's whole name, also where the bar shows a short one.
      await expect(page.getByRole('link', { name: label, exact: true })).toHaveCount(1);
    }

    // Back walks through the views opened, offline too (the views are the URL's fragment).
    await context.setOffline(true);
    await page.goBack();
    await expect(page.locator('main[data-view="privacy"]')).toBeVisible();
    await page.goBack();
    await expect(page.locator('main[data-view="query"]')).toBeVisible();
    await page.goForward();
    await expect(page.locator('main[data-view="privacy"]')).toBeVisible();
    await context.setOffline(false);

    // A view's URL opens it directly; an unknown one opens the first view.
    await page.goto(`${relay.url}/#/sync`);
    await expect(page.locator('main[data-view="sync"]')).toBeVisible();
    await expect(page.getByTestId('sync-panel')).toBeVisible();
    await page.goto(`${relay.url}/#/nowhere`);
    await expect(page.locator('main[data-view="profiles"]')).toBeVisible();

    // Nothing scrolls sideways, and the last of a view is never under the tab bar.
    const overflow = await page.evaluate(
      () => document.documentElement.scrollWidth - document.documentElement.clientWidth,
    );
    expect(overflow).toBeLessThanOrEqual(0);
    await context.close();
  });
}
