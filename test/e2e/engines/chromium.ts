/** Chromium through Playwright, as an EnginePage: the peer every other engine pairs with. */
import type { Browser, Page } from '@playwright/test';
import type { EnginePage, PageFunction } from './engine-page.ts';

export function playwrightPage(page: Page): EnginePage {
  return {
    engine: 'chromium',
    goto: async (url) => {
      await page.goto(url);
    },
    reload: async () => {
      await page.reload();
    },
    click: (selector) => page.locator(selector).click(),
    fill: (selector, value) => page.locator(selector).fill(value),
    evaluate: <A, R>(fn: PageFunction<A, R>, arg: A) =>
      page.evaluate<R, unknown>(fn as (arg: unknown) => R | Promise<R>, arg),
    close: () => page.context().close(),
  };
}

/** A page in a fresh context (its own storage: a machine of its own) of the test's Chromium. */
export async function chromiumMachine(browser: Browser): Promise<{ page: Page; machine: EnginePage }> {
  const page = await (await browser.newContext()).newPage();
  return { page, machine: playwrightPage(page) };
}
