/**
 * Worker side of node-open-pool.ts: holds the domain keys it was started with
 * and opens each batch it is sent (core/open.ts, AES-GCM through node-aead.ts),
 * replying with plain results.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { DomainKeyring } from '../core/domain-keys.js';
import { openEnvelopeSync } from '../core/open.js';
import { nodeOpenSealed } from './node-aead.js';
import type { SealedEvent } from '../core/seal.js';
import type { PoolKey } from './node-open-pool.js';

const keyring = new DomainKeyring();
for (const { domain, gen, key } of (workerData as { keys: PoolKey[] }).keys) keyring.add(domain, gen, key);
const decrypt = (sealed: SealedEvent) => nodeOpenSealed(sealed, (domain, gen) => keyring.get(domain, gen));

parentPort?.on('message', ({ id, envelopes }: { id: number; envelopes: Uint8Array[] }) => {
  parentPort?.postMessage({ id, openings: envelopes.map((bytes) => openEnvelopeSync(bytes, decrypt)) });
});
