/**
 * One column chunk's values, checked and turned into Parquet physical form:
 * definition levels, the non-null physical values, the chunk statistics
 * (min/max in the column's sort order, null count) and, for strings that
 * repeat, a dictionary.
 *
 * Statistics follow parquet.thrift `Statistics` with TYPE_ORDER column orders:
 * signed order for integers and timestamps, IEEE order for floats with NaN
 * left out and -0/+0 widened (min -0, max +0), unsigned byte order (= UTF-8
 * code point order) for strings and row ids.
 */
import { compareBytes, utf8 } from '../bytes.js';
import { err, ok, type Result } from '../result.js';
import { ROW_ID_BYTES, type CellValue, type ColumnSpec } from './schema.js';

export type ValueError = {
  readonly type: 'InvalidValue';
  readonly column: string;
  readonly row: number;
  readonly detail: string;
};

export type Physical = boolean | number | bigint | Uint8Array;

export type ChunkStats = {
  readonly nulls: number;
  readonly min: CellValue | undefined;
  readonly max: CellValue | undefined;
  /** Plain-encoded bounds for the footer. */
  readonly minBytes: Uint8Array | undefined;
  readonly maxBytes: Uint8Array | undefined;
};

export type PreparedColumn = {
  readonly spec: ColumnSpec;
  readonly rows: number;
  /** 1 = value present, 0 = null; empty for a REQUIRED column. */
  readonly levels: Uint8Array;
  readonly values: readonly Physical[];
  /** Dictionary entries (byte strings) and one index per non-null value, when it pays. */
  readonly dictionary?: { readonly entries: readonly Uint8Array[]; readonly indexes: Uint32Array };
  readonly stats: ChunkStats;
};

const INT32_MIN = -(2 ** 31);
const INT32_MAX = 2 ** 31 - 1;
const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

type Checked = Result<{ physical: Physical; logical: CellValue }, string>;

function check(spec: ColumnSpec, value: CellValue): Checked {
  switch (spec.type) {
    case 'boolean':
      return typeof value === 'boolean' ? ok({ physical: value, logical: value }) : err('expected a boolean');
    case 'int32':
      return typeof value === 'number' && Number.isInteger(value) && value >= INT32_MIN && value <= INT32_MAX
        ? ok({ physical: value, logical: value })
        : err('expected a 32-bit integer');
    case 'int64': {
      const n = typeof value === 'number' && Number.isSafeInteger(value) ? BigInt(value) : value;
      return typeof n === 'bigint' && n >= INT64_MIN && n <= INT64_MAX
        ? ok({ physical: n, logical: n })
        : err('expected a 64-bit integer');
    }
    case 'timestamp':
      return typeof value === 'number' && Number.isSafeInteger(value)
        ? ok({ physical: BigInt(value), logical: value })
        : err('expected integer milliseconds since the epoch');
    case 'float':
    case 'double':
      return typeof value === 'number' ? ok({ physical: value, logical: value }) : err('expected a number');
    case 'string':
      return typeof value === 'string' ? ok({ physical: utf8(value), logical: value }) : err('expected a string');
    case 'rowid':
      return value instanceof Uint8Array && value.length === ROW_ID_BYTES
        ? ok({ physical: value, logical: value })
        : err(`expected ${ROW_ID_BYTES} bytes`);
  }
}

