/**
 * Opening envelopes on worker threads (Node): an `EnvelopeOpener` that splits
 * each batch into one contiguous share per worker, so decryption, decoding and
 * hashing — pure JavaScript (noble AES-GCM, BLAKE3, CBOR) — run on every core
 * while the main thread admits earlier batches. Results are plain data and come
 * back by structured clone (core/open.ts); order is the batch's order.
 *
 * The workers hold copies of the domain keys they are given, so this is for
 * headless Node peers whose keys live in the process anyway; browsers keep
 * domain keys inside their one crypto worker.
 */
import { Worker } from 'node:worker_threads';
import type { DomainName } from '../core/schema.js';
import type { EnvelopeOpener, Opening } from '../core/open.js';

export type PoolKey = { readonly domain: DomainName; readonly gen: number; readonly key: Uint8Array };

type Reply = { readonly id: number; readonly openings: Opening[] };

type Pending = { resolve: (openings: Opening[]) => void; reject: (e: Error) => void };

/**
 * The worker script next to this module. Run from TypeScript sources (under tsx), the
 * worker first registers tsx itself: loader flags in a worker's execArgv do not take in Node 20.
 */
function spawn(keys: readonly PoolKey[]): Worker {
  const workerData = { keys };
  if (!import.meta.url.endsWith('.ts'))
    return new Worker(new URL('./node-open-worker.js', import.meta.url), { workerData });
  const tsx = JSON.stringify(import.meta.resolve('tsx/esm/api'));
  const script = JSON.stringify(new URL('./node-open-worker.ts', import.meta.url).href);
  const boot = `import(${tsx}).then(({ register }) => { register(); return import(${script}); });`;
  return new Worker(boot, { eval: true, workerData });
}

class PoolWorker {
  readonly worker: Worker;
  readonly #pending = new Map<number, Pending>();
  #next = 0;
  #failed: Error | undefined;

  constructor(keys: readonly PoolKey[]) {
    this.worker = spawn(keys);
    this.worker.on('message', (reply: Reply) => {
      const pending = this.#pending.get(reply.id);
      this.#pending.delete(reply.id);
      pending?.resolve(reply.openings);
    });
    this.worker.on('error', (e) => this.#failAll(e));
    this.worker.on('exit', (code) => this.#failAll(new Error(`node-open-pool: worker exited (${code})`)));
  }

  open(envelopes: readonly Uint8Array[]): Promise<Opening[]> {
    const id = this.#next++;
    return new Promise((resolve, reject) => {
      if (this.#failed) return reject(this.#failed);
      this.#pending.set(id, { resolve, reject });
      this.worker.postMessage({ id, envelopes });
    });
  }

  #failAll(e: Error): void {
    this.#failed ??= e;
    for (const pending of this.#pending.values()) pending.reject(e);
    this.#pending.clear();
  }
}

export class NodeOpenPool implements EnvelopeOpener {
  readonly #workers: PoolWorker[];

  private constructor(workers: PoolWorker[]) {
    this.#workers = workers;
  }

  /** Starts `threads` workers holding `keys`; resolves once every one is online. */
  static async start(threads: number, keys: readonly PoolKey[]): Promise<NodeOpenPool> {
    if (!Number.isInteger(threads) || threads < 1) throw new RangeError('node-open-pool: threads must be ≥ 1');
    const workers = Array.from({ length: threads }, () => new PoolWorker(keys));
    await Promise.all(workers.map((w) => new Promise((resolve) => w.worker.once('online', resolve))));
    return new NodeOpenPool(workers);
  }

  async open(envelopes: readonly Uint8Array[]): Promise<Opening[]> {
    const share = Math.ceil(envelopes.length / this.#workers.length);
    const parts = this.#workers
      .map((w, i) => ({ w, slice: envelopes.slice(i * share, (i + 1) * share) }))
      .filter((p) => p.slice.length > 0)
      .map((p) => p.w.open(p.slice));
    return (await Promise.all(parts)).flat();
  }

  async close(): Promise<void> {
    await Promise.all(this.#workers.map((w) => w.worker.terminate()));
  }
}
