/** Browser entry point: mounts the UI, starts the machine, registers the service worker. */
import { mount } from 'svelte';
import App from './App.svelte';
import { NodeStore } from './node.svelte.ts';
import './app.css';

const store = new NodeStore();
mount(App, { target: document.getElementById('app')!, props: { store } });
void store.start();
if (new URLSearchParams(location.search).has('automation')) {
  void import('./automation.ts').then(({ exposeAutomation }) => exposeAutomation(store));
}

/** How often an open tab asks whether a new version of the app was deployed. */
const UPDATE_CHECK_MS = 60 * 60_000;

if ('serviceWorker' in navigator && import.meta.env.PROD) {
  void import('workbox-window').then(({ Workbox }) => {
    const wb = new Workbox('/sw.js');
    // A new service worker takes over at once (skipWaiting, clients.claim). The first one to
    // control this tab only installed the code the tab already runs; any later one brings a
    // new version while the tab still runs the old, so the tab says so and reloads when its
    // person chooses.
    let controlled = navigator.serviceWorker.controller !== null;
    navigator.serviceWorker.addEventListener('controllerchange', () => {
      if (controlled) store.updateReady = true;
      controlled = true;
    });
    void wb.register();
    const check = (): void => void wb.update().catch(() => undefined);
    setInterval(check, UPDATE_CHECK_MS);
    addEventListener('online', check);
    addEventListener('visibilitychange', () => {
      if (document.visibilityState === 'visible') check();
    });
  });
}
