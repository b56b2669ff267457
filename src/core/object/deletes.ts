/**
 * Delete objects (seed 003 "Deleting rows, and compaction"; issue 24). For a table whose rows
 * may be deleted (declared per table: the CONTROL table `object_tables`, schema.ts), a delete
 * appends an immutable object like any other — encrypted under a fresh secret, named by the
 * BLAKE3 of its bytes, described by a signed manifest of kind `delete`, unlocked by access
 * records — whose one column `row` holds the row identities (`_row_id`: origin ‖ ordinal) it
 * hides. Objects have no global order, so a delete is a permanent tombstone for each identity
 * it names: a row carrying one is invisible to queries and exports whatever arrived first,
 * the data object or the delete.
 */
import { toHex } from '../bytes.js';
import type { ParquetError } from '../parquet/modules.js';
import type { ParquetFile } from '../parquet/read.js';
import { ROW_ID_BYTES, ROW_ID_COLUMN, type ColumnSpec } from '../parquet/schema.js';
import { err, ok, type Result } from '../result.js';
import { ObjectWriter, type FormedObject, type FormError, type FormOptions } from './form.js';
import type { ObjectManifest } from './manifest.js';

export const DELETE_COLUMN = 'row';
export const DELETE_SCHEMA: readonly ColumnSpec[] = [{ name: DELETE_COLUMN, type: 'rowid', nullable: false }];
/** Most identities one delete object names (16 MB of them). */
export const MAX_DELETED_ROWS = 1_000_000;

export type DeleteError = { readonly type: 'InvalidDelete'; readonly detail: string };

const ROW_ID_HEX = new RegExp(`^[0-9a-f]{${ROW_ID_BYTES * 2}}$`);

/** Row identities as hex (what a query result carries), checked, without repeats, in order. */
export function parseRowIds(ids: readonly string[]): Result<string[], DeleteError> {
  if (ids.length === 0) return err({ type: 'InvalidDelete', detail: 'no rows named' });
  const unique = [...new Set(ids)].sort();
  if (unique.length > MAX_DELETED_ROWS) {
    return err({ type: 'InvalidDelete', detail: `more than ${MAX_DELETED_ROWS} rows in one delete` });
  }
  const bad = unique.find((id) => !ROW_ID_HEX.test(id));
  if (bad !== undefined) return err({ type: 'InvalidDelete', detail: `not a row identity: ${bad.slice(0, 40)}` });
  return ok(unique);
}

/** Forms the delete object of `table` naming these row identities (hex). */
export async function formDeleteObject(
  ids: readonly string[],
  options: Omit<FormOptions, 'columns' | 'kind' | 'timeColumn' | 'partitions' | 'supersedes'>,
): Promise<Result<FormedObject, FormError | DeleteError>> {
  const parsed = parseRowIds(ids);
  if (!parsed.ok) return parsed;
  const started = await ObjectWriter.start({ ...options, columns: DELETE_SCHEMA, kind: 'delete' });
  if (!started.ok) return started;
  const cells = parsed.value.map((hex) => Uint8Array.from(hex.match(/../g)!, (b) => parseInt(b, 16)));
  const added = await started.value.add({ [DELETE_COLUMN]: cells });
  if (!added.ok) return added;
  return started.value.finish();
}

/** A delete object's manifest: kind `delete`, and exactly the one column of identities. */
export function isDeleteManifest(m: ObjectManifest): boolean {
  const [column, ...rest] = m.schema;
  return (
    m.kind === 'delete' &&
    rest.length === 0 &&
    column?.name === DELETE_COLUMN &&
    column.type === 'rowid' &&
    !column.nullable
  );
}

/** The identities an opened delete object names, as hex. */
export async function deletedIds(file: ParquetFile): Promise<Result<ReadonlySet<string>, ParquetError | DeleteError>> {
  const read = await file.readColumns({ columns: [DELETE_COLUMN] });
  if (!read.ok) return read;
  const ids = new Set<string>();
  for (const id of Array.from(read.value[DELETE_COLUMN] as ArrayLike<unknown>)) {
    if (!(id instanceof Uint8Array) || id.length !== ROW_ID_BYTES) {
      return err({ type: 'InvalidDelete', detail: 'a row identity is not 16 bytes' });
    }
    ids.add(toHex(id));
  }
  return ok(ids);
}

/**
 * Every identity some delete names, by the domain of the delete: the rows nobody is shown
 * again. A delete hides rows of its own domain's objects only — a reader of the rows is a
 * reader of the delete, so every reader of a row decides the same about it.
 */
export class Tombstones {
  readonly #byDomain = new Map<string, ReadonlySet<string>[]>();

  add(domain: string, ids: ReadonlySet<string>): void {
    if (ids.size === 0) return;
    const sets = this.#byDomain.get(domain);
    if (sets) sets.push(ids);
    else this.#byDomain.set(domain, [ids]);
  }

  has(domain: string, rowId: Uint8Array): boolean {
    const sets = this.#byDomain.get(domain);
    if (!sets) return false;
    const hex = toHex(rowId);
    return sets.some((set) => set.has(hex));
  }

  /** The filter a query keeps rows by (of an object, by its domain); undefined when nothing is deleted. */
  keepRow(): ((rowId: Uint8Array, object: { readonly domain: string }) => boolean) | undefined {
    return this.#byDomain.size === 0 ? undefined : (rowId, object) => !this.has(object.domain, rowId);
  }
}

/** Drops, from every column read (`_row_id` among them), the rows whose identity `keepRow` refuses. */
export function keepRows(columns: Record<string, ArrayLike<unknown>>, keepRow: (rowId: Uint8Array) => boolean): void {
  const ids = columns[ROW_ID_COLUMN] as ArrayLike<Uint8Array> | undefined;
  if (!ids) throw new Error('deletes: rows are kept by their identities, which were not read');
  const kept: number[] = [];
  for (let i = 0; i < ids.length; i++) if (keepRow(ids[i]!)) kept.push(i);
  if (kept.length === ids.length) return;
  for (const name of Object.keys(columns)) {
    const values = columns[name]!;
    columns[name] = kept.map((i) => values[i]);
  }
}
