/**
 * Crypto worker entry point: the CryptoService and, beside it, the state plane's
 * apply path (StateService), both over comlink. Private keys, the group secret and
 * domain keys live only in this worker's memory and in its IndexedDB key store; the
 * replica opens, verifies, records and materialises frames here, against IndexedDB,
 * so envelopes never cross to the UI thread and the keys are never copied to another
 * worker: the Parquet worker asks this one about domain keys on a port of its own
 * (`serveAccessKeys`, src/runtime/access-keys.ts). The UI thread gets public values,
 * ciphertext and change summaries.
 */
import { expose, proxy } from 'comlink';
import { systemClock } from '../src/runtime/clock.js';
import { CryptoService } from '../src/runtime/crypto-service.js';
import { browserEnv } from '../src/runtime/machine-env.js';
import { StateService, stateCryptoOf } from '../src/runtime/state-service.js';
import { DexieReplicaStore, NodeDatabase } from '../src/storage/dexie-store.js';
import { KeyDatabase } from '../src/storage/key-store.js';

const crypto = new CryptoService(new KeyDatabase(), systemClock);
const state = new StateService({
  store: new DexieReplicaStore(new NodeDatabase('sov-node')),
  crypto: async () => stateCryptoOf(crypto),
  self: async () => crypto.view().signer,
  clock: systemClock,
  withLock: browserEnv.withLock,
});

const api = {
  crypto: proxy(crypto),
  state: proxy(state),
  /** Answers the Parquet worker's questions about domain keys on `port`; the keys stay here. */
  serveAccessKeys: (port: MessagePort) => expose(crypto.accessKeys, port),
};
expose(api);

export type CryptoWorkerApi = typeof api;
