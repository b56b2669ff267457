/**
 * A table of real size: ROWS device profiles written through the app's own write path
 * (pages opened with `?automation`, src/app/automation.ts), while the reader is away.
 * The reader comes back and catches up with its page responsive throughout; the list
 * scrolls to its last row; the filter box narrows it; a peer's edit reaches its screen.
 * Timings are the benchmark's business (`npm run bench -- catchup-browser`); here each
 * wait is a barrier on what the page shows, and the measured times are reported.
 */
import type { Page } from '@playwright/test';
import type { Automation } from '../../src/app/automation.ts';
import { expect, pair, test } from './relay-process.ts';

const ROWS = Number(process.env['SOV_E2E_ROWS'] ?? 100_000);
const IN_FLIGHT = 16;
const CHUNK = 2_000;

declare global {
  var sovAutomation: Automation | undefined;
}

const rowId = (i: number): string => `p${String(i).padStart(6, '0')}`;

async function writeProfiles(page: Page, count: number): Promise<void> {
  for (let from = 0; from < count; from += CHUNK) {
    await page.evaluate(
      async ({ from, to, inFlight }) => {
        const automation = globalThis.sovAutomation!;
        let next = from;
        const worker = async () => {
          while (next < to) {
            const i = next++;
            const id = `p${String(i).padStart(6, '0')}`;
            const saved = await automation.saveProfile(id, { name: `Pump ${id}`, location: `shed ${i % 50}` });
            if (!saved) throw new Error(`save ${i} failed: ${automation.error()}`);
          }
        };
        await Promise.all(Array.from({ length: inFlight }, worker));
      },
      { from, to: Math.min(count, from + CHUNK), inFlight: IN_FLIGHT },
    );
  }
}

/** The longest main-thread task seen since the page loaded (PerformanceObserver `longtask`). */
async function longestTask(page: Page): Promise<number> {
  return page.evaluate(() => Math.max(0, ...((globalThis as { sovLongTasks?: number[] }).sovLongTasks ?? [])));
}

test('a table of 100,000 profiles: catch-up keeps the page responsive, the list scrolls to its end, a peer edit shows', async ({
  browser,
  relay,
}) => {
  // Generous on purpose: this test proves the behaviour at size, the bench measures the speed.
  // On the 2-core CI machine a 100,000-event catch-up here has taken from 9 to over 17 minutes.
  test.setTimeout(Math.max(180_000, ROWS * 24));
  const [ca, cb] = [await browser.newContext(), await browser.newContext()];
  await cb.addInitScript(() => {
    // Long tasks, and the longest gap between two animation frames: how long the page could not answer.
    const tasks: number[] = [];
    const probe = { sovLongTasks: tasks, sovLongestFrameGap: 0 };
    Object.assign(globalThis, probe);
    new PerformanceObserver((list) => {
      for (const entry of list.getEntries()) tasks.push(entry.duration);
    }).observe({ type: 'longtask', buffered: true });
    let last = performance.now();
    const frame = (now: number) => {
      (globalThis as { sovLongestFrameGap?: number }).sovLongestFrameGap = Math.max(
        (globalThis as { sovLongestFrameGap?: number }).sovLongestFrameGap ?? 0,
        now - last,
      );
      last = now;
      requestAnimationFrame(frame);
    };
    requestAnimationFrame(frame);
  });
  const [a, b] = [await ca.newPage(), await cb.newPage()];
  await pair(relay, a, b, '/?automation');
  await cb.setOffline(true);
  await expect(b.getByTestId('relay-state')).toHaveText('offline');

  await writeProfiles(a, ROWS);
  await expect(a.getByTestId('profile-count')).toHaveText(`${ROWS} profiles`, { timeout: 60_000 });

  // Back online: it catches up while the page keeps drawing frames.
  await b.evaluate(() => Object.assign(globalThis, { sovLongestFrameGap: 0, sovLongTasks: [] }));
  await cb.setOffline(false);
  await expect(b.getByTestId('profile-count')).toHaveText(`${ROWS} profiles`, { timeout: ROWS * 18 });
  const gap = await b.evaluate(() => (globalThis as { sovLongestFrameGap?: number }).sovLongestFrameGap ?? 0);
  test
    .info()
    .annotations.push(
      { type: 'longest gap between frames during catch-up (ms)', description: String(Math.round(gap)) },
      { type: 'longest main-thread task (ms)', description: String(await longestTask(b)) },
    );

  // The list scrolls to its last row.
  const scroller = b.getByTestId('profile-scroller');
  await scroller.evaluate((el) => el.scrollTo({ top: el.scrollHeight }));
  await expect(b.locator(`[data-testid="profile"][data-row="${rowId(ROWS - 1)}"]`)).toBeVisible();

  // The filter box narrows it to what matches.
  await b.getByTestId('profile-filter').fill(rowId(ROWS - 7));
  await expect(b.getByTestId('profile-count')).toHaveText(`1 of ${ROWS} profiles match`);
  await expect(b.getByTestId('profile')).toHaveCount(1);
  await b.getByTestId('profile-filter').fill('');

  // A peer's edit of the row shown first reaches the screen — once B's mailbox is drained. The
  // count shows every row before B has worked through the copies A sent again while B caught up
  // (unacknowledged batches are re-sent every 15 s: issue 21), and a new edit queues behind them;
  // on the loaded CI machine that took over 20 s once. What the edit costs when nothing is queued
  // is what this step shows (the bench measures it: catchup-browser `peer_edit_visible_ms`).
  const badge = b.getByTestId('fingerprint');
  const [topic, endpointB] = [(await badge.getAttribute('data-topic'))!, (await badge.getAttribute('data-endpoint'))!];
  await expect
    .poll(async () => (await relay.presence(topic, endpointB)).pending, { timeout: 10 * 60_000, intervals: [1_000] })
    .toBe(0);
  // (Read once the list shows the top again: right after the scroll it may still show the end.)
  const first = b.getByTestId('profile').first();
  await scroller.evaluate((el) => el.scrollTo({ top: 0 }));
  await expect(first).toHaveAttribute('data-row', rowId(0));
  const row = rowId(0);
  const sent = Date.now();
  await a.evaluate((id) => globalThis.sovAutomation!.saveProfile(id, { notes: 'seen at once' }), row);
  await expect(b.locator(`[data-testid="profile"][data-row="${row}"] [data-testid="value-notes"]`)).toHaveText(
    'seen at once',
  );
  test.info().annotations.push({ type: 'peer edit on screen (ms)', description: String(Date.now() - sent) });
});
