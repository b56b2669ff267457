/**
 * The real relay (src/relay/server.ts) on its own worker thread, for benchmarks
 * whose peers run on the main thread: a relay is another machine in production,
 * so its work (SQLite mailboxes, WebSocket framing) must not be billed to the
 * peer it serves. It enforces admission lists, as `sov relay` does (the
 * default of startRelay): a group's admin pushes its list first
 * (bench/lib/admission.ts). Options are plain data (no functions cross a thread).
 */
import { Worker } from 'node:worker_threads';
import type { MailboxLimits } from '../../src/core/mailbox.js';

export type RelayThreadOptions = { readonly dataDir: string; readonly mailboxLimits?: MailboxLimits };

export type RelayThread = { readonly url: string; readonly wsUrl: string; close(): Promise<void> };

/** Runs inside the worker: starts the relay, reports its addresses, closes it on request. */
const WORKER_MAIN = `
  const { parentPort, workerData } = await import('node:worker_threads');
  const { register } = await import(workerData.tsx);
  register();
  const { startRelay } = await import(workerData.server);
  const relay = await startRelay({ port: 0, log: () => undefined, heartbeatMs: 0, ...workerData.options });
  parentPort.on('message', async () => { await relay.close(); parentPort.postMessage({ closed: true }); });
  parentPort.postMessage({ url: relay.url, wsUrl: relay.wsUrl });
`;

export async function startRelayThread(options: RelayThreadOptions): Promise<RelayThread> {
  const worker = new Worker(`(async () => {${WORKER_MAIN}})()`, {
    eval: true,
    workerData: {
      tsx: import.meta.resolve('tsx/esm/api'),
      server: new URL('../../src/relay/server.ts', import.meta.url).href,
      options,
    },
  });
  const failed = new Promise<never>((_, reject) => worker.once('error', reject));
  const started = new Promise<{ url: string; wsUrl: string }>((resolve) => worker.once('message', resolve));
  const { url, wsUrl } = await Promise.race([started, failed]);
  return {
    url,
    wsUrl,
    async close() {
      const closed = new Promise((resolve) => worker.once('message', resolve));
      worker.postMessage('close');
      await Promise.race([closed, failed]);
      await worker.terminate();
    },
  };
}
