/**
 * Publishes catalog entries through a headless machine's own state plane, as publication
 * writes them: an `object_catalog` row (random bytes of a sealed manifest's size) and an
 * `object_access` row whose record the key holder wrapped from a fresh object secret under
 * the domain's current generation. For rewrap tests and `bench lifecycle`: a rewrap never
 * opens a manifest or an object's bytes, so it does with these what it does with real ones.
 */
import { randomBytes } from 'node:crypto';
import type { Headless } from '../../src/cli/headless.ts';
import { toBase64Url } from '../../src/core/bytes.js';
import { storageIdOf } from '../../src/core/object/keys.js';
import type { DomainName } from '../../src/core/schema.js';
import { ACCESS_TABLE, CATALOG_TABLE } from '../../src/runtime/catalog-rows.js';

/** A sealed manifest of a few columns, as published (bytes). */
const MANIFEST_BYTES = 900;
const IN_FLIGHT = 16;

export async function seedCatalog(machine: Headless, domain: DomainName, count: number): Promise<void> {
  const { crypto, state } = machine.services;
  const self = crypto.view().signer;
  let next = 0;
  await Promise.all(
    Array.from({ length: IN_FLIGHT }, async () => {
      while (next < count) {
        next++;
        const storageId = storageIdOf(randomBytes(32));
        const record = await crypto.accessKeys.wrap(randomBytes(32), { storageId, domain });
        if (!record.ok) throw new Error(`seed: ${record.error.type}`);
        const row = `${domain}:${self}:${storageId}`;
        const catalog = await state.write(CATALOG_TABLE, row, { manifest: toBase64Url(randomBytes(MANIFEST_BYTES)) });
        const access = await state.write(ACCESS_TABLE, `${row}:${record.value.gen}`, {
          wrapped: toBase64Url(record.value.wrapped),
        });
        if (!catalog.ok || !access.ok) throw new Error('seed: a catalog row was refused');
      }
    }),
  );
}
