/**
 * CSV in and out of the object plane, the same for the CLI (a file stream) and the
 * Parquet worker (a browser File's stream): a CSV becomes one encrypted object in two
 * passes over its text — one to infer the column types, one to write row group by row
 * group — so an import never holds the file and its object at once; and any Parquet file
 * becomes CSV with a header row.
 */
import { toHex } from '../bytes.js';
import {
  CsvParser,
  SchemaInference,
  checkHeader,
  checkWidth,
  csvRecord,
  isoTime,
  toCell,
  type CsvError,
} from '../csv.js';
import type { ParquetFile } from '../parquet/read.js';
import { ROW_ID_COLUMN, type CellValue, type ColumnSpec } from '../parquet/schema.js';
import { err, ok, type Result } from '../result.js';
import { DEFAULT_ROW_GROUP_ROWS, ObjectWriter, type FormError, type FormOptions, type FormedObject } from './form.js';
import { keepRows } from './deletes.js';

/** A fresh pass over the CSV's text, in chunks. */
export type CsvSource = () => AsyncIterable<string>;

export type CsvImportError = CsvError | FormError | { readonly type: 'CsvUnreadable'; readonly detail: string };

/** The CSV's records in batches of `batch` (blank lines skipped). */
export async function* csvBatches(
  chunks: AsyncIterable<string>,
  batch: number,
): AsyncGenerator<Result<string[][], CsvError>> {
  const parser = new CsvParser();
  let pending: string[][] = [];
  const blank = (r: readonly string[]) => r.length === 1 && r[0] === '';
  for await (const chunk of chunks) {
    const records = parser.push(chunk);
    if (!records.ok) {
      yield records;
      return;
    }
    for (const r of records.value) if (!blank(r)) pending.push(r);
    while (pending.length >= batch) {
      yield ok(pending.slice(0, batch));
      pending = pending.slice(batch);
    }
  }
  const last = parser.end();
  if (!last.ok) {
    yield last;
    return;
  }
  pending.push(...last.value.filter((r) => !blank(r)));
  if (pending.length) yield ok(pending);
}

/** Pass 1: the header and every column's type. */
export async function inferCsv(
  source: CsvSource,
): Promise<Result<{ header: string[]; columns: ColumnSpec[] }, CsvError>> {
  let inference: SchemaInference | undefined;
  let header: string[] = [];
  let line = 0;
  for await (const batch of csvBatches(source(), 10_000)) {
    if (!batch.ok) return batch;
    for (const record of batch.value) {
      line++;
      if (!inference) {
        const checked = checkHeader(record);
        if (!checked.ok) return checked;
        header = checked.value;
        inference = new SchemaInference(header);
        continue;
      }
      const width = checkWidth(record, header.length, line);
      if (!width.ok) return width;
      inference.observe(record);
    }
  }
  if (!inference) return err({ type: 'CsvHeader', detail: 'no header row' });
  const columns = inference.schema();
  return columns.ok ? ok({ header, columns: columns.value }) : columns;
}

/** A table name from a file name: lower case, `[a-z][a-z0-9_]*`, at most 64 characters. */
export function tableName(fileName: string): string {
  const name = fileName
    .replace(/^.*[\\/]/, '')
    .replace(/\.[^.]*$/, '')
    .toLowerCase()
    .replace(/[^a-z0-9_]+/g, '_')
    .replace(/^[^a-z]+/, '');
  return name.slice(0, 64) || 'imported';
}

export type CsvObjectOptions = Omit<FormOptions, 'columns' | 'timeColumn'> & {
  /** The time column; by default the first timestamp column. */
  readonly timeColumn?: string;
  readonly rowGroupRows?: number;
  /** Rows written so far, after each row group. */
  readonly progress?: (rows: number) => void;
};

