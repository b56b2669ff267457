/**
 * Recovery objects in the relay's blind store (core/recovery/checkpoint.ts), for the Parquet
 * worker: checkpoints and roots go up under the mesh's recovery tags (so blind archives copy
 * them like data), roots and the checkpoint a root names come down verified against their
 * ids, and a restoring machine learns which catalog objects no store it can reach holds.
 * Recovery objects are never kept in this machine's object store: they are not in the catalog.
 */
import { toHex } from '../core/bytes.js';
import { blake3 } from '../core/hash.js';
import { isStorageId, storageIdBytes } from '../core/object/keys.js';
import { MAX_ROOT_BYTES, recoveryTags } from '../core/recovery/checkpoint.js';
import { err, ok, type Result } from '../core/result.js';
import type { DomainName } from '../core/schema.js';
import type { ReadError } from './object-reader.js';
import type { RelayObjectClient } from './relay-objects-client.js';

/**
 * Roots read per page. A mesh writes one per checkpoint and old ones stay (the newest may sort
 * anywhere among them by id), so a restore reads every page, keeping only the best root so far
 * (mesh-recovery.ts): memory stays bounded by a page, never by the mesh's age.
 */
export const ROOTS_PER_PAGE = 256;

export type RootsPage = {
  readonly roots: readonly Uint8Array[];
  /** How many roots the page listed, the unreadable and oversized ones included. */
  readonly listed: number;
  /** Where the next page starts (hex id), when there is one. */
  readonly next?: string;
};

export type RecoveryObjectsDeps = {
  client(): Result<RelayObjectClient, ReadError>;
  group(): Uint8Array | undefined;
  hasBlob(id: string): Promise<boolean>;
  placementTag(domain: DomainName): Uint8Array;
};

export class RecoveryObjects {
  readonly #d: RecoveryObjectsDeps;

  constructor(deps: RecoveryObjectsDeps) {
    this.#d = deps;
  }

  #tags() {
    const group = this.#d.group();
    return group ? ok(recoveryTags(group)) : err({ type: 'NotReady', reason: 'objects: no mesh' } as const);
  }

  /** Puts a checkpoint or a recovery root into the blind store under its recovery tag. */
  async put(kind: 'roots' | 'checkpoints', bytes: Uint8Array): Promise<Result<{ id: string }, ReadError>> {
    const [client, tags] = [this.#d.client(), this.#tags()];
    if (!client.ok) return client;
    if (!tags.ok) return tags;
    const id = blake3(bytes);
    const put = await client.value.upload(id, tags.value[kind], bytes);
    return put.ok ? ok({ id: toHex(id) }) : put;
  }

  /**
   * One page of the recovery roots the relay holds for this mesh (from `after`, a hex id), each
   * verified against its id; oversized, vanished and mismatching ones are left out.
   */
  async roots(after?: string): Promise<Result<RootsPage, ReadError>> {
    const [client, tags] = [this.#d.client(), this.#tags()];
    if (!client.ok) return client;
    if (!tags.ok) return tags;
    if (after !== undefined && !isStorageId(after)) return err({ type: 'UnknownObject', id: after });
    const from = after === undefined ? null : storageIdBytes(after);
    const listed = await client.value.list(tags.value.roots, from, ROOTS_PER_PAGE);
    if (!listed.ok) return listed;
    const roots: Uint8Array[] = [];
    for (const o of listed.value.objects.filter((o) => o.size <= MAX_ROOT_BYTES)) {
      const got = await client.value.download(o.id);
      if (got.ok && toHex(blake3(got.value)) === toHex(o.id)) roots.push(got.value);
    }
    const last = listed.value.objects.at(-1);
    const next = listed.value.more && last ? { next: toHex(last.id) } : {};
    return ok({ roots, listed: listed.value.objects.length, ...next });
  }

  /** A checkpoint by id, verified against it (`UnknownObject` when the relay lacks it). */
  async checkpoint(id: string): Promise<Result<Uint8Array, ReadError>> {
    const client = this.#d.client();
    if (!client.ok) return client;
    if (!isStorageId(id)) return err({ type: 'UnknownObject', id });
    const got = await client.value.download(storageIdBytes(id));
    if (!got.ok) return got;
    if (toHex(blake3(got.value)) !== id) return err({ type: 'UnknownObject', id });
    return got;
  }

  /** Of these catalog objects, those neither held here nor complete in the relay's store. */
  async missing(
    objects: readonly { readonly id: string; readonly domain: DomainName }[],
  ): Promise<Result<string[], ReadError>> {
    const client = this.#d.client();
    if (!client.ok) return client;
    const onRelay = new Set<string>();
    for (const domain of new Set(objects.map((o) => o.domain))) {
      const listed = await client.value.listAll(this.#d.placementTag(domain));
      if (!listed.ok) return listed;
      for (const o of listed.value) onRelay.add(toHex(o.id));
    }
    const missing: string[] = [];
    for (const o of objects) if (!onRelay.has(o.id) && !(await this.#d.hasBlob(o.id))) missing.push(o.id);
    return ok(missing);
  }
}
