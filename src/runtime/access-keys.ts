/**
 * Access keys: what the Parquet worker may ask of the one holder of this machine's unwrapped
 * domain keys (SOP/1 access records, core/object/access.ts). The holder wraps an object secret
 * under a domain's current generation and opens access records with the generations it holds;
 * the asker gets generation numbers, access records and object secrets — what it handles
 * already — and never a domain key.
 *
 * In a browser the holder is the crypto worker: it serves `CryptoService.accessKeys` on a
 * MessagePort (workers/crypto.worker.ts) and the Parquet worker asks through the other end
 * (workers/parquet.worker.ts). A headless node hands the same object over in its own process.
 *
 * Records cross a thread to get here, so each is checked before a key touches it: a malformed
 * record is one that does not open. Opening takes a batch of objects, so a query over a
 * thousand objects asks once, not a thousand times.
 */
import type { DomainKeyring } from '../core/domain-keys.js';
import { unwrapSecret, WRAPPED_BYTES, wrapSecret, type AccessRecord } from '../core/object/access.js';
import { isStorageId, type StorageId } from '../core/object/keys.js';
import type { Random } from '../core/ports.js';
import { err, ok, type Result } from '../core/result.js';
import { isDomainName, type DomainName } from '../core/schema.js';

/** This machine holds no key of the domain: it does not read it. */
export type NoDomainKey = { readonly type: 'NoDomainKey'; readonly domain: DomainName };

/** A rewrap asked for under a generation that is no longer the domain's current one. */
export type GenerationMoved = {
  readonly type: 'GenerationMoved';
  readonly domain: DomainName;
  readonly asked: number;
  readonly current: number | undefined;
};

/** None of the `keys` generations held opens any of the `records` access records tried. */
export type NoKeyOpens = { readonly type: 'NoKeyOpens'; readonly keys: number; readonly records: number };

export interface AccessKeys {
  /** The newest generation held of a domain; undefined when this machine holds none (it is no reader). */
  current(domain: DomainName): Promise<number | undefined>;

  /** Wraps an object secret into an access record under the domain's current generation. */
  wrap(
    secret: Uint8Array,
    at: { readonly storageId: StorageId; readonly domain: DomainName },
  ): Promise<Result<AccessRecord, NoDomainKey>>;

  /**
   * For each object, its secret from the first of its access records that a generation held
   * opens, the generation the record names; answers in the order asked.
   */
  unwrap(objects: readonly (readonly AccessRecord[])[]): Promise<Result<Uint8Array, NoKeyOpens>[]>;

  /**
   * Rotation by rewrap: each object's secret opened from its records and wrapped again under
   * the domain's current generation, inside the holder (no secret crosses a thread). The new
   * record of each object in the order asked; undefined for one none of whose records
   * opens. `GenerationMoved` when the current generation is not `gen`.
   */
  rewrap(
    domain: DomainName,
    gen: number,
    objects: readonly (readonly AccessRecord[])[],
  ): Promise<Result<(AccessRecord | undefined)[], NoDomainKey | GenerationMoved>>;

  /**
   * Holding is not reading: every generation held, of every domain, tried on every record
   * whatever domain and generation it names. The object secrets that opened, and how many
   * keys were tried.
   */
  tryEveryKey(records: readonly AccessRecord[]): Promise<{ readonly keys: number; readonly secrets: Uint8Array[] }>;
}

/** A record as core/object/access.ts may take it; anything else is left unopened. */
function wellFormed(record: AccessRecord): boolean {
  return (
    isStorageId(record.storageId) &&
    isDomainName(record.domain) &&
    Number.isInteger(record.gen) &&
    record.gen >= 1 &&
    record.gen <= 0xffffffff &&
    record.wrapped instanceof Uint8Array &&
    record.wrapped.length === WRAPPED_BYTES
  );
}

/** The access keys of a keyring: the holder's side of the port. */
export function keyringAccess(keyring: DomainKeyring, random: Random): AccessKeys {
  const opened = (record: AccessRecord, kek: Uint8Array | undefined): Uint8Array | undefined => {
    if (!kek || !wellFormed(record)) return undefined;
    const secret = unwrapSecret(record, kek);
    return secret.ok ? secret.value : undefined;
  };
  const open = (records: readonly AccessRecord[]): Result<Uint8Array, NoKeyOpens> => {
    for (const r of records) {
      const secret = opened(r, keyring.get(r.domain, r.gen));
      if (secret) return ok(secret);
    }
    return err({ type: 'NoKeyOpens', keys: keyring.list().length, records: records.length });
  };
  return {
    current: async (domain) => keyring.current(domain)?.gen,
    wrap: async (secret, at) => {
      if (!isStorageId(at.storageId)) throw new Error('access-keys: not a storage id');
      const current = keyring.current(at.domain);
      if (!current) return err({ type: 'NoDomainKey', domain: at.domain });
      return ok(wrapSecret(secret, { ...at, gen: current.gen }, current.key, random));
    },
    unwrap: async (objects) => objects.map(open),
    rewrap: async (domain, gen, objects) => {
      const current = keyring.current(domain);
      if (!current) return err({ type: 'NoDomainKey', domain });
      if (current.gen !== gen) return err({ type: 'GenerationMoved', domain, asked: gen, current: current.gen });
      return ok(
        objects.map((records) => {
          const storageId = records[0]?.storageId;
          const secret = open(records.filter((r) => r.storageId === storageId && r.domain === domain));
          if (!secret.ok || !storageId || !isStorageId(storageId)) return undefined;
          return wrapSecret(secret.value, { storageId, domain, gen }, current.key, random);
        }),
      );
    },
    tryEveryKey: async (records) => {
      const keys = keyring.list();
      const secrets = keys.flatMap((k) => records.flatMap((r) => opened(r, k.key) ?? []));
      return { keys: keys.length, secrets };
    },
  };
}
