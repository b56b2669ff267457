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

if ('serviceWorker' in navigator && import.meta.env.PROD) {
  void import('workbox-window').then(({ Workbox }) => new Workbox('/sw.js').register());
}
