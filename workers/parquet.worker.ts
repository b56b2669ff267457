/**
 * Parquet worker entry point: exposes the ObjectService over comlink. Forming,
 * encrypting, hashing and decrypting objects happen here, off the UI thread; the
 * page gets storage ids, manifests as plain values, and decrypted exports it asked for.
 */
import { expose } from 'comlink';
import { ObjectService } from '../src/runtime/object-service.js';

const service = new ObjectService();
expose(service);

export type ParquetWorkerApi = ObjectService;
