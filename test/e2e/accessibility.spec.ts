/**
 * Every screen, as an admin and as a member, has no accessibility violation axe-core
 * (WCAG 2.1 A and AA rules) can find: the first screen, the pairing screens on both sides,
 * and every view of the app.
 */
import AxeBuilder from '@axe-core/playwright';
import type { Page } from '@playwright/test';
import { expect, pair, test, view } from './relay-process.ts';

const VIEWS = ['profiles', 'machines', 'domains', 'objects', 'query', 'privacy', 'sync'] as const;

/** The violations axe-core finds on the page as it is now, by rule and the elements concerned. */
async function violations(page: Page): Promise<string[]> {
  const results = await new AxeBuilder({ page }).withTags(['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa']).analyze();
  return results.violations.map((v) => `${v.id} (${v.impact}): ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`);
}

test('no violations on the first screen, or in any view as admin and as member', async ({ browser, relay }) => {
  const [a, b] = [await (await browser.newContext()).newPage(), await (await browser.newContext()).newPage()];
  await a.goto(relay.url);
  await expect(a.getByTestId('create-mesh')).toBeVisible();
  expect(await violations(a), 'first screen').toEqual([]);

  await pair(relay, a, b);
  // Some content in every view: a profile, and an object to query.
  await a.getByTestId('new-profile-name').fill('Pump 1');
  await a.getByTestId('add-profile').click();
  await view(a, 'objects');
  await a.getByTestId('sample-rows').fill('600');
  await a.getByTestId('object-sample').click();
  await expect(a.locator('[data-testid="object"][data-state="published"]')).toHaveCount(1);
  await view(a, 'query');
  await a.getByTestId('query-run').click();
  await expect(a.getByTestId('query-explain')).toBeVisible();
  expect(await violations(a), 'admin: query with a result').toEqual([]);

  for (const [who, page] of [
    ['admin', a],
    ['member', b],
  ] as const) {
    for (const id of VIEWS) {
      await view(page, id);
      expect(await violations(page), `${who}: ${id}`).toEqual([]);
    }
  }
});

test('no violations on either side of a pairing', async ({ browser, relay }) => {
  const [a, b] = [await (await browser.newContext()).newPage(), await (await browser.newContext()).newPage()];
  await a.goto(relay.url);
  await a.getByTestId('create-mesh').click();
  await view(a, 'machines');
  await a.getByTestId('invite').click();
  const ticket = await a.getByTestId('ticket').inputValue();
  expect(await violations(a), 'admin: a ticket shown').toEqual([]);
  await b.goto(relay.url);
  await b.getByTestId('machine-name').fill('collector');
  await b.getByTestId('ticket-input').fill(ticket);
  await b.getByTestId('join-mesh').click();
  await expect(a.getByTestId('pairing-sas')).toBeVisible();
  await expect(b.getByTestId('join-sas')).toBeVisible();
  expect(await violations(a), 'admin: a pairing code to compare').toEqual([]);
  expect(await violations(b), 'joiner: a pairing code to compare').toEqual([]);
});

/**
 * Presses Tab until the element named `testId` has the focus (as a keyboard user reaches
 * it), and checks that the focus is visible there.
 */
async function tabTo(page: Page, testId: string): Promise<void> {
  // As a person does, wait for the control to be on screen before reaching for it.
  await expect(page.getByTestId(testId)).toBeVisible();
  for (let i = 0; i < 80; i++) {
    await page.keyboard.press('Tab');
    const focused = await page.evaluate(() => document.activeElement?.getAttribute('data-testid') ?? '');
    if (focused !== testId) continue;
    const outline = await page.evaluate(() => {
      const style = getComputedStyle(document.activeElement!);
      return style.outlineStyle !== 'none' && style.outlineWidth !== '0px';
    });
    expect(outline, `the focus on ${testId} is visible`).toBe(true);
    return;
  }
  throw new Error(`${testId} is not reached with the Tab key`);
}

test('pairing and a query, with the keyboard alone', async ({ browser, relay }) => {
  const [a, b] = [await (await browser.newContext()).newPage(), await (await browser.newContext()).newPage()];
  await a.goto(relay.url);
  await tabTo(a, 'machine-name');
  await a.keyboard.press('ControlOrMeta+a');
  await a.keyboard.type('workstation');
  await tabTo(a, 'create-mesh');
  await a.keyboard.press('Enter');
  await expect(a.getByTestId('relay-state')).toHaveText('ready');
  await tabTo(a, 'nav-machines');
  await a.keyboard.press('Enter');
  await expect(a.locator('main[data-view="machines"]')).toBeVisible();
  await tabTo(a, 'invite');
  await a.keyboard.press('Enter');
  const ticket = await a.getByTestId('ticket').inputValue();

  await b.goto(relay.url);
  await tabTo(b, 'machine-name');
  await b.keyboard.press('ControlOrMeta+a');
  await b.keyboard.type('collector');
  await tabTo(b, 'ticket-input');
  await b.keyboard.insertText(ticket);
  await tabTo(b, 'join-mesh');
  await b.keyboard.press('Enter');
  const code = a.getByTestId('pairing-sas');
  await expect(code).toHaveText(/^\d{3} \d{3}$/);
  await expect(b.getByTestId('join-sas')).toHaveText((await code.textContent())!);
  await tabTo(b, 'join-confirm');
  await b.keyboard.press('Enter');
  await tabTo(a, 'pairing-confirm');
  await a.keyboard.press('Enter');
  await expect(b.getByTestId('new-profile-name')).toBeVisible();
  await expect(a.locator('[data-testid="machine"][data-name="collector"]')).toBeVisible();

  // A sample object, then a query over it.
  await tabTo(a, 'nav-objects');
  await a.keyboard.press('Enter');
  await tabTo(a, 'sample-rows');
  await a.keyboard.press('ControlOrMeta+a');
  await a.keyboard.type('600');
  await tabTo(a, 'object-sample');
  await a.keyboard.press('Enter');
  await expect(a.locator('[data-testid="object"][data-state="published"]')).toHaveCount(1);
  await tabTo(a, 'nav-query');
  await a.keyboard.press('Enter');
  await tabTo(a, 'query-run');
  await a.keyboard.press('Enter');
  await expect(a.getByTestId('query-explain')).toContainText('1 object considered');
});
