/**
 * A tablet is a first-class layout: at 768×1024 and 1024×768, in every view, nothing
 * scrolls sideways and every touch target is at least 44 px in both directions.
 */
import type { Page } from '@playwright/test';
import { expect, test, view } from './relay-process.ts';

const VIEWS = ['profiles', 'machines', 'domains', 'objects', 'query', 'privacy', 'sync'] as const;

for (const viewport of [
  { width: 768, height: 1024 },
  { width: 1024, height: 768 },
]) {
  test(`no horizontal overflow and 44 px touch targets at ${viewport.width}×${viewport.height}`, async ({
    browser,
    relay,
  }) => {
    const context = await browser.newContext({ viewport, hasTouch: true });
    const page = await context.newPage();
    await page.goto(relay.url);
    await page.getByTestId('machine-name').fill('tablet');
    await page.getByTestId('create-mesh').click();
    await page
      .getByTestId('new-profile-name')
      .fill('A very long device profile name that should wrap instead of overflowing');
    await page.getByTestId('new-profile-location').fill('greenhouse-west-bench-0042-with-a-long-unbroken-identifier');
    await page.getByTestId('add-profile').click();
    await view(page, 'machines');
    await page.getByTestId('invite').click();
    await expect(page.getByTestId('ticket')).toBeVisible();

    for (const id of VIEWS) {
      await view(page, id);
      await expectTabletFriendly(page, id);
    }
    await context.close();
  });
}

async function expectTabletFriendly(page: Page, id: string): Promise<void> {
  {
    const overflow = await page.evaluate(
      () => document.documentElement.scrollWidth - document.documentElement.clientWidth,
    );
    expect(overflow, `horizontal overflow in ${id}`).toBeLessThanOrEqual(0);

    const small = await page.evaluate(() =>
      [...document.querySelectorAll('button, input, textarea, select, a[href]')]
        .map((el) => ({ el, box: el.getBoundingClientRect() }))
        .filter(({ box }) => box.width > 0 && box.height > 0)
        .filter(({ box }) => box.width < 44 || box.height < 44)
        .map(
          ({ el, box }) =>
            `${el.tagName.toLowerCase()}[${el.getAttribute('data-testid') ?? ''}] ${box.width}×${box.height}`,
        ),
    );
    expect(small, `small touch targets in ${id}`).toEqual([]);
  }
}
