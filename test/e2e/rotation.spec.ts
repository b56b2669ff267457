/**
 * Rotation by rewrap in two browsers (issue 24; seed 003 "Rotating keys"). The workstation
 * publishes 200 objects in GENERAL and rotates its key while the collector keeps querying:
 * every answer is whole, the Domains view shows the rewrap reaching 200 of 200, and the
 * collector ends on the new generation reading everything. Then a domain the collector may
 * read only from now on: its objects from before stay closed to it through any number of
 * rotations — the workstation's rewrap keeps them under their older generations and says so.
 * Removed from that domain, the collector still stores its objects, and no key it holds opens
 * one formed after the removal.
 */
import type { Page } from '@playwright/test';
import { domain } from './domain-notes.ts';
import { count, samples } from './object-steps.ts';
import { expect, pair, test, view } from './relay-process.ts';

test('an admin rotates a domain of 200 objects while a member queries; forward-only never opens older objects', async ({
  browser,
  relay,
}) => {
  test.setTimeout(420_000);
  const open = async (): Promise<Page> => (await browser.newContext()).newPage();
  const [ws, col] = [await open(), await open()];
  await pair(relay, ws, col);

  await samples(ws, 'GENERAL', 'readings', 200);
  await expect(ws.locator('[data-testid="object"][data-state="published"]')).toHaveCount(200, { timeout: 120_000 });
  await view(col, 'query');
  await expect(async () => expect(await count(col, 'readings')).toBe('1000')).toPass({ timeout: 120_000 });

  // The rotation: generation 2 for both; the collector keeps querying from before the rotation
  // until the rewrap is done (two rows of records: it is quick), and every answer is whole.
  await view(ws, 'domains');
  let rewrapped = false;
  let answers = 0;
  const querying = (async () => {
    do {
      expect(await count(col, 'readings')).toBe('1000');
      answers++;
    } while (!rewrapped);
  })();
  await domain(ws, 'GENERAL').getByTestId('domain-rotate').click();
  await expect(domain(ws, 'GENERAL')).toHaveAttribute('data-generation', '2');
  const rewrap = domain(ws, 'GENERAL').getByTestId('domain-rewrap');
  await expect(rewrap).toHaveAttribute('data-done', '200', { timeout: 120_000 });
  rewrapped = true;
  await querying;
  expect(answers).toBeGreaterThan(0);
  await expect(rewrap).toHaveAttribute('data-total', '200');
  await expect(rewrap).toContainText('Rewrapped 200 of 200 objects under generation 2');
  await view(col, 'domains');
  await expect(domain(col, 'GENERAL')).toHaveAttribute('data-generation', '2');
  await view(col, 'query');
  expect(await count(col, 'readings')).toBe('1000');

  // LAB: the workstation's alone at first, three objects, then rotated (generation 2).
  await view(ws, 'domains');
  await ws.getByTestId('domain-name').fill('LAB');
  await ws.locator('[data-testid="domain-exclude"][data-name="collector"]').check();
  await ws.getByTestId('domain-create-submit').click();
  await expect(domain(ws, 'LAB')).toHaveAttribute('data-member', 'yes');
  await samples(ws, 'LAB', 'lab', 3);
  await view(ws, 'domains');
  await domain(ws, 'LAB').getByTestId('domain-rotate').click();
  await expect(domain(ws, 'LAB').getByTestId('domain-rewrap')).toContainText('Rewrapped 3 of 3');

  // The collector may read LAB from now on: a generation newer than every rewrap (3).
  await domain(ws, 'LAB').getByRole('button', { name: 'Let collector read (from now on)' }).click();
  await view(col, 'domains');
  await expect(domain(col, 'LAB')).toHaveAttribute('data-member', 'yes');
  await expect(domain(col, 'LAB')).toHaveAttribute('data-generation', '3');
  await samples(ws, 'LAB', 'lab', 1);
  await view(col, 'query');
  await expect(async () => expect(await count(col, 'lab')).toBe('5')).toPass({ timeout: 60_000 });

  // Rotations later, the three older objects are still not the collector's to open.
  for (const gen of ['4', '5']) {
    await view(ws, 'domains');
    await domain(ws, 'LAB').getByTestId('domain-rotate').click();
    await expect(domain(ws, 'LAB')).toHaveAttribute('data-generation', gen);
    await expect(domain(ws, 'LAB').getByTestId('domain-rewrap')).toContainText(
      `Rewrapped 1 of 1 object under generation ${gen} · 3 kept under older generations`,
    );
    await view(col, 'domains');
    await expect(domain(col, 'LAB')).toHaveAttribute('data-generation', gen);
    await view(col, 'query');
    expect(await count(col, 'lab')).toBe('5');
  }
  // The workstation reads all four.
  await view(ws, 'query');
  expect(await count(ws, 'lab')).toBe('20');

  // The collector stops reading LAB but stores its objects: none of its keys opens one formed later.
  await view(ws, 'domains');
  await domain(ws, 'LAB').getByRole('button', { name: 'Stop collector reading' }).click();
  await expect(domain(ws, 'LAB')).toHaveAttribute('data-generation', '6');
  await view(ws, 'objects');
  await ws
    .locator('[data-testid="placement"][data-name="collector"]')
    .getByTestId('placement-select')
    .selectOption('LAB');
  await samples(ws, 'LAB', 'lab_late', 1);
  const late = ws.locator('[data-testid="object"][data-table="lab_late"]');
  await expect(late).toHaveAttribute('data-state', 'published');
  const id = (await late.getAttribute('data-id'))!;
  await view(col, 'objects');
  const held = col.locator(`[data-testid="object"][data-id="${id}"]`);
  await expect(async () => {
    await col.getByTestId('objects-sync').click();
    await expect(held).toHaveAttribute('data-held', 'yes', { timeout: 2000 });
  }).toPass({ timeout: 60_000 });
  await expect(held).toHaveAttribute('data-readable', 'no');
  await held.getByTestId('object-try-keys').click();
  await expect(held.getByTestId('object-probe')).toHaveText(/^NoKeyOpens: none of [1-9]\d* keys opens this object$/);
});
