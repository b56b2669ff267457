/**
 * MLS worker entry point: exposes the MlsService over comlink. MLS group state
 * (which holds the leaf's private keys) and the KEK generations it receives
 * live only in this worker's memory and, wrapped, in the machine's key store;
 * the UI thread gets public views and bundles of ciphertext.
 */
import { expose } from 'comlink';
import { MlsService } from '../src/runtime/mls-service.js';
import { KeyDatabase } from '../src/storage/key-store.js';

expose(new MlsService(new KeyDatabase()));

export type MlsWorkerApi = MlsService;
