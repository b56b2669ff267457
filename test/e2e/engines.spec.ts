/**
 * Every browser: the core flows in Firefox ESR and WebKitGTK (Safari's engine), each
 * against the real relay and, where two machines are needed, a Chromium machine as the
 * peer — so each engine is proven both alone and against another engine:
 *   the first screen (under LANG=C.UTF-8, whose `C` locale WebKit reports as a language tag);
 *   founding a mesh that Chromium joins, and joining one Chromium founded, with profile edits
 *   both ways; a sample object, an hourly query and its chart; a reload with the relay down,
 *   served by the service worker; a pairing ticket read by the QR scanner from a fake camera; a
 *   mesh restored from the recovery kit a Chromium admin made (the kit pasted as text); rows
 *   deleted from a query result and the table compacted.
 * Browsers come from Debian's packages (scripts/ensure-browsers.sh), never downloaded.
 */
import type { Browser, Page } from '@playwright/test';
import { chromiumMachine } from './engines/chromium.ts';
import {
  expectCount,
  expectText,
  expectValue,
  inspect,
  selectOption,
  tid,
  waitFor,
  type EngineName,
  type EnginePage,
} from './engines/engine-page.ts';
import { launchEngine } from './engines/launch.ts';
import { samples } from './object-steps.ts';
import { expect, test, type RelayProcess } from './relay-process.ts';

const profileCard = (name: string): string => `[data-testid="profile"][data-name="${name}"]`;

/** Opens one of the app's views through its navigation and waits until it is shown. */
async function showView(m: EnginePage, id: string): Promise<void> {
  await m.click(tid(`nav-${id}`));
  await expectCount(m, `main[data-view="${id}"]`, 1);
}

async function foundMesh(relay: RelayProcess, m: EnginePage, name: string): Promise<string> {
  await m.goto(relay.url);
  await m.fill(tid('machine-name'), name);
  await m.click(tid('create-mesh'));
  await expectText(m, tid('relay-state'), 'ready');
  await showView(m, 'machines');
  await m.click(tid('invite'));
  return expectValue(m, tid('ticket'), /^sov1\./);
}

/** `joiner` asks to join with `ticket` (typed or already scanned into the field). */
async function askToJoin(relay: RelayProcess, joiner: EnginePage, name: string, ticket?: string): Promise<void> {
  if (ticket !== undefined) {
    await joiner.goto(relay.url);
    await joiner.fill(tid('machine-name'), name);
    await joiner.fill(tid('ticket-input'), ticket);
  }
  await joiner.click(tid('join-mesh'));
}

/** Both people compare the pairing code and confirm it; then the joiner is a member. */
async function confirmPairing(inviter: EnginePage, joiner: EnginePage): Promise<void> {
  const code = await expectText(inviter, tid('pairing-sas'), /^\d{3} \d{3}$/);
  await expectText(joiner, tid('join-sas'), code);
  await joiner.click(tid('join-confirm'));
  await inviter.click(tid('pairing-confirm'));
  await expectCount(joiner, tid('new-profile-name'), 1);
  await expectText(joiner, tid('relay-state'), 'ready');
  for (const m of [inviter, joiner]) {
    await showView(m, 'machines');
    await expectCount(m, tid('machine'), 2);
    await showView(m, 'profiles');
  }
}

async function addProfile(m: EnginePage, name: string, location: string): Promise<void> {
  await showView(m, 'profiles');
  await m.fill(tid('new-profile-name'), name);
  await m.fill(tid('new-profile-location'), location);
  await m.click(tid('add-profile'));
  await expectText(m, `${profileCard(name)} ${tid('value-location')}`, location);
}

async function editProfile(m: EnginePage, name: string, field: string, value: string): Promise<void> {
  const card = profileCard(name);
  await m.click(`${card} ${tid('edit-profile')}`);
  await m.fill(`${card} ${tid(`edit-${field}`)}`, value);
  await m.click(`${card} ${tid('save-profile')}`);
  await expectText(m, `${card} ${tid(`value-${field}`)}`, value);
}