/** Both passes: one encrypted object of every row of the CSV, with its columns' inferred types. */
export async function csvObject(
  source: CsvSource,
  options: CsvObjectOptions,
): Promise<Result<FormedObject & { readonly columns: readonly ColumnSpec[] }, CsvImportError>> {
  let inferred: Awaited<ReturnType<typeof inferCsv>>;
  try {
    inferred = await inferCsv(source);
  } catch (e) {
    return err({ type: 'CsvUnreadable', detail: String(e) });
  }
  if (!inferred.ok) return inferred;
  const { columns } = inferred.value;
  const timeColumn = options.timeColumn ?? columns.find((c) => c.type === 'timestamp')?.name;
  const started = await ObjectWriter.start({
    ...options,
    columns,
    ...(timeColumn !== undefined ? { timeColumn } : {}),
  });
  if (!started.ok) return started;
  const groupRows = options.rowGroupRows ?? DEFAULT_ROW_GROUP_ROWS;
  let first = true;
  let rows = 0;
  try {
    for await (const batch of csvBatches(source(), groupRows)) {
      if (!batch.ok) return batch;
      const records = first ? batch.value.slice(1) : batch.value;
      first = false;
      if (records.length === 0) continue;
      // Pass 1 refused ragged rows; one now means the file changed between the passes.
      const ragged = records.find((r) => r.length !== columns.length);
      if (ragged) {
        return err({
          type: 'CsvUnreadable',
          detail: `the file changed while it was imported: a row of ${ragged.length} fields, ${columns.length} in the header`,
        });
      }
      const cells: Record<string, CellValue[]> = {};
      columns.forEach((c, i) => (cells[c.name] = records.map((r) => toCell(c.type, r[i]!))));
      const added = await started.value.add(cells);
      if (!added.ok) return added;
      rows += records.length;
      options.progress?.(rows);
    }
  } catch (e) {
    return err({ type: 'CsvUnreadable', detail: String(e) });
  }
  const formed = await started.value.finish();
  return formed.ok ? ok({ ...formed.value, columns }) : formed;
}

function cellText(value: unknown, timestamp: boolean): string {
  if (value === null || value === undefined) return '';
  if (timestamp && typeof value === 'number') return isoTime(value);
  if (value instanceof Uint8Array) return toHex(value);
  if (value instanceof Date) return isoTime(value.getTime());
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'bigint' || typeof value === 'boolean') return value.toString();
  return JSON.stringify(value, (_, v: unknown) =>
    typeof v === 'bigint' ? v.toString() : v instanceof Uint8Array ? toHex(v) : v,
  );
}

/** Every row of an opened Parquet file as CSV with a header row; timestamps in ISO 8601 (UTC). */
export async function parquetCsv(
  file: ParquetFile,
  options: { readonly columns?: readonly string[]; readonly keepRow?: (rowId: Uint8Array) => boolean } = {},
): Promise<Result<string, Extract<Awaited<ReturnType<ParquetFile['readColumns']>>, { ok: false }>['error']>> {
  const names = options.columns ?? [...new Set(file.columns.map((c) => c.name))];
  // Rows a delete hides are dropped by their identity, read for that even when not written out.
  const reads = options.keepRow && !names.includes(ROW_ID_COLUMN) ? [...names, ROW_ID_COLUMN] : names;
  const columns = await file.readColumns({ columns: reads });
  if (!columns.ok) return columns;
  if (options.keepRow) keepRows(columns.value, options.keepRow);
  const timestamps = new Set(
    file.metadata.schema
      .filter(
        (e) => e.logical_type?.type === 'TIMESTAMP' || e.converted_type?.startsWith('TIMESTAMP') || e.type === 'INT96',
      )
      .map((e) => e.name),
  );
  const values = names.map((n) => columns.value[n]!);
  const stamped = names.map((n) => timestamps.has(n));
  const count = values[0]?.length ?? 0;
  const out: string[] = [csvRecord(names)];
  for (let i = 0; i < count; i++) out.push(csvRecord(values.map((v, c) => cellText(v[i], stamped[c]!))));
  return ok(out.join(''));
}
