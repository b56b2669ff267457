/**
 * Compaction (seed 003 "Deleting rows, and compaction"; issue 24): many small objects of one
 * table in one domain become one, on a machine that reads them. The new object is formed like
 * any — a fresh secret, so it is re-keyed forward under the current generation when published
 * — with the rows of its inputs in a fixed order (inputs by clock then storage id, rows as
 * stored), each keeping its identity (`_row_id`, so deletes naming it still apply), without
 * the rows a delete hides, and with the inputs' storage ids in its manifest's `sup`.
 *
 * Visibility switches in one step: the planner sets aside every object a readable compaction
 * of the same domain lists (query/plan.ts `setAside`), so a reader sees the old set until the
 * new object's catalog row and access record are both in, and the new set from then on —
 * never both, never neither. A crash before publication leaves the old set; the pending
 * object is published when the machine comes back, or formed again from the same inputs.
 */
import type { ParquetError } from '../parquet/modules.js';
import type { ParquetFile } from '../parquet/read.js';
import { ROW_ID_BYTES, ROW_ID_COLUMN, type CellValue, type ColumnSpec } from '../parquet/schema.js';
import { setAside, tableSchema } from '../query/plan.js';
import { compareHlc } from '../hlc.js';
import { err, ok, type Result } from '../result.js';
import { DEFAULT_ROW_GROUP_ROWS, ObjectWriter, type FormedObject, type FormError, type FormOptions } from './form.js';
import type { ObjectManifest } from './manifest.js';

/** Objects with fewer rows than this are compacted together; larger ones are left as they are. */
export const SMALL_OBJECT_ROWS = 100_000;
/** Most rows one compaction writes. */
export const MAX_COMPACTED_ROWS = 5_000_000;
/**
 * Most objects one compaction supersedes: its manifest names each (`sup`, 64 hex characters),
 * and a sealed manifest must fit a catalog row (MAX_SEALED_MANIFEST, object-service.ts: about
 * 12 KB) — 1,000 inputs did not. More objects take more rounds.
 */
export const MAX_COMPACTION_INPUTS = 100;

export type CompactInput = { readonly manifest: ObjectManifest; readonly file: ParquetFile };

export type CompactError = FormError | ParquetError | { readonly type: 'NothingToCompact'; readonly detail: string };

export type Compacted = {
  readonly formed: FormedObject;
  /** Rows written, and rows left out because a delete hides them. */
  readonly rows: number;
  readonly dropped: number;
};

const byStamp = (a: ObjectManifest, b: ObjectManifest): number =>
  compareHlc(a.hlc, b.hlc) || (a.storageId < b.storageId ? -1 : a.storageId > b.storageId ? 1 : 0);

/**
 * The objects of `table` in `domain` worth compacting: data objects nothing sets aside, each
 * under SMALL_OBJECT_ROWS rows, in order, at most MAX_COMPACTION_INPUTS of them and as many as
 * fit MAX_COMPACTED_ROWS; none unless two.
 */
export function compactionCandidates(
  manifests: readonly ObjectManifest[],
  domain: string,
  table: string,
): ObjectManifest[] {
  const ofTable = manifests.filter((m) => m.table === table && m.kind === undefined);
  const aside = setAside(ofTable);
  const picked: ObjectManifest[] = [];
  let rows = 0;
  for (const m of ofTable.filter((o) => o.domain === domain && !aside.has(o.storageId)).sort(byStamp)) {
    if (m.rows >= SMALL_OBJECT_ROWS || rows + m.rows > MAX_COMPACTED_ROWS) continue;
    picked.push(m);
    rows += m.rows;
    if (picked.length === MAX_COMPACTION_INPUTS) break;
  }
  return picked.length >= 2 ? picked : [];
}

