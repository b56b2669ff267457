/**
 * A machine's MLS worker service beside its crypto service, in Node over fake
 * IndexedDB: the same key store, a sequencer that accepts everything (the
 * relay's sequencer is tested on its own), and the founder's domains.
 */
import { ok } from '../../src/core/result.js';
import { DOMAINS } from '../../src/core/schema.js';
import type { CryptoService } from '../../src/runtime/crypto-service.js';
import { MlsService } from '../../src/runtime/mls-service.js';
import { KeyDatabase } from '../../src/storage/key-store.js';

/** The MLS service on `dbName`'s key store, admitting `admitted` and believing `admins` (default: itself). */
export async function mlsMachine(
  crypto: CryptoService,
  dbName: string,
  keyring: { admitted?: string[]; admins?: string[] } = {},
): Promise<MlsService> {
  const mls = new MlsService(new KeyDatabase(dbName));
  await mls.init();
  const self = crypto.view().signer;
  mls.setKeyring({ admitted: keyring.admitted ?? [self], admins: keyring.admins ?? [self] });
  mls.setSequencer(async () => ok(undefined));
  return mls;
}

/** Founds CONTROL and GENERAL on a machine that just created its mesh, and loads their generations. */
export async function foundDomains(crypto: CryptoService, dbName: string): Promise<MlsService> {
  const mls = await mlsMachine(crypto, dbName);
  for (const domain of DOMAINS) {
    const founded = await mls.found(domain, crypto.groupIdOf(domain));
    if (!founded.ok) throw new Error(`found ${domain}: ${founded.error.type}`);
  }
  await crypto.reloadDomainKeys();
  return mls;
}
