/**
 * Faults in the real system: the relay is SIGKILLed in the middle of a catch-up
 * and restarted; a tab is closed while it is applying what arrives. Wherever the
 * fault lands, no event is lost and none is applied twice.
 */
import type { Page } from '@playwright/test';
import { expect, pair, test } from './relay-process.ts';

const EVENTS = 60;

async function addProfiles(page: Page, count: number): Promise<void> {
  for (let i = 0; i < count; i++) {
    await page.getByTestId('new-profile-name').fill(`Sensor ${String(i).padStart(3, '0')}`);
    await page.getByTestId('add-profile').click();
    await expect(page.getByTestId('new-profile-name')).toHaveValue('');
  }
}

/**
 * Every profile exactly once, and the log holds no event twice. The list is virtualised
 * (only the cards on screen exist), so the count is the one the page states and the
 * names are read from the machine's store.
 */
async function expectExactlyOnce(page: Page, count: number): Promise<void> {
  await expect(page.getByTestId('profile-count')).toHaveText(`${count} profiles`, { timeout: 60_000 });
  const { names, duplicates } = await page.evaluate(async () => {
    const open = indexedDB.open('sov-node');
    const db = await new Promise<IDBDatabase>((resolve, reject) => {
      open.onsuccess = () => resolve(open.result);
      open.onerror = () => reject(new Error(String(open.error)));
    });
    const all = <T>(store: string) =>
      new Promise<T[]>((resolve) => {
        const request = db.transaction(store).objectStore(store).getAll();
        request.onsuccess = () => resolve(request.result as T[]);
      });
    const entries = await all<{ eventId?: string }>('log');
    const rows = await all<{ table: string; cells: Record<string, { value: unknown }> }>('rows');
    db.close();
    const ids = entries.map((e) => e.eventId).filter(Boolean);
    return {
      names: rows.filter((r) => r.table === 'device_profiles').map((r) => String(r.cells['name']?.value)),
      duplicates: ids.length - new Set(ids).size,
    };
  });
  expect(names).toHaveLength(count);
  expect(new Set(names).size).toBe(count);
  expect(duplicates).toBe(0);
}

test('the relay is killed mid-catch-up and restarted: nothing lost, nothing doubled', async ({ browser, relay }) => {
  const [ca, cb] = [await browser.newContext(), await browser.newContext()];
  const [a, b] = [await ca.newPage(), await cb.newPage()];
  await pair(relay, a, b);
  await cb.setOffline(true);
  await expect(b.getByTestId('relay-state')).toHaveText('offline');
  await addProfiles(a, EVENTS);

  await cb.setOffline(false);
  await expect(b.getByTestId('relay-state')).toHaveText('ready');
  await relay.stop('SIGKILL');
  await relay.start();
  await expectExactlyOnce(b, EVENTS);
  await expectExactlyOnce(a, EVENTS);
  await expect(a.getByTestId('pending')).toHaveAttribute('data-count', '0', { timeout: 60_000 });
});

test('a tab closed while applying loses nothing and applies nothing twice', async ({ browser, relay }) => {
  const [ca, cb] = [await browser.newContext(), await browser.newContext()];
  const a = await ca.newPage();
  let b = await cb.newPage();
  await pair(relay, a, b);
  await cb.setOffline(true);
  await expect(b.getByTestId('relay-state')).toHaveText('offline');
  await addProfiles(a, EVENTS);

  // Close B as soon as the first profiles land: the rest of the batch is mid-flight.
  await cb.setOffline(false);
  await expect(b.getByTestId('profile').first()).toBeAttached({ timeout: 30_000 });
  await b.close();

  b = await cb.newPage();
  await b.goto(relay.url);
  await expectExactlyOnce(b, EVENTS);
});
