/**
 * A machine whose storage allowance runs out: an object import that does not fit is refused
 * with a message that says what happened, what was kept, how much is stored of what the
 * browser allows and how to free space; everything stored before stays, small changes still
 * save, and nothing is thrown uncaught. The Sync view shows what the site stores, of what the
 * browser allows, and whether persistent storage was granted.
 *
 * The limit is real: Firefox ESR with its quota manager's global limit set to 10 MiB
 * (`dom.quotaManager.temporaryStorage.fixedLimit`, a preference, read at start-up), so
 * IndexedDB itself refuses the write with a QuotaExceededError. Chromium offers no such
 * setting (DevTools' quota override left its estimate and its writes unchanged here), and a
 * Chromium profile on a small file system filled to the brim is no test of the app: Chromium
 * wiped the site's IndexedDB under it, persistent storage or not (docs/operations.md).
 */
import { expectCount, expectText, tid, type EnginePage } from './engines/engine-page.ts';
import { launchEngine } from './engines/launch.ts';
import { test } from './relay-process.ts';

const LIMIT_KIB = 10 * 1024;
const FULL = 'Storage on this device is full, so this change was not saved.';

/** Uncaught errors and rejections in the page from now on (read with `uncaught`). */
async function watchUncaught(m: EnginePage): Promise<void> {
  await m.evaluate(() => {
    const seen: string[] = [];
    (window as unknown as { uncaught: string[] }).uncaught = seen;
    addEventListener('error', (e) => seen.push(`error: ${e.message}`));
    addEventListener('unhandledrejection', (e) => seen.push(`rejection: ${String(e.reason)}`));
  }, undefined);
}

const uncaught = (m: EnginePage) => m.evaluate(() => (window as unknown as { uncaught: string[] }).uncaught, undefined);

test('a machine out of storage refuses an import plainly, keeps everything, and still saves small changes', async ({
  relay,
}) => {
  const m = await launchEngine('firefox', { 'dom.quotaManager.temporaryStorage.fixedLimit': LIMIT_KIB });
  try {
    await m.goto(relay.url);
    await m.fill(tid('machine-name'), 'field tablet');
    await m.click(tid('create-mesh'));
    await expectText(m, tid('relay-state'), 'ready');
    await watchUncaught(m);

    await m.click(tid('nav-sync'));
    await expectText(m, tid('storage-persistence'), 'persistent');
    await expectText(m, tid('storage-usage'), /used of 10\.0 MiB this browser allows/);

    await m.click(tid('nav-objects'));
    await m.fill(tid('sample-rows'), '1000');
    await m.click(tid('object-sample'));
    await expectCount(m, tid('object'), 1);
    await m.click(tid('nav-profiles'));
    await m.fill(tid('new-profile-name'), 'saved before');
    await m.click(tid('add-profile'));
    await expectCount(m, '[data-testid="profile"][data-name="saved before"]', 1);

    // About 12 MB of ciphertext: more than the whole allowance.
    await m.click(tid('nav-objects'));
    await m.fill(tid('sample-rows'), '2000000');
    await m.click(tid('object-sample'));
    const said = await expectText(m, tid('error'), new RegExp(FULL.replace(/[.,]/g, '\\$&')), 180_000);
    for (const part of [
      'Everything saved before is kept',
      'Free space on the device',
      'of the 10.0 MiB this browser allows it',
    ]) {
      if (!said.includes(part)) throw new Error(`the message does not say "${part}": ${said}`);
    }
    await expectCount(m, tid('import-progress'), 0);
    await expectCount(m, tid('object'), 1);

    // Small changes still fit; the message goes once a change is saved.
    await m.click(tid('nav-profiles'));
    await expectCount(m, '[data-testid="profile"][data-name="saved before"]', 1);
    await m.fill(tid('new-profile-name'), 'saved after');
    await m.click(tid('add-profile'));
    await expectCount(m, '[data-testid="profile"][data-name="saved after"]', 1);
    await expectCount(m, tid('error'), 0);
    const thrown = await uncaught(m);
    if (thrown.length > 0) throw new Error(`uncaught in the page: ${thrown.join('; ')}`);
  } finally {
    await m.close();
  }
});
