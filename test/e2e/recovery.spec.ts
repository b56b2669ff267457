/**
 * Disaster recovery in the browser (issue 24; seed 003 "Recovery"). An admin makes a recovery
 * kit on its Machines view: a code shown once, a file to save, and a checkpoint written at once.
 * A fresh browser with only the kit, the code and the relay restores the mesh and answers the
 * admin's query. A wrong code changes nothing; a relay that lost the checkpoint leaves the
 * fresh browser recovering, naming the checkpoint as what is missing.
 */
import { readFileSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from '@playwright/test';
import { expect, foundMesh, test, view } from './relay-process.ts';
import { count, samples } from './object-steps.ts';

async function restoreWith(page: Page, url: string, kit: string, code: string): Promise<void> {
  await page.goto(url);
  await page.getByTestId('restore-file').setInputFiles(kit);
  await page.getByTestId('restore-code').fill(code);
  await page.getByTestId('restore-start').click();
}

test('a fresh browser restores a mesh from its recovery kit, and names what is missing', async ({
  browser,
  relay,
}, testInfo) => {
  test.setTimeout(240_000);
  const admin = await (await browser.newContext()).newPage();
  await foundMesh(relay, admin);
  await samples(admin, 'GENERAL', 'readings', 3);
  await expect(admin.locator('[data-testid="object"][data-state="published"]')).toHaveCount(3, { timeout: 60_000 });
  await view(admin, 'query');
  expect(await count(admin, 'readings')).toBe('15');

  await view(admin, 'machines');
  await admin.getByTestId('recovery-make').click();
  const code = (await admin.getByTestId('recovery-code').textContent())!.trim();
  expect(code).toMatch(/^[0-9A-Z]{4}(-[0-9A-Z]{4}){6}$/);
  const [download] = await Promise.all([admin.waitForEvent('download'), admin.getByTestId('recovery-save').click()]);
  const kit = testInfo.outputPath('mesh.sovkit');
  await download.saveAs(kit);
  expect(readFileSync(kit).length).toBeGreaterThan(200);
  await expect(admin.getByTestId('recovery-last')).toBeVisible({ timeout: 30_000 });
  await expect(admin.getByTestId('recovery-badge')).toHaveCount(1);
  await admin.getByTestId('recovery-hide').click();
  await expect(admin.getByTestId('recovery-code')).toHaveCount(0);

  // A wrong code: said plainly, and the machine stays as new as it was.
  const fresh = await (await browser.newContext()).newPage();
  const wrong = code.replace(/^./, code.startsWith('2') ? '3' : '2');
  await restoreWith(fresh, relay.url, kit, wrong);
  await expect(fresh.getByTestId('error')).toContainText(/Not restored: the recovery code (is mistyped|does not open)/);
  await expect(fresh.getByTestId('create-mesh')).toBeVisible();

  await restoreWith(fresh, relay.url, kit, code.toLowerCase());
  await expect(fresh.getByTestId('relay-state')).toHaveText('ready', { timeout: 60_000 });
  await view(fresh, 'query');
  expect(await count(fresh, 'readings')).toBe('15');
  await view(fresh, 'machines');
  await expect(fresh.locator('[data-testid="machine"][data-name="workstation"]')).toBeVisible();

  // The relay restarts without the checkpoint: a restore says the checkpoint is missing.
  const checkpointId = await admin.getByTestId('recovery-last').getAttribute('data-checkpoint');
  await relay.stop();
  const objects = join(relay.dataDir, 'objects');
  rmSync(join(objects, readdirSync(objects)[0]!, checkpointId!));
  await relay.start();
  const another = await (await browser.newContext()).newPage();
  await restoreWith(another, relay.url, kit, code);
  await expect(another.getByTestId('recovering')).toHaveAttribute('data-state', 'incomplete', { timeout: 60_000 });
  await expect(another.getByTestId('missing-part')).toHaveAttribute('data-part', 'checkpoint');
  await expect(another.getByTestId('missing-part')).toContainText('does not hold');
  await expect(another.getByTestId('new-profile-name')).toHaveCount(0);

  // A new checkpoint; then the relay restarts without one object: the ciphertext is what is missing.
  await expect(admin.getByTestId('relay-state')).toHaveText('ready', { timeout: 60_000 });
  await admin.getByTestId('recovery-checkpoint').click();
  await expect(admin.getByTestId('recovery-last')).not.toHaveAttribute('data-checkpoint', checkpointId!, {
    timeout: 30_000,
  });
  await view(admin, 'objects');
  const objectId = await admin
    .locator('[data-testid="object"][data-state="published"]')
    .first()
    .getAttribute('data-id');
  await relay.stop();
  rmSync(join(objects, readdirSync(objects)[0]!, objectId!));
  await relay.start();
  await another.getByTestId('recovery-retry').click();
  await expect(another.getByTestId('missing-part')).toHaveAttribute('data-part', 'ciphertext', { timeout: 60_000 });
  await expect(another.getByTestId('missing-part')).toContainText('1 of 3 objects');
});
