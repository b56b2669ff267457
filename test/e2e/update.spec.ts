/**
 * A new version deployed while a tab is open: the new service worker takes over, and the
 * tab — still running the code it loaded — says that an update is ready and reloads only
 * when its person chooses, naming a form with unsaved text first.
 *
 * The deploy is simulated by changing dist/sw.js on disk (the relay serves dist/ as it is
 * on each request) and asking the browser to check for an update; the file is put back
 * afterwards. Tests run one at a time (playwright.config.ts), so no other test sees it.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, foundMesh, test, view } from './relay-process.ts';

const SW = join(process.cwd(), 'dist', 'sw.js');

test('a deployed update is announced, and a form with unsaved text is named before reloading', async ({
  browser,
  relay,
}) => {
  const page = await (await browser.newContext()).newPage();
  await foundMesh(relay, page);
  await page.waitForFunction(() => navigator.serviceWorker.controller !== null);
  await expect(page.getByTestId('update-ready')).toHaveCount(0);

  const original = readFileSync(SW, 'utf8');
  try {
    writeFileSync(SW, `${original}\n// a new version, ${Date.now()}\n`);
    await page.evaluate(async () => {
      await (await navigator.serviceWorker.getRegistration())!.update();
    });
    await expect(page.getByTestId('update-ready')).toContainText('A new version of Sovereign Mesh is installed');

    // Text typed and not saved: the reload waits for a second, deliberate press.
    await view(page, 'profiles');
    await page.getByTestId('new-profile-name').fill('typed, not saved');
    await page.getByTestId('update-reload').click();
    await expect(page.getByTestId('update-unsaved')).toContainText('not saved yet');
    await expect(page.getByTestId('new-profile-name')).toHaveValue('typed, not saved');
    await page.getByTestId('update-reload-anyway').click();
    await expect(page.getByTestId('new-profile-name')).toHaveValue('');
    await expect(page.getByTestId('update-ready')).toHaveCount(0);
    await expect(page.getByTestId('relay-state')).toHaveText('ready');
  } finally {
    writeFileSync(SW, original);
  }
});
