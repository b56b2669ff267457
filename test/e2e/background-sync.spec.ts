/**
 * Background sync through the service worker, with no page of the machine open: B pairs,
 * every page of B closes, A's change is stored by the relay for B, and the DevTools
 * protocol fires B's service-worker `sync` event (offline emulation never fires it). The
 * worker fetches B's mailbox over HTTP into the IndexedDB inbox and acks it, so the relay's
 * mailbox for B drains while B has no page; the next open applies the frames from the
 * inbox and empties it.
 */
import type { BrowserContext, CDPSession, Page } from '@playwright/test';
import { expect, pair, profile, RELAY_SEES_DISCONNECT, test } from './relay-process.ts';

async function identity(page: Page): Promise<{ endpoint: string; topic: string }> {
  const badge = page.getByTestId('fingerprint');
  await expect(badge).toHaveAttribute('data-topic', /^[0-9a-f]{64}$/);
  return { endpoint: (await badge.getAttribute('data-endpoint'))!, topic: (await badge.getAttribute('data-topic'))! };
}

type Registration = { registrationId: string; scopeURL: string; isDeleted: boolean };

/** The DevTools ServiceWorker domain of `context`, seen from a page of another origin. */
async function serviceWorkerDevTools(context: BrowserContext, scope: string) {
  const page = await context.newPage();
  await page.goto('about:blank');
  const cdp: CDPSession = await context.newCDPSession(page);
  const registrations = new Map<string, Registration>();
  cdp.on('ServiceWorker.workerRegistrationUpdated', (event: { registrations: Registration[] }) => {
    for (const r of event.registrations) registrations.set(r.registrationId, r);
  });
  await cdp.send('ServiceWorker.enable');
  await expect.poll(() => [...registrations.values()].some((r) => r.scopeURL === scope && !r.isDeleted)).toBe(true);
  const registrationId = [...registrations.values()].find((r) => r.scopeURL === scope && !r.isDeleted)!.registrationId;
  return {
    page,
    dispatchSync: (origin: string, tag: string) =>
      cdp.send('ServiceWorker.dispatchSyncEvent', { origin, registrationId, tag, lastChance: false }),
  };
}

/** Frames in B's inbox, read with the raw IndexedDB API (no app code on the page). */
function inboxFrames(page: Page): Promise<{ from: string; size: number }[]> {
  return page.evaluate(
    () =>
      new Promise<{ from: string; size: number }[]>((resolve, reject) => {
        const open = indexedDB.open('sov-inbox');
        open.onerror = () => reject(new Error(String(open.error)));
        open.onsuccess = () => {
          const db = open.result;
          if (!db.objectStoreNames.contains('frames')) {
            db.close();
            return resolve([]);
          }
          const all = db.transaction('frames').objectStore('frames').getAll();
          all.onerror = () => reject(new Error(String(all.error)));
          all.onsuccess = () => {
            db.close();
            const hex = (b: Uint8Array) => [...b].map((x) => x.toString(16).padStart(2, '0')).join('');
            resolve(
              (all.result as { from: Uint8Array; body: Uint8Array }[]).map((f) => ({
                from: hex(f.from),
                size: f.body.length,
              })),
            );
          };
        };
      }),
  );
}

test('the service worker fetches a closed machine’s mailbox into its inbox on a sync event', async ({
  browser,
  relay,
}) => {
  const contextA = await browser.newContext();
  const contextB = await browser.newContext();
  const a = await contextA.newPage();
  const b = await contextB.newPage();
  await pair(relay, a, b);
  await b.evaluate(async () => {
    await navigator.serviceWorker.ready;
  });
  const { endpoint: endpointA } = await identity(a);
  const { endpoint: endpointB, topic } = await identity(b);

  // Every page of B closes; the relay sees B's session end.
  for (const page of contextB.pages()) await page.close();
  await expect.poll(async () => (await relay.presence(topic, endpointB)).online, RELAY_SEES_DISCONNECT).toBe(false);

  // A's change is stored by the relay for B; then A closes too, so nothing else arrives.
  await a.getByTestId('new-profile-name').fill('Well 3');
  await a.getByTestId('add-profile').click();
  await expect(profile(a, 'Well 3')).toBeVisible();
  await expect.poll(async () => (await relay.presence(topic, endpointB)).pending).toBeGreaterThan(0);
  await a.close();
  const stored = (await relay.presence(topic, endpointB)).pending;

  // The sync event, fired through DevTools; B's worker drains its mailbox with no B page open.
  const devtools = await serviceWorkerDevTools(contextB, `${relay.url}/`);
  await devtools.dispatchSync(relay.url, 'sov-batch');
  await expect.poll(async () => (await relay.presence(topic, endpointB)).pending).toBe(0);
  expect(contextB.pages().map((p) => p.url())).toEqual(['about:blank']);

  // The frames are in B's inbox (a same-origin page that runs no app code reads it) …
  const probe = await contextB.newPage();
  await probe.goto(`${relay.url}/api/health`);
  const frames = await inboxFrames(probe);
  expect(frames.length).toBe(stored);
  expect(frames.every((f) => f.from === endpointA && f.size > 0)).toBe(true);
  await probe.close();

  // … and the app, opened again, applies them from the inbox (the relay holds nothing for B
  // and A is closed, so the inbox is the only way the change can arrive) and empties it.
  const reopened = await contextB.newPage();
  await reopened.goto(relay.url);
  await expect(profile(reopened, 'Well 3')).toBeVisible();
  await expect.poll(async () => (await inboxFrames(reopened)).length).toBe(0);
  await devtools.page.close();
});
