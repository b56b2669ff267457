/**
 * Crypto worker entry point: exposes the CryptoService over comlink. Private
 * keys, the group secret and domain keys live only in this worker's memory and
 * in its IndexedDB key store; the UI thread gets public values and ciphertext.
 */
import { expose } from 'comlink';
import { systemClock } from '../src/runtime/clock.js';
import { CryptoService } from '../src/runtime/crypto-service.js';
import { KeyDatabase } from '../src/storage/key-store.js';

const service = new CryptoService(new KeyDatabase(), systemClock);
expose(service);

export type CryptoWorkerApi = CryptoService;