/** An edit made on each side appears on the other. */
async function editsTravelBothWays(a: EnginePage, b: EnginePage): Promise<void> {
  await addProfile(a, 'Pump 1', 'north shed');
  await expectText(b, `${profileCard('Pump 1')} ${tid('value-location')}`, 'north shed');
  await editProfile(b, 'Pump 1', 'notes', `filter changed in ${b.engine}`);
  await expectText(a, `${profileCard('Pump 1')} ${tid('value-notes')}`, `filter changed in ${b.engine}`);
  await editProfile(a, 'Pump 1', 'schedule', `hourly from ${a.engine}`);
  await expectText(b, `${profileCard('Pump 1')} ${tid('value-schedule')}`, `hourly from ${a.engine}`);
}

async function noErrorShown(m: EnginePage): Promise<void> {
  const shown = await inspect(m, `${tid('error')}, ${tid('panel-error')}, ${tid('chart-error')}`);
  expect(shown.text, `${m.engine} shows an error`).toBeNull();
}

/**
 * Neither Firefox nor WebKit has Background Sync: the Sync panel says the mailbox is
 * fetched only while a page is open, and a page becoming visible has the service worker
 * fetch it (the answer it posts back is the proof the fetch ran).
 */
async function syncsWhilePageOpen(m: EnginePage): Promise<void> {
  await showView(m, 'sync');
  await expectCount(m, `${tid('background-sync')}[data-support="page-open"]`, 1);
  await m.evaluate(() => {
    const seen: unknown[] = [];
    (window as { sovBatches?: unknown[] }).sovBatches = seen;
    navigator.serviceWorker.addEventListener('message', (event: MessageEvent<{ t?: string; result?: unknown }>) => {
      if (event.data.t === 'sov-batch-done') seen.push(event.data.result);
    });
    document.dispatchEvent(new Event('visibilitychange'));
  }, undefined);
  const batches = await waitFor(
    `${m.engine}: the service worker's answer to a mailbox fetch`,
    () => m.evaluate(() => (window as { sovBatches?: { ok?: boolean }[] }).sovBatches ?? [], undefined),
    (seen) => seen.length > 0,
  );
  expect(batches[0]?.ok, JSON.stringify(batches[0])).toBe(true);
}

/** Draws the picture (PNG bytes) on a canvas in `m` and makes that canvas's stream the page's camera. */
async function fakeCamera(m: EnginePage, png: Buffer): Promise<void> {
  await m.evaluate(async (base64) => {
    const bytes = Uint8Array.from(atob(base64), (c) => c.charCodeAt(0));
    const picture = await createImageBitmap(new Blob([bytes], { type: 'image/png' }));
    const canvas = document.createElement('canvas');
    [canvas.width, canvas.height] = [640, 480];
    const context = canvas.getContext('2d')!;
    const side = Math.min(canvas.width, canvas.height) * 0.9;
    const draw = (): void => {
      context.fillStyle = '#fff';
      context.fillRect(0, 0, canvas.width, canvas.height);
      context.imageSmoothingEnabled = false;
      context.drawImage(picture, (canvas.width - side) / 2, (canvas.height - side) / 2, side, side);
    };
    draw();
    // A canvas stream delivers a frame when the canvas is drawn: keep drawing, as a camera keeps sending.
    setInterval(draw, 100);
    const camera = { getUserMedia: async () => canvas.captureStream(10) };
    Object.defineProperty(navigator, 'mediaDevices', { value: camera, configurable: true });
  }, png.toString('base64'));
}

test('chromium shows its first screen under LANG=C.UTF-8', async ({ browser, relay }) => {
  const { machine } = await chromiumMachine(browser);
  await machine.goto(relay.url);
  await expectCount(machine, tid('create-mesh'), 1);
  await noErrorShown(machine);
  await machine.close();
});

const ENGINES: readonly Exclude<EngineName, 'chromium'>[] = ['firefox', 'webkit'];

