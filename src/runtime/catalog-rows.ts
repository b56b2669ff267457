/**
 * The object catalog read from the state plane (SOP/1; seed 003 "Writing an object",
 * "Rewrapping"): each object's sealed manifest from `object_catalog`, and the access records
 * `object_access` holds for it — one row per object and generation as publication writes them,
 * or one row per batch of objects as a rotation's rewrap writes them (core/object/access.ts).
 * A row that is not one of these shapes, or whose value does not decode, is skipped: it can
 * only come from a malformed or foreign writer, and the object stays readable by its other records.
 */
import { BATCH_ID_BYTES, decodeAccessBatch } from '../core/object/access.js';
import { fromBase64Url } from '../core/bytes.js';
import { isDomainName, type DomainName } from '../core/schema.js';
import type { RowState } from '../core/merge.js';
import { accessBatchKey } from './rewrap-job.js';
import type { CatalogEntry } from './object-service.js';

export const CATALOG_TABLE = 'object_catalog';
export const ACCESS_TABLE = 'object_access';

const ID = /^[0-9a-f]{64}$/;

/** `<DOMAIN>:<producer>:<id>` → its parts; undefined for a row that is not one. */
function catalogKey(row: string): { domain: DomainName; producer: string; id: string } | undefined {
  const [domain, producer, id, extra] = row.split(':');
  if (extra !== undefined || !isDomainName(domain) || !producer || !id || !ID.test(id)) return undefined;
  return { domain, producer, id };
}

/** `<DOMAIN>:<writer>:<id>:<gen>` → its parts. */
function accessKey(row: string): { domain: DomainName; id: string; gen: number } | undefined {
  const [domain, writer, id, gen, extra] = row.split(':');
  const g = Number(gen);
  if (extra !== undefined || !isDomainName(domain) || !writer || !id || !ID.test(id)) return undefined;
  return Number.isInteger(g) && g >= 1 ? { domain, id, gen: g } : undefined;
}

/** Catalog entries by the storage-id prefix batches name them by (several, should two share one). */
function prefixIndex<E extends { readonly id: string }>(entries: Iterable<E>): Map<string, E[]> {
  const index = new Map<string, E[]>();
  for (const e of entries) {
    const prefix = e.id.slice(0, 2 * BATCH_ID_BYTES);
    const same = index.get(prefix);
    if (same) same.push(e);
    else index.set(prefix, [e]);
  }
  return index;
}

/** A catalog entry while its access records are gathered. */
type Gathered = CatalogEntry & { access: { gen: number; wrapped: Uint8Array }[] };

/** Reads the catalog; keeps each cell's decoded bytes while its value stays the same. */
export class CatalogRows {
  readonly #rows: (table: string) => Promise<RowState[]>;
  readonly #decoded = new Map<string, { readonly text: string; readonly bytes: Uint8Array | undefined }>();

  constructor(rows: (table: string) => Promise<RowState[]>) {
    this.#rows = rows;
  }

  /** The catalog as this machine sees it, by object. */
  async read(): Promise<Map<string, CatalogEntry>> {
    const out = new Map<string, Gathered>();
    for (const r of await this.#rows(CATALOG_TABLE)) {
      const key = catalogKey(r.row);
      const sealed = key && this.#bytesOf(CATALOG_TABLE, r.row, r.cells['manifest']?.value);
      if (!key || !sealed) continue;
      out.set(key.id, { id: key.id, domain: key.domain, producer: key.producer, sealedManifest: sealed, access: [] });
    }
    let byPrefix: Map<string, Gathered[]> | undefined;
    for (const r of await this.#rows(ACCESS_TABLE)) {
      const value = r.cells['wrapped']?.value;
      const key = accessKey(r.row);
      if (!key) {
        const batch = accessBatchKey(r.row);
        const bytes = batch && this.#bytesOf(ACCESS_TABLE, r.row, value);
        const records = bytes && decodeAccessBatch(bytes);
        if (!batch || !records?.ok) continue;
        byPrefix ??= prefixIndex(out.values());
        for (const { prefix, wrapped } of records.value) {
          for (const entry of byPrefix.get(prefix) ?? []) {
            if (entry.domain === batch.domain) entry.access.push({ gen: batch.gen, wrapped });
          }
        }
        continue;
      }
      const wrapped = this.#bytesOf(ACCESS_TABLE, r.row, value);
      const entry = out.get(key.id);
      if (entry && wrapped && entry.domain === key.domain) entry.access.push({ gen: key.gen, wrapped });
    }
    return out;
  }

  /**
   * A cell's base64url value decoded, kept by table and row while the value stays the same: the
   * catalog is read for every snapshot, and decoding every row again made a large catalog's
   * every snapshot cost as much as the whole catalog (`bench lifecycle`).
   */
  #bytesOf(table: string, row: string, value: unknown): Uint8Array | undefined {
    const text = typeof value === 'string' ? value : '';
    const key = `${table}\u0000${row}`;
    const known = this.#decoded.get(key);
    if (known?.text === text) return known.bytes;
    const bytes = fromBase64Url(text);
    this.#decoded.set(key, { text, bytes });
    return bytes;
  }
}