/** Forms the compaction of `inputs` (data objects of one table in one domain). */
export async function compactObjects(
  inputs: readonly CompactInput[],
  options: Omit<FormOptions, 'columns' | 'kind' | 'timeColumn' | 'partitions' | 'supersedes' | 'domain' | 'table'> & {
    /** Whether a row stays (false: a delete hides it). */
    readonly keepRow?: (rowId: Uint8Array, object: ObjectManifest) => boolean;
  },
): Promise<Result<Compacted, CompactError>> {
  if (inputs.length < 2) return err({ type: 'NothingToCompact', detail: 'fewer than two objects' });
  const [first] = inputs;
  const { domain, table } = first!.manifest;
  if (inputs.some((i) => i.manifest.domain !== domain || i.manifest.table !== table || i.manifest.kind)) {
    return err({ type: 'InvalidObject', detail: 'a compaction takes data objects of one table in one domain' });
  }
  const ordered = [...inputs].sort((a, b) => byStamp(a.manifest, b.manifest));
  const manifests = ordered.map((i) => i.manifest);
  // The table's newest schema; a column some input lacks (or holds with another type) is null
  // in that input's rows, so it is nullable here whatever the newest object says.
  const held = (c: ColumnSpec) => manifests.every((m) => m.schema.some((o) => o.name === c.name && o.type === c.type));
  const schema = tableSchema(manifests, table)!.map((c) => (c.nullable || held(c) ? c : { ...c, nullable: true }));
  const newest = manifests.at(-1)!;
  const time = newest.time?.column;
  const timeColumn = schema.some((c) => c.name === time && c.type === 'timestamp') ? time : undefined;
  // Partition values every input shares still describe the whole.
  const partitions = Object.fromEntries(
    Object.entries(first!.manifest.partitions).filter(([k, v]) => manifests.every((m) => m.partitions[k] === v)),
  );
  const started = await ObjectWriter.start({
    ...options,
    domain,
    table,
    columns: schema,
    ...(timeColumn ? { timeColumn } : {}),
    partitions,
    supersedes: manifests.map((m) => m.storageId).sort(),
  });
  if (!started.ok) return started;
  const writer = started.value;
  let cells: Record<string, CellValue[]> = {};
  let ids: Uint8Array[] = [];
  const reset = () => {
    cells = Object.fromEntries(schema.map((c) => [c.name, []]));
    ids = [];
  };
  reset();
  const flush = async (): Promise<Result<void, FormError>> => {
    if (ids.length === 0) return ok(undefined);
    const packed = new Uint8Array(ids.length * ROW_ID_BYTES);
    ids.forEach((id, i) => packed.set(id, i * ROW_ID_BYTES));
    const added = await writer.add(cells, packed);
    reset();
    return added;
  };
  let rows = 0;
  let dropped = 0;
  for (const { manifest, file } of ordered) {
    // A column an older object lacks (or holds with another type) is null in its rows.
    const own = schema.filter((c) => manifest.schema.some((o) => o.name === c.name && o.type === c.type));
    for (let g = 0; g < file.metadata.row_groups.length; g++) {
      const read = await file.readColumns({ columns: [...own.map((c) => c.name), ROW_ID_COLUMN], rowGroups: [g] });
      if (!read.ok) return read;
      const rowIds = read.value[ROW_ID_COLUMN] as ArrayLike<Uint8Array>;
      for (let i = 0; i < rowIds.length; i++) {
        if (options.keepRow && !options.keepRow(rowIds[i]!, manifest)) {
          dropped++;
          continue;
        }
        for (const c of schema) {
          const values = read.value[c.name];
          cells[c.name]!.push(values ? (values[i] as CellValue) : null);
        }
        ids.push(rowIds[i]!);
        rows++;
        if (ids.length === DEFAULT_ROW_GROUP_ROWS) {
          const flushed = await flush();
          if (!flushed.ok) return flushed;
        }
      }
    }
  }
  if (rows === 0) return err({ type: 'NothingToCompact', detail: 'every row of these objects is deleted' });
  const flushed = await flush();
  if (!flushed.ok) return flushed;
  const formed = await writer.finish();
  return formed.ok ? ok({ formed: formed.value, rows, dropped }) : formed;
}

/**
 * When each superseded object was superseded: the clock (ms) of the compaction that the planner
 * applies to it (query/plan.ts `setAside`), by storage id. Objects of no table compaction and
 * objects only a set-aside compaction lists are not in it.
 */
export function supersessions(manifests: readonly ObjectManifest[]): Map<string, number> {
  const data = manifests.filter((m) => m.kind === undefined);
  const at = new Map<string, number>();
  for (const table of new Set(data.map((m) => m.table))) {
    const ofTable = data.filter((m) => m.table === table);
    const aside = setAside(ofTable);
    for (const c of ofTable) {
      if (aside.has(c.storageId) && aside.get(c.storageId) !== 'superseded') continue;
      for (const id of c.supersedes) if (aside.get(id) === 'superseded') at.set(id, c.hlc.ms);
    }
  }
  return at;
}
