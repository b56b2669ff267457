/**
 * What a machine needs of the platform it runs on, beyond its stores and workers: the
 * apply lock, coordination with other contexts of the same machine, network changes and
 * background sync. Browsers have Web Locks, BroadcastChannel, `online` events and a
 * service worker (`browserEnv`); a headless machine in Node is one process and has none
 * of them (`soloEnv`).
 */
import { BackgroundSync } from './background-sync.js';
import { TabSession } from './tab-session.js';
import { isRelayUrl } from '../core/ticket.js';

/** Coordination between the contexts (tabs) that share one machine's stores. */
export interface SessionPort {
  /** `lead` runs once this context holds the relay session for the machine. */
  requestLeadership(lead: () => void): void;
  announceChange(): void;
  /** Restarts every context of this machine (the machine left a group). */
  reloadAll(): void;
  close(): void;
}

/** The page's half of the service worker's batch cycle (background-sync.ts). */
export type BackgroundPort = Pick<BackgroundSync, 'request' | 'drain' | 'close'>;

export type MachineEnv = {
  /** Runs `fn` holding the machine's apply lock, so two contexts never apply at once. */
  readonly withLock: <T>(fn: () => Promise<T>) => Promise<T>;
  readonly session: (onChanged: () => void) => SessionPort;
  /** Calls back when the platform reports the network gone or back. */
  readonly onNetwork: (online: () => void, offline: () => void) => void;
  /** Background sync through the service worker, where there is one. */
  readonly background: ((topic: string, onInbox: () => void) => BackgroundPort) | undefined;
};

export const browserEnv: MachineEnv = {
  withLock: (fn) => navigator.locks.request('sov-apply', fn) as ReturnType<typeof fn>,
  session: (onChanged) => new TabSession(onChanged),
  onNetwork: (online, offline) => {
    addEventListener('online', online);
    addEventListener('offline', offline);
  },
  background: (topic, onInbox) => new BackgroundSync(topic, onInbox),
};

/** One process, one context: it leads at once; `restart` is what "reload every tab" means here. */
export function soloEnv(restart: () => void): MachineEnv {
  let queue: Promise<unknown> = Promise.resolve();
  return {
    withLock: <T>(fn: () => Promise<T>): Promise<T> => {
      const run = queue.then(fn, fn);
      queue = run.catch(() => undefined);
      return run;
    },
    session: () => ({
      requestLeadership: (lead) => queueMicrotask(lead),
      announceChange: () => undefined,
      reloadAll: restart,
      close: () => undefined,
    }),
    onNetwork: () => undefined,
    background: undefined,
  };
}

/** The relay that served the page, if it did (`sov relay` without --no-app). */
export function defaultRelayUrl(location: Location): string {
  return `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/ws`;
}

/**
 * The relay a browser founding a mesh proposes: the `relay` parameter of the page's address —
 * an operator's link to an app served apart from its relays, `?relay=wss://relay.example/ws`
 * — else the relay that served the page. The person may change it before founding; machines
 * that join take it from the pairing ticket.
 */
export function proposedRelayUrl(location: Location): string {
  const named = new URLSearchParams(location.search).get('relay');
  return named !== null && isRelayUrl(named) ? named : defaultRelayUrl(location);
}