for (const engine of ENGINES) {
  test.describe(engine, () => {
    let opened: EnginePage[] = [];
    const open = async (): Promise<EnginePage> => {
      const page = await launchEngine(engine);
      opened.push(page);
      return page;
    };
    /** The Chromium machine a test pairs with; its page is reported with the others on failure. */
    const peer = async (browser: Browser): Promise<{ page: Page; machine: EnginePage }> => {
      const machine = await chromiumMachine(browser);
      opened.push(machine.machine);
      return machine;
    };
    // eslint-disable-next-line no-empty-pattern -- Playwright needs the fixtures parameter to reach testInfo.
    test.afterEach(async ({}, testInfo) => {
      if (testInfo.status !== testInfo.expectedStatus) {
        // What each page showed when the test failed (this engine's and Chromium's): its text and the relay state's detail.
        for (const [i, page] of opened.entries()) {
          const shown = await page
            .evaluate(
              () =>
                `${document.querySelector('[data-testid="relay-state"]')?.getAttribute('title') ?? ''}\n${document.body.innerText}`,
              undefined,
            )
            .catch((e: unknown) => `(page unreadable: ${String(e)})`);
          await testInfo.attach(`${page.engine}-page-${i}.txt`, { body: shown, contentType: 'text/plain' });
          console.log(`── ${page.engine} page ${i} at failure:\n${shown.slice(0, 3000)}`);
        }
      }
      await Promise.allSettled(opened.map((page) => page.close()));
      opened = [];
    });

    test('shows its first screen under LANG=C.UTF-8', async ({ relay }) => {
      const m = await open();
      await m.goto(relay.url);
      await expectCount(m, tid('create-mesh'), 1);
      await expectCount(m, tid('machine-name'), 1);
      await noErrorShown(m);
    });

    test('founds a mesh that a Chromium machine joins; edits travel both ways', async ({ browser, relay }) => {
      const founder = await open();
      const { machine: joiner } = await peer(browser);
      const ticket = await foundMesh(relay, founder, `${engine} workstation`);
      await askToJoin(relay, joiner, 'chromium collector', ticket);
      await confirmPairing(founder, joiner);
      await editsTravelBothWays(founder, joiner);
      await syncsWhilePageOpen(founder);
      await noErrorShown(founder);
    });

    test('joins a mesh a Chromium machine founded; edits travel both ways', async ({ browser, relay }) => {
      const { machine: founder } = await peer(browser);
      const joiner = await open();
      const ticket = await foundMesh(relay, founder, 'chromium workstation');
      await askToJoin(relay, joiner, `${engine} collector`, ticket);
      await confirmPairing(founder, joiner);
      await editsTravelBothWays(joiner, founder);
      await noErrorShown(joiner);
    });

    test('restores a mesh a Chromium admin made a recovery kit of, and answers its query', async ({
      browser,
      relay,
    }) => {
      const { page: admin, machine: adminMachine } = await peer(browser);
      await foundMesh(relay, adminMachine, 'chromium workstation');
      await samples(admin, 'GENERAL', 'readings', 2);
      await expectCount(adminMachine, `${tid('object')}[data-state="published"]`, 2, 60_000);
      await showView(adminMachine, 'machines');
      await adminMachine.click(tid('recovery-make'));
      const code = await expectText(adminMachine, tid('recovery-code'), /^[0-9A-Z]{4}(-[0-9A-Z]{4}){6}$/);
      const kit = await expectValue(adminMachine, tid('recovery-text'), /^[A-Za-z0-9_-]{200,}$/);
      await expectCount(adminMachine, tid('recovery-last'), 1);

      const m = await open();
      await m.goto(relay.url);
      await m.fill(tid('restore-text'), kit);
      await m.fill(tid('restore-code'), code);
      await m.click(tid('restore-start'));
      await expectText(m, tid('relay-state'), 'ready', 90_000);
      await showView(m, 'query');
      await m.fill(tid('query-sql'), 'SELECT count(*) AS n FROM readings');
      await m.click(tid('query-run'));
      await expectText(m, tid('query-row'), '10', 60_000);
      await noErrorShown(m);
    });

    test('deletes picked rows of a query result and compacts the table: the same answer after', async ({ relay }) => {
      const m = await open();
      await foundMesh(relay, m, `${engine} workstation`);
      await showView(m, 'objects');
      await m.fill(tid('object-table'), 'readings');
      await m.fill(tid('sample-rows'), '5');
      for (let i = 1; i <= 3; i++) {
        await m.click(tid('object-sample'));
        await expectCount(m, `${tid('object')}[data-state="published"]`, i, 60_000);
      }
      await showView(m, 'query');
      await m.fill(tid('query-sql'), 'SELECT device, time FROM readings ORDER BY time');
      await m.click(tid('query-run'));
      await m.click(tid('query-allow-deletes'));
      await expectCount(m, tid('query-delete'), 1);
      for (const n of [1, 2]) await m.click(`input[aria-label="Pick row ${n}"]`);
      await expectCount(m, `${tid('query-delete')}[data-picked="2"]`, 1);
      await m.click(tid('query-delete'));
      await expectText(m, tid('query-deleted'), /Deleted 2 rows of readings/);
      await expectCount(m, `${tid('query-results')}[data-rows="13"]`, 1, 60_000);
      await showView(m, 'objects');
      await m.fill(tid('object-table'), 'readings');
      await m.click(tid('objects-compact'));
      await expectText(m, tid('compact-result'), /^Compacted 3 objects \(13 rows, 2 deleted rows left out\)/, 60_000);
      await showView(m, 'query');
      await m.fill(tid('query-sql'), 'SELECT count(*) AS n FROM readings');
      await m.click(tid('query-run'));
      await expectText(m, tid('query-row'), '13', 60_000);
      await noErrorShown(m);
    });

    test('turns a sample into an object, queries it hourly and draws the chart', async ({ relay }) => {
      const m = await open();
      await foundMesh(relay, m, `${engine} workstation`);
      await showView(m, 'objects');
      // The reference zstd, built to WebAssembly, starts in this engine's worker.
      await expectText(m, tid('object-compression'), 'Objects formed here: ZSTD pages.');
      await m.fill(tid('sample-rows'), '600');
      await m.click(tid('object-sample'));
      await expectCount(m, '[data-testid="object"][data-state="published"]', 1, 60_000);
      await showView(m, 'query');
      await selectOption(m, tid('query-fn'), 'avg');
      await selectOption(m, tid('query-measure'), 'temperature');
      await selectOption(m, tid('query-bucket'), '1 hour');
      await m.click(tid('query-build'));
      await expectValue(
        m,
        tid('query-sql'),
        /^SELECT time_bucket\(INTERVAL '1 hour', time\) AS bucket, avg\(temperature\)/,
      );
      await m.click(tid('query-run'));
      await expectCount(m, tid('query-explain'), 1);
      await expectCount(m, `${tid('query-chart')} canvas`, 1);
      const rows = await m.evaluate(
        (sel) => Number(document.querySelector(sel)?.getAttribute('data-rows')),
        tid('query-results'),
      );
      expect(rows).toBeGreaterThan(0);
      await noErrorShown(m);
    });

    test('reloads from its service worker while the relay is down', async ({ relay }) => {
      const m = await open();
      await foundMesh(relay, m, `${engine} workstation`);
      await addProfile(m, 'Pump 1', 'north shed');
      // Once the service worker is active, a reload is a navigation it controls.
      await m.evaluate(async () => {
        await navigator.serviceWorker.ready;
      }, undefined);
      await m.reload();
      await waitFor(
        `${engine}: the service worker controls the page`,
        () => m.evaluate(() => navigator.serviceWorker.controller !== null, undefined),
        (controlled) => controlled,
      );
      await relay.stop();
      await m.reload();
      await expectText(m, `${profileCard('Pump 1')} ${tid('value-location')}`, 'north shed');
      await expectText(m, tid('relay-state'), /^(offline|connecting)$/);
      await relay.start();
      await expectText(m, tid('relay-state'), 'ready', 60_000);
      await noErrorShown(m);
    });

    test('reads a pairing ticket through a fake camera and joins', async ({ browser, relay }) => {
      const { page: founderPage, machine: founder } = await peer(browser);
      const ticket = await foundMesh(relay, founder, 'chromium workstation');
      const png = await founderPage.getByTestId('qr-code').screenshot({ animations: 'disabled' });
      const joiner = await open();
      await joiner.goto(relay.url);
      await joiner.fill(tid('machine-name'), `${engine} collector`);
      await fakeCamera(joiner, png);
      await joiner.click(tid('scan-ticket'));
      await expectValue(joiner, tid('ticket-input'), ticket, 60_000);
      await askToJoin(relay, joiner, `${engine} collector`);
      await confirmPairing(founder, joiner);
    });
  });
}
