/**
 * A manifest as the UI shows it (core/object/manifest.ts): plain, structured-cloneable values,
 * column bounds as text (timestamps in ISO form, bytes in hex).
 */
import { toHex } from '../core/bytes.js';
import { isoTime } from '../core/csv.js';
import { boundValue, type ObjectManifest } from '../core/object/manifest.js';
import type { ColumnSpec } from '../core/parquet/schema.js';
import type { DomainName } from '../core/schema.js';

/** A manifest as the UI shows it: plain values only (structured-cloneable). */
export type ManifestView = {
  readonly storageId: string;
  readonly domain: DomainName;
  readonly table: string;
  readonly producer: string;
  readonly rows: number;
  readonly bytes: number;
  readonly time: { readonly column: string; readonly min: number; readonly max: number } | undefined;
  readonly partitions: Readonly<Record<string, string>>;
  readonly schema: readonly ColumnSpec[];
  readonly columns: readonly {
    readonly name: string;
    readonly nulls: number;
    readonly min: string | undefined;
    readonly max: string | undefined;
  }[];
  readonly formedAt: number;
  /** `delete`: a delete object, whose rows are the identities it hides (core/object/deletes.ts). */
  readonly kind: 'delete' | undefined;
  /** The objects a compaction replaces (core/object/compact.ts); none for any other object. */
  readonly supersedes: readonly string[];
};

function boundText(spec: ColumnSpec, bytes: Uint8Array | undefined): string | undefined {
  if (!bytes) return undefined;
  const value = boundValue(spec.type, bytes);
  if (spec.type === 'timestamp' && typeof value === 'number') return isoTime(value);
  return value instanceof Uint8Array ? toHex(value) : String(value);
}

export function manifestView(m: ObjectManifest): ManifestView {
  return {
    storageId: m.storageId,
    domain: m.domain,
    table: m.table,
    producer: m.producer,
    rows: m.rows,
    bytes: m.bytes,
    time: m.time,
    partitions: m.partitions,
    schema: m.schema,
    columns: m.schema.map((spec) => {
      const b = m.columns[spec.name];
      return { name: spec.name, nulls: b?.nulls ?? 0, min: boundText(spec, b?.min), max: boundText(spec, b?.max) };
    }),
    formedAt: m.hlc.ms,
    kind: m.kind,
    supersedes: m.supersedes,
  };
}
