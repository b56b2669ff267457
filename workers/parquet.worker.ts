/**
 * Parquet worker entry point: exposes the ObjectService over comlink. Forming,
 * encrypting, hashing and decrypting objects happen here, off the UI thread; the
 * page gets storage ids, manifests as plain values, and decrypted exports it asked for.
 *
 * No domain key comes here: the page hands over one end of a channel whose other end the
 * crypto worker serves (its `serveAccessKeys`), and the service asks the key holder through
 * it for access records and object secrets (src/runtime/access-keys.ts).
 */
import { expose, proxy, wrap } from 'comlink';
import type { AccessKeys } from '../src/runtime/access-keys.js';
import { ObjectService } from '../src/runtime/object-service.js';

let opened = false;

const api = {
  /** The service, asking the key holder on `keys`; opened once, before anything else. */
  open(keys: MessagePort) {
    if (opened) throw new Error('parquet worker: opened already');
    opened = true;
    return proxy(new ObjectService(wrap<AccessKeys>(keys)));
  },
};
expose(api);

export type ParquetWorkerApi = typeof api;
