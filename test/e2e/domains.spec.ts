/**
 * Domains on MLS in three browsers (seed 003 "Domains"): a workstation
 * creates RESTRICTED for itself and the collector only. The server is a full
 * machine of the mesh — it reads GENERAL (positive control), stores and
 * forwards RESTRICTED's sealed rows — yet never obtains RESTRICTED's key: every
 * key it holds fails on those rows with a typed error. Removing the collector
 * from RESTRICTED mints a generation it cannot open; letting it read again
 * "from now on" gives it a newer one still: it reads what is sealed after its
 * return, not what was sealed while it was out.
 */
import type { Page } from '@playwright/test';
import { domain, note, writeNote } from './domain-notes.ts';
import { expect, expectMachines, pair, pairAnother, profile, test, view } from './relay-process.ts';

test('RESTRICTED is read by workstation and collector only; the server stores it and opens none of it', async ({
  browser,
  relay,
}) => {
  const open = async (): Promise<Page> => (await browser.newContext()).newPage();
  const [ws, col, srv] = [await open(), await open(), await open()];
  await pair(relay, ws, col);
  await pairAnother(relay, ws, srv, 'server');
  await expectMachines([ws, col, srv], 3);

  // Positive control: the server reads GENERAL.
  await ws.getByTestId('new-profile-name').fill('Pump 1');
  await ws.getByTestId('add-profile').click();
  await expect(profile(srv, 'Pump 1')).toBeVisible();
  // Domains and their notes are one view; every machine stays on it from here.
  for (const page of [ws, col, srv]) await view(page, 'domains');
  await expect(domain(srv, 'GENERAL')).toHaveAttribute('data-member', 'yes');

  // A built-in or ill-formed name is refused with a typed error, and nothing is created.
  for (const bad of ['general', 'no spaces']) {
    await ws.getByTestId('domain-name').fill(bad);
    await ws.getByTestId('domain-create-submit').click();
    await expect(ws.getByTestId('error')).toContainText('InvalidDomain');
  }
  await expect(ws.getByTestId('domain')).toHaveCount(2);

  await ws.getByTestId('domain-name').fill('RESTRICTED');
  await ws.getByTestId('domain-purpose').fill('drill cores before publication');
  await ws.locator('[data-testid="domain-exclude"][data-name="server"]').check();
  await ws.getByTestId('domain-create-submit').click();
  await expect(domain(ws, 'RESTRICTED')).toHaveAttribute('data-member', 'yes');
  await expect(domain(ws, 'RESTRICTED').getByTestId('domain-members')).toContainText('collector');
  await expect(domain(ws, 'RESTRICTED').getByTestId('domain-members')).not.toContainText('server');
  await expect(domain(col, 'RESTRICTED')).toHaveAttribute('data-member', 'yes');
  // The server knows the domain exists (a CONTROL record) and is not a member of it.
  await expect(domain(srv, 'RESTRICTED')).toHaveAttribute('data-member', 'no');

  const canary = 'core-sample-7f3a canary';
  await writeNote(col, 'RESTRICTED', canary);
  await expect(note(ws, canary)).toBeVisible();
  await writeNote(col, 'GENERAL', 'general note from the collector');
  await expect(note(srv, 'general note from the collector')).toBeVisible();
  await expect(note(srv, canary)).toHaveCount(0);

  // The server holds RESTRICTED's sealed rows, and no key of its opens them.
  await expect(async () => {
    await srv.getByTestId('try-keys').click();
    await expect(srv.getByTestId('unreadable')).toHaveText(
      /^NoKeyOpens: none of [1-9]\d* keys opens any of [1-9]\d* sealed rows held \([1-9]\d* of RESTRICTED\)$/,
      { timeout: 2000 },
    );
  }).toPass({ timeout: 30_000 });
  await expect(domain(srv, 'RESTRICTED')).toHaveAttribute('data-generation', '0');

  // Revocation: the collector stops reading RESTRICTED; a new generation is minted without it.
  await domain(ws, 'RESTRICTED').getByRole('button', { name: 'Stop collector reading' }).click();
  await expect(domain(ws, 'RESTRICTED')).toHaveAttribute('data-generation', '2');
  await expect(domain(col, 'RESTRICTED').getByTestId('domain-removed')).toBeVisible();
  await writeNote(ws, 'RESTRICTED', 'after the removal');
  await writeNote(ws, 'GENERAL', 'general after the removal');
  await expect(note(col, 'general after the removal')).toBeVisible();
  await expect(note(col, 'after the removal').filter({ hasNotText: 'general' })).toHaveCount(0);
  await expect(note(col, canary)).toBeVisible();

  // Let it read again, from now on. Generation 2 was minted by a removal, so objects older
  // than the collector's return may be rewrapped under it: the collector is given a new
  // generation, 3, and reads from there — what was sealed while it was out stays closed.
  await domain(ws, 'RESTRICTED').getByRole('button', { name: 'Let collector read (from now on)' }).click();
  await expect(domain(col, 'RESTRICTED')).toHaveAttribute('data-member', 'yes');
  await expect(domain(col, 'RESTRICTED')).toHaveAttribute('data-generation', '3');
  await writeNote(ws, 'RESTRICTED', 'after the return');
  await expect(note(col, 'after the return')).toBeVisible();
  await expect(note(col, 'after the removal').filter({ hasNotText: 'general' })).toHaveCount(0);
  await expect(note(srv, canary)).toHaveCount(0);
});
