/**
 * Rows written offline are sealed under the generation current at publication (issue 24;
 * core/republish.ts), in three browsers. The collector reads LAB and writes a note while
 * offline; meanwhile the workstation rotates LAB and lets the server read it from now on
 * (a generation newer than every rewrap: the server holds only that one). When the
 * collector comes back, its offline note goes out under the server's generation and the
 * server shows it — while a note the collector published before the rotation stays closed
 * to the server, as its entitlement says.
 */
import { domain, note, writeNote } from './domain-notes.ts';
import { expect, expectMachines, pair, pairAnother, test, view } from './relay-process.ts';

test('a note written offline is published under the generation current when the writer comes back', async ({
  browser,
  relay,
}) => {
  test.setTimeout(240_000);
  const contexts = [await browser.newContext(), await browser.newContext(), await browser.newContext()];
  const [ws, col, srv] = await Promise.all(contexts.map((c) => c.newPage()));
  await pair(relay, ws!, col!);
  await pairAnother(relay, ws!, srv!, 'server');
  await expectMachines([ws!, col!, srv!], 3);
  for (const page of [ws!, col!, srv!]) await view(page, 'domains');

  await ws!.getByTestId('domain-name').fill('LAB');
  await ws!.locator('[data-testid="domain-exclude"][data-name="server"]').check();
  await ws!.getByTestId('domain-create-submit').click();
  await expect(domain(col!, 'LAB')).toHaveAttribute('data-member', 'yes');
  await writeNote(col!, 'LAB', 'published before the rotation');
  await expect(note(ws!, 'published before the rotation')).toBeVisible();

  // Offline, the collector writes under the generation it holds (1).
  await contexts[1]!.setOffline(true);
  await writeNote(col!, 'LAB', 'written offline');
  await expect(domain(col!, 'LAB')).toHaveAttribute('data-generation', '1');

  // The workstation rotates LAB (2) and lets the server read it from now on (3).
  await domain(ws!, 'LAB').getByTestId('domain-rotate').click();
  await expect(domain(ws!, 'LAB')).toHaveAttribute('data-generation', '2');
  await domain(ws!, 'LAB').getByRole('button', { name: 'Let server read (from now on)' }).click();
  await expect(domain(srv!, 'LAB')).toHaveAttribute('data-member', 'yes');
  await expect(domain(srv!, 'LAB')).toHaveAttribute('data-generation', '3');
  await writeNote(ws!, 'LAB', 'after the server joined');
  await expect(note(srv!, 'after the server joined')).toBeVisible();

  // Back online: the collector catches up to 3 and publishes its offline note under it.
  await contexts[1]!.setOffline(false);
  await expect(domain(col!, 'LAB')).toHaveAttribute('data-generation', '3', { timeout: 60_000 });
  await expect(note(srv!, 'written offline')).toBeVisible({ timeout: 60_000 });
  await expect(note(ws!, 'written offline')).toBeVisible();
  await expect(note(col!, 'written offline')).toHaveCount(1);
  // What the collector published before the rotation stays closed to the server.
  await expect(note(srv!, 'published before the rotation')).toHaveCount(0);
});
