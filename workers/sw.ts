/**
 * Service worker: precaches the built app (workbox) so a reload with no
 * network opens the app and its local data; navigations fall back to the
 * cached shell. Relay traffic (/ws, /api) is never cached. Only files the
 * release manifest names with their exact SHA-256 are cached; anything else
 * fails the install (src/runtime/release-gate.ts).
 *
 * Background sync of the state plane: on the Background Sync tag 'sov-batch', or on a
 * `{t: 'sov-batch'}` message from a page (browsers without Background Sync: the page posts
 * it on `online` and at start), run the batch cycle's fetch half — relay mailbox over HTTP
 * into the IndexedDB inbox, acked after commit (src/runtime/batch-fetch.ts). Runs are
 * serialised under the Web Lock 'sov-batch'. Applying the inbox is the page's job (under
 * 'sov-apply'); open pages get `{t: 'sov-inbox', fetched}` when frames arrived.
 */
/// <reference lib="webworker" />
import { addPlugins, cleanupOutdatedCaches, createHandlerBoundToURL, precacheAndRoute } from 'workbox-precaching';
import { NavigationRoute, registerRoute } from 'workbox-routing';
import { BATCH_SYNC_TAG, fetchIntoInbox, type BatchFetchError } from '../src/runtime/batch-fetch.js';
import { releaseGate } from '../src/runtime/release-gate.js';

/** Background Sync (not in TypeScript's WebWorker lib). */
interface SyncEvent extends ExtendableEvent {
  readonly tag: string;
  readonly lastChance: boolean;
}

declare const self: ServiceWorkerGlobalScope & { __WB_MANIFEST: Parameters<typeof precacheAndRoute>[0] };

addPlugins([releaseGate(self.registration.scope)]);
precacheAndRoute(self.__WB_MANIFEST);
cleanupOutdatedCaches();
registerRoute(new NavigationRoute(createHandlerBoundToURL('/index.html'), { denylist: [/^\/api\//, /^\/ws/] }));

self.addEventListener('install', () => void self.skipWaiting());
self.addEventListener('activate', (event) => event.waitUntil(self.clients.claim()));

/** Failures worth a Background Sync retry (the browser backs off); the rest would fail again. */
const retryable = (error: BatchFetchError): boolean =>
  error.type === 'Network' ||
  error.type === 'InboxWriteFailed' ||
  (error.type === 'HttpRefused' && error.status >= 429);

async function runBatch(): Promise<Awaited<ReturnType<typeof fetchIntoInbox>>> {
  const result = await self.navigator.locks.request(BATCH_SYNC_TAG, () => fetchIntoInbox());
  if (result.ok && result.value.fetched > 0) {
    for (const client of await self.clients.matchAll({ type: 'window' })) {
      client.postMessage({ t: 'sov-inbox', fetched: result.value.fetched });
    }
  }
  return result;
}

self.addEventListener('sync', (event: Event) => {
  const sync = event as SyncEvent;
  if (sync.tag !== BATCH_SYNC_TAG) return;
  sync.waitUntil(
    runBatch().then((result) => {
      // A rejected waitUntil tells the browser to retry the sync later.
      if (!result.ok && retryable(result.error)) throw new Error(`sov-batch: ${result.error.type}`);
    }),
  );
});

self.addEventListener('message', (event) => {
  const data: unknown = event.data;
  if (typeof data !== 'object' || data === null || (data as { t?: unknown }).t !== BATCH_SYNC_TAG) return;
  event.waitUntil(runBatch().then((result) => event.source?.postMessage({ t: 'sov-batch-done', result })));
});