function compare(a: Physical, b: Physical): number {
  if (a instanceof Uint8Array && b instanceof Uint8Array) return compareBytes(a, b);
  if (typeof a === 'boolean') return Number(a) - Number(b);
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Plain encoding of one value (parquet Encodings.md PLAIN), as Statistics bounds are written. */
export function plainBound(spec: ColumnSpec, value: Physical): Uint8Array {
  if (value instanceof Uint8Array) return value;
  if (typeof value === 'boolean') return Uint8Array.of(value ? 1 : 0);
  const out = new Uint8Array(spec.type === 'int32' || spec.type === 'float' ? 4 : 8);
  const view = new DataView(out.buffer);
  if (spec.type === 'int32') view.setInt32(0, value as number, true);
  else if (spec.type === 'float') view.setFloat32(0, value as number, true);
  else if (spec.type === 'double') view.setFloat64(0, value as number, true);
  else view.setBigInt64(0, value as bigint, true);
  return out;
}

/** Dictionary-encode strings when the distinct ones take at most half the bytes of all of them. */
function dictionaryOf(texts: readonly string[], values: readonly Physical[]): PreparedColumn['dictionary'] {
  let total = 0;
  for (const v of values) total += (v as Uint8Array).length + 4;
  const byText = new Map<string, number>();
  const entries: Uint8Array[] = [];
  const indexes = new Uint32Array(values.length);
  let distinct = 0;
  for (let i = 0; i < texts.length; i++) {
    let index = byText.get(texts[i]!);
    if (index === undefined) {
      index = entries.length;
      const bytes = values[i] as Uint8Array;
      byText.set(texts[i]!, index);
      entries.push(bytes);
      distinct += bytes.length + 4;
      if (distinct * 2 > total) return undefined;
    }
    indexes[i] = index;
  }
  return { entries, indexes };
}

/** Checks and converts one column of a row group. */
export function prepareColumn(spec: ColumnSpec, cells: readonly CellValue[]): Result<PreparedColumn, ValueError> {
  const levels = spec.nullable ? new Uint8Array(cells.length) : new Uint8Array(0);
  const values: Physical[] = [];
  const texts: string[] = [];
  let nulls = 0;
  let min: { physical: Physical; logical: CellValue } | undefined;
  let max: { physical: Physical; logical: CellValue } | undefined;
  for (let row = 0; row < cells.length; row++) {
    const cell = cells[row];
    if (cell === null || cell === undefined) {
      if (!spec.nullable)
        return err({ type: 'InvalidValue', column: spec.name, row, detail: 'null in a required column' });
      nulls++;
      continue;
    }
    const checked = check(spec, cell);
    if (!checked.ok) return err({ type: 'InvalidValue', column: spec.name, row, detail: checked.error });
    if (spec.nullable) levels[row] = 1;
    const { physical } = checked.value;
    values.push(physical);
    if (typeof cell === 'string') texts.push(cell);
    if (typeof physical === 'number' && Number.isNaN(physical)) continue;
    if (!min || compare(physical, min.physical) < 0) min = checked.value;
    if (!max || compare(physical, max.physical) > 0) max = checked.value;
  }
  if (min && typeof min.physical === 'number' && min.physical === 0) min = { physical: -0, logical: -0 };
  if (max && typeof max.physical === 'number' && max.physical === 0) max = { physical: 0, logical: 0 };
  const dictionary = spec.type === 'string' && values.length > 0 ? dictionaryOf(texts, values) : undefined;
  return ok({
    spec,
    rows: cells.length,
    levels,
    values,
    ...(dictionary ? { dictionary } : {}),
    stats: {
      nulls,
      min: min?.logical,
      max: max?.logical,
      minBytes: min && plainBound(spec, min.physical),
      maxBytes: max && plainBound(spec, max.physical),
    },
  });
}

export const EMPTY_STATS: ChunkStats = {
  nulls: 0,
  min: undefined,
  max: undefined,
  minBytes: undefined,
  maxBytes: undefined,
};

/** Orders two logical values of one column as its statistics do. */
export function compareCells(spec: ColumnSpec, a: CellValue, b: CellValue): number {
  if (typeof a === 'string' && typeof b === 'string') return compareBytes(utf8(a), utf8(b));
  if (spec.type === 'timestamp') return Number(a) - Number(b);
  return compare(a as Physical, b as Physical);
}

/** The statistics of two chunks of one column taken together. */
export function mergeStats(spec: ColumnSpec, a: ChunkStats, b: ChunkStats): ChunkStats {
  const bMin =
    b.min !== undefined &&
    b.min !== null &&
    (a.min === undefined || a.min === null || compareCells(spec, b.min, a.min) < 0);
  const bMax =
    b.max !== undefined &&
    b.max !== null &&
    (a.max === undefined || a.max === null || compareCells(spec, b.max, a.max) > 0);
  return {
    nulls: a.nulls + b.nulls,
    min: bMin ? b.min : a.min,
    max: bMax ? b.max : a.max,
    minBytes: bMin ? b.minBytes : a.minBytes,
    maxBytes: bMax ? b.maxBytes : a.maxBytes,
  };
}
