/**
 * The page's side of the batch cycle over HTTP: ask the service worker to fetch
 * the relay mailbox into the IndexedDB inbox (Background Sync where the browser
 * has it, a message otherwise), and drain that inbox through the normal frame
 * path. Frames in the inbox were already acknowledged to the relay by the
 * service worker after its commit; a frame is removed from the inbox only after
 * it was handled, so a crash in between replays it — harmless, since applying is
 * idempotent (and each apply runs under the `sov-apply` lock).
 *
 * Only Chromium-based browsers have Background Sync, which lets the service worker
 * fetch while no page of the app is open. Firefox and Safari (WebKit) have none: there
 * the page asks the service worker to fetch when it opens, when the network returns,
 * when it becomes visible again and every PAGE_SYNC_INTERVAL_MS while it is open, so
 * these engines sync only while a page is open.
 */
import { toHex } from '../core/bytes.js';
import { InboxStore, inboxKey, type InboxFrame } from '../storage/inbox-store.js';

export const BATCH_TAG = 'sov-batch';
const DRAIN_BATCH = 64;
/** How often an open page asks for a mailbox fetch where the browser has no Background Sync. */
export const PAGE_SYNC_INTERVAL_MS = 30_000;

/** Whether this browser syncs with no page open (`background`) or only while one is (`page-open`). */
export type SyncSupport = 'background' | 'page-open' | 'none';

export function syncSupport(): SyncSupport {
  if (typeof navigator === 'undefined' || !('serviceWorker' in navigator)) return 'none';
  return 'SyncManager' in globalThis ? 'background' : 'page-open';
}

type SyncRegistration = ServiceWorkerRegistration & { sync?: { register(tag: string): Promise<void> } };

export class BackgroundSync {
  readonly #inbox = new InboxStore();
  readonly #topic: string;
  readonly #stop: (() => void)[] = [];

  constructor(topic: string, onInbox: () => void) {
    this.#topic = topic;
    if (!('serviceWorker' in navigator)) return;
    navigator.serviceWorker.addEventListener('message', (event: MessageEvent<{ t?: string }>) => {
      if (event.data.t === 'sov-inbox' || event.data.t === 'sov-batch-done') onInbox();
    });
    const visible = (): void => {
      if (document.visibilityState === 'visible') void this.request();
    };
    document.addEventListener('visibilitychange', visible);
    this.#stop.push(() => document.removeEventListener('visibilitychange', visible));
    if (syncSupport() === 'page-open') {
      const timer = setInterval(() => void this.request(), PAGE_SYNC_INTERVAL_MS);
      this.#stop.push(() => clearInterval(timer));
    }
  }

  /** Stops the page's own triggers (visibility, timer). */
  close(): void {
    for (const stop of this.#stop.splice(0)) stop();
  }

  /** Schedules a mailbox fetch by the service worker; resolves once it was asked. */
  async request(): Promise<void> {
    if (!('serviceWorker' in navigator)) return;
    const registration = (await navigator.serviceWorker.getRegistration()) as SyncRegistration | undefined;
    if (!registration) return;
    if (registration.sync) await registration.sync.register(BATCH_TAG).catch(() => undefined);
    else registration.active?.postMessage({ t: BATCH_TAG });
  }

  /** Hands every inbox frame of this mesh to `handle`, removing each once handled. */
  async drain(handle: (from: string, body: Uint8Array) => Promise<void>): Promise<number> {
    return navigator.locks.request('sov-inbox-drain', async () => {
      let handled = 0;
      for (;;) {
        const frames = await this.#inbox.list(DRAIN_BATCH);
        if (frames.length === 0) return handled;
        const done: InboxFrame[] = [];
        for (const frame of frames) {
          if (frame.topic === this.#topic) await handle(toHex(frame.from), frame.body);
          done.push(frame);
        }
        await this.#inbox.remove(done.map(inboxKey));
        handled += done.length;
      }
    });
  }
}
