/**
 * Code integrity (issue 25): every machine checks the code it was served against the build's
 * release manifest (`dist/release.json`, written by `npm run build`) and the mesh's signed
 * releases. An admin signs the release it runs; the joined machine then shows it as signed.
 * A host that serves files differing from the manifest is named on the page, and its service
 * worker never installs (it caches only files the manifest names with their hash).
 */
import { cpSync, mkdtempSync, appendFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Page } from '@playwright/test';
import { expect, freePort, pair, RelayProcess, test, view } from './relay-process.ts';

/** What became of the page's service worker: `activated`, `redundant` (its install failed) or `none`. */
function serviceWorker(page: Page): Promise<string> {
  return page.evaluate(async () => {
    const reg = await navigator.serviceWorker.getRegistration();
    if (reg?.active) return 'activated';
    const worker = reg?.installing ?? reg?.waiting;
    if (!worker) return 'none';
    return new Promise<string>((resolve) => {
      const settled = () => worker.state === 'activated' || worker.state === 'redundant';
      if (settled()) resolve(worker.state);
      worker.onstatechange = () => {
        if (settled()) resolve(worker.state);
      };
    });
  });
}

test('an admin signs the release it runs; another machine shows it signed; altered files are named', async ({
  browser,
  relay,
}) => {
  const [ca, cb] = [await browser.newContext(), await browser.newContext()];
  const [a, b] = [await ca.newPage(), await cb.newPage()];
  await pair(relay, a, b);
  await view(a, 'machines');
  const card = a.getByTestId('code-release');
  await expect(card).toHaveAttribute('data-state', 'unsigned');
  await expect(card.getByTestId('code-status')).toContainText('this mesh has not signed this release');
  await card.getByTestId('sign-release').click();
  await expect(card).toHaveAttribute('data-state', 'signed');
  await expect(card.getByTestId('code-status')).toContainText('signed by this mesh, by workstation');

  // The collector, a member and no admin, sees the same release signed and offers no signing.
  await view(b, 'machines');
  await expect(b.getByTestId('code-release')).toHaveAttribute('data-state', 'signed');
  await expect(b.getByTestId('sign-release')).toHaveCount(0);
  expect(await serviceWorker(b)).toBe('activated');

  // A host serving the same manifest with one file changed.
  const altered = mkdtempSync(join(tmpdir(), 'sov-altered-'));
  cpSync('dist', altered, { recursive: true });
  appendFileSync(join(altered, 'icons', 'icon.svg'), '<!-- altered -->');
  const host = new RelayProcess(await freePort(), undefined, { args: ['--static', altered] });
  await host.start();
  try {
    const c = await (await browser.newContext()).newPage();
    await c.goto(host.url);
    await c.getByTestId('create-mesh').click();
    await expect(c.getByTestId('relay-state')).toHaveText('ready');
    await view(c, 'machines');
    await expect(c.getByTestId('code-release')).toHaveAttribute('data-state', 'differs');
    await expect(c.getByTestId('code-status')).toContainText('/icons/icon.svg');
    await expect(c.getByTestId('sign-release')).toHaveCount(0);
    // Its service worker never caches the altered file: the install fails, nothing takes over.
    await expect.poll(() => serviceWorker(c)).toMatch(/^(redundant|none)$/);
  } finally {
    await host.stop();
  }
});
