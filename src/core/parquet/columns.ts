/**
 * One column chunk's values, checked and turned into Parquet physical form:
 * definition levels, the non-null values in a typed array (or the strings, or
 * packed fixed-width bytes), their PLAIN encoding, the chunk statistics
 * (min/max in the column's sort order, null count) and, for strings that
 * repeat, a dictionary.
 *
 * Statistics follow parquet.thrift `Statistics` with TYPE_ORDER column orders:
 * signed order for integers and timestamps, IEEE order for floats with NaN
 * left out and -0/+0 widened (min -0, max +0), unsigned byte order (= UTF-8
 * code point order) for strings and row ids.
 *
 * Hot path of every import: one pass per column, no object per value, strings
 * encoded to UTF-8 once (each distinct one only, when a dictionary is used).
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

/** A statistics bound: a value, never null (an all-null chunk has no bounds). */
export type Bound = Exclude<CellValue, null>;

export type ChunkStats = {
  readonly nulls: number;
  readonly min: Bound | undefined;
  readonly max: Bound | undefined;
  /** Plain-encoded bounds for the footer. */
  readonly minBytes: Uint8Array | undefined;
  readonly maxBytes: Uint8Array | undefined;
};

/** Non-null values in physical form. */
export type Values =
  | { readonly kind: 'fixed'; readonly width: number; readonly bytes: Uint8Array }
  | { readonly kind: 'bool'; readonly data: Uint8Array }
  | { readonly kind: 'strings'; readonly data: readonly string[] };

export type PreparedColumn = {
  readonly spec: ColumnSpec;
  readonly rows: number;
  /** 1 = value present, 0 = null; empty for a REQUIRED column. */
  readonly levels: Uint8Array;
  /** How many values are present. */
  readonly count: number;
  readonly values: Values;
  /** Dictionary entries (UTF-8) and one index per non-null value, when it pays. */
  readonly dictionary?: { readonly entries: readonly Uint8Array[]; readonly indexes: Uint32Array };
  readonly stats: ChunkStats;
};

/** Packed fixed-width cells (row ids), all present: `bytes.length / width` of them. */
export type PackedCells = { readonly packed: Uint8Array; readonly width: number };

export type ColumnCells = readonly CellValue[] | PackedCells;

const LITTLE_ENDIAN = new Uint8Array(Uint16Array.of(1).buffer)[0] === 1;
const TWO_32 = 2 ** 32;
const INT32_MIN = -(2 ** 31);
const INT32_MAX = 2 ** 31 - 1;
const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

/** Plain encoding of one value (parquet Encodings.md PLAIN), as Statistics bounds are written. */
export function plainBound(spec: ColumnSpec, value: Bound): Uint8Array {
  if (value instanceof Uint8Array) return value;
  if (typeof value === 'string') return utf8(value);
  if (typeof value === 'boolean') return Uint8Array.of(value ? 1 : 0);
  const out = new Uint8Array(spec.type === 'int32' || spec.type === 'float' ? 4 : 8);
  const view = new DataView(out.buffer);
  if (spec.type === 'int32') view.setInt32(0, value as number, true);
  else if (spec.type === 'float') view.setFloat32(0, value as number, true);
  else if (spec.type === 'double') view.setFloat64(0, value as number, true);
  else view.setBigInt64(0, BigInt(value), true);
  return out;
}

/**
 * Code point order of two strings, which is their UTF-8 byte order (UTF-16 `<` misorders astral
 * characters). A lone surrogate counts as its own code point, as the string iterator yields it.
 */
export function compareStrings(a: string, b: string): number {
  if (a === b) return 0;
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a.charCodeAt(i) === b.charCodeAt(i)) i++;
  if (i === n) return a.length - b.length;
  // The code points before i are equal. If the unit before i is a high surrogate that pairs
  // with the unit at i in either string, the first differing code point starts one unit back;
  // otherwise it starts at i (where the units, so the code points, differ).
  const pairs = i > 0 && isHigh(a.charCodeAt(i - 1)) && (isLow(a.charCodeAt(i)) || isLow(b.charCodeAt(i)));
  const at = pairs ? i - 1 : i;
  return a.codePointAt(at)! - b.codePointAt(at)!;
}

const isHigh = (c: number): boolean => c >= 0xd800 && c <= 0xdbff;
const isLow = (c: number): boolean => c >= 0xdc00 && c <= 0xdfff;

/** Whether a string is UTF-16 that UTF-8 can hold as it is (no lone surrogate). ES2024, in every supported engine. */
const wellFormed = (s: string): boolean => (s as string & { isWellFormed(): boolean }).isWellFormed();

type Bad = (row: number, detail: string) => Result<never, ValueError>;

/** Walks the cells once: levels, null count, and `take(cell, row)` for each present one. */
function walk(
  spec: ColumnSpec,
  cells: readonly CellValue[],
  levels: Uint8Array,
  take: (cell: CellValue, row: number) => string | undefined,
): Result<{ nulls: number; count: number }, ValueError> {
  let nulls = 0;
  let count = 0;
  for (let row = 0; row < cells.length; row++) {
    const cell = cells[row];
    if (cell === null || cell === undefined) {
      if (!spec.nullable)
        return err({ type: 'InvalidValue', column: spec.name, row, detail: 'null in a required column' });
      nulls++;
      continue;
    }
    const problem = take(cell, row);
    if (problem !== undefined) return err({ type: 'InvalidValue', column: spec.name, row, detail: problem });
    if (spec.nullable) levels[row] = 1;
    count++;
  }
  return ok({ nulls, count });
}

function stats(spec: ColumnSpec, nulls: number, min: Bound | undefined, max: Bound | undefined): ChunkStats {
  if (typeof min === 'number' && min === 0) min = -0;
  if (typeof max === 'number' && max === 0) max = 0;
  return {
    nulls,
    min,
    max,
    minBytes: min === undefined ? undefined : plainBound(spec, min),
    maxBytes: max === undefined ? undefined : plainBound(spec, max),
  };
}

/** Numbers into a little-endian typed buffer; int64 and timestamps as two's complement pairs. */
function numeric(
  spec: ColumnSpec,
  cells: readonly CellValue[],
  levels: Uint8Array,
): Result<PreparedColumn, ValueError> {
  const width = spec.type === 'int32' || spec.type === 'float' ? 4 : 8;
  const buffer = new ArrayBuffer(cells.length * width);
  const f64 = spec.type === 'double' ? new Float64Array(buffer) : undefined;
  const f32 = spec.type === 'float' ? new Float32Array(buffer) : undefined;
  const i32 = spec.type === 'int32' ? new Int32Array(buffer) : undefined;
  const pairs = spec.type === 'int64' || spec.type === 'timestamp' ? new Uint32Array(buffer) : undefined;
  let at = 0;
  let min: number | bigint | undefined;
  let max: number | bigint | undefined;
  const track = (v: number | bigint): void => {
    if (min === undefined || v < min) min = v;
    if (max === undefined || v > max) max = v;
  };
  const walked = walk(spec, cells, levels, (cell) => {
    if (spec.type === 'int64' && typeof cell === 'bigint') {
      if (cell < INT64_MIN || cell > INT64_MAX) return 'expected a 64-bit integer';
      pairs![at * 2] = Number(cell & 0xffffffffn);
      pairs![at * 2 + 1] = Number((cell >> 32n) & 0xffffffffn);
      at++;
      track(cell);
      return undefined;
    }
    if (typeof cell !== 'number') {
      return spec.type === 'int64'
        ? 'expected a 64-bit integer'
        : spec.type === 'timestamp'
          ? 'expected integer milliseconds since the epoch'
          : spec.type === 'int32'
            ? 'expected a 32-bit integer'
            : 'expected a number';
    }
    if (f64) {
      f64[at++] = cell;
      if (cell === cell) track(cell);
    } else if (f32) {
      f32[at] = cell;
      const stored = f32[at++]!;
      if (stored === stored) track(stored);
    } else if (i32) {
      if (!Number.isInteger(cell) || cell < INT32_MIN || cell > INT32_MAX) return 'expected a 32-bit integer';
      i32[at++] = cell;
      track(cell);
    } else {
      if (!Number.isSafeInteger(cell))
        return spec.type === 'timestamp'
          ? 'expected integer milliseconds since the epoch'
          : 'expected a 64-bit integer';
      const hi = Math.floor(cell / TWO_32);
      pairs![at * 2] = cell - hi * TWO_32;
      pairs![at * 2 + 1] = hi >>> 0;
      at++;
      track(cell);
    }
    return undefined;
  });
  if (!walked.ok) return walked;
  if (!LITTLE_ENDIAN) throw new Error('parquet: big-endian platforms are not supported');
  const logical = (v: number | bigint | undefined) =>
    v === undefined ? undefined : spec.type === 'int64' ? BigInt(v) : v;
  return ok({
    spec,
    rows: cells.length,
    levels,
    count: walked.value.count,
    values: { kind: 'fixed', width, bytes: new Uint8Array(buffer, 0, walked.value.count * width) },
    stats: stats(spec, walked.value.nulls, logical(min), logical(max)),
  });
}

function booleans(
  spec: ColumnSpec,
  cells: readonly CellValue[],
  levels: Uint8Array,
): Result<PreparedColumn, ValueError> {
  const data = new Uint8Array(cells.length);
  let at = 0;
  let seen = 0;
  const walked = walk(spec, cells, levels, (cell) => {
    if (typeof cell !== 'boolean') return 'expected a boolean';
    data[at++] = cell ? 1 : 0;
    seen |= cell ? 2 : 1;
    return undefined;
  });
  if (!walked.ok) return walked;
  const min = seen === 0 ? undefined : (seen & 1) === 0;
  const max = seen === 0 ? undefined : (seen & 2) !== 0;
  return ok({
    spec,
    rows: cells.length,
    levels,
    count: walked.value.count,
    values: { kind: 'bool', data: data.subarray(0, at) },
    stats: stats(spec, walked.value.nulls, min, max),
  });
}

/** Dictionary-encode strings when the distinct ones take at most half the bytes of all of them (lengths estimated in UTF-16 units). */
function dictionaryOf(texts: readonly string[]): PreparedColumn['dictionary'] {
  let total = 0;
  for (const t of texts) total += t.length + 4;
  const byText = new Map<string, number>();
  const distinctTexts: string[] = [];
  const indexes = new Uint32Array(texts.length);
  let distinct = 0;
  for (let i = 0; i < texts.length; i++) {
    const text = texts[i]!;
    let index = byText.get(text);
    if (index === undefined) {
      index = distinctTexts.length;
      byText.set(text, index);
      distinctTexts.push(text);
      distinct += text.length + 4;
      if (distinct * 2 > total) return undefined;
    }
    indexes[i] = index;
  }
  return { entries: distinctTexts.map(utf8), indexes };
}

function strings(
  spec: ColumnSpec,
  cells: readonly CellValue[],
  levels: Uint8Array,
): Result<PreparedColumn, ValueError> {
  const data: string[] = [];
  let min: string | undefined;
  let max: string | undefined;
  const walked = walk(spec, cells, levels, (cell) => {
    if (typeof cell !== 'string') return 'expected a string';
    // UTF-8 would store a lone surrogate as U+FFFD: the value read back would differ from the
    // one written, and the statistics (taken from the strings) would not bound the bytes.
    if (!wellFormed(cell)) return 'expected text (a lone surrogate is not a character)';
    data.push(cell);
    if (min === undefined || (cell !== min && compareStrings(cell, min) < 0)) min = cell;
    if (max === undefined || (cell !== max && compareStrings(cell, max) > 0)) max = cell;
    return undefined;
  });
  if (!walked.ok) return walked;
  const dictionary = data.length > 0 ? dictionaryOf(data) : undefined;
  return ok({
    spec,
    rows: cells.length,
    levels,
    count: walked.value.count,
    values: { kind: 'strings', data },
    ...(dictionary ? { dictionary } : {}),
    stats: stats(spec, walked.value.nulls, min, max),
  });
}

function rowIds(
  spec: ColumnSpec,
  cells: ColumnCells,
  levels: Uint8Array,
  bad: Bad,
): Result<PreparedColumn, ValueError> {
  if (!Array.isArray(cells)) {
    const { packed, width } = cells as PackedCells;
    if (width !== ROW_ID_BYTES || packed.length % width !== 0) return bad(0, `expected ${ROW_ID_BYTES}-byte row ids`);
    const rows = packed.length / width;
    let min: Uint8Array | undefined;
    let max: Uint8Array | undefined;
    for (let r = 0; r < rows; r++) {
      const id = packed.subarray(r * width, (r + 1) * width);
      if (!min || compareBytes(id, min) < 0) min = id;
      if (!max || compareBytes(id, max) > 0) max = id;
    }
    return ok({
      spec,
      rows,
      levels,
      count: rows,
      values: { kind: 'fixed', width, bytes: packed },
      stats: stats(spec, 0, min?.slice(), max?.slice()),
    });
  }
  const list = cells as readonly CellValue[];
  const bytes = new Uint8Array(list.length * ROW_ID_BYTES);
  let at = 0;
  let min: Uint8Array | undefined;
  let max: Uint8Array | undefined;
  const walked = walk(spec, list, levels, (cell) => {
    if (!(cell instanceof Uint8Array) || cell.length !== ROW_ID_BYTES) return `expected ${ROW_ID_BYTES} bytes`;
    bytes.set(cell, at);
    at += ROW_ID_BYTES;
    if (!min || compareBytes(cell, min) < 0) min = cell;
    if (!max || compareBytes(cell, max) > 0) max = cell;
    return undefined;
  });
  if (!walked.ok) return walked;
  return ok({
    spec,
    rows: list.length,
    levels,
    count: walked.value.count,
    values: { kind: 'fixed', width: ROW_ID_BYTES, bytes: bytes.subarray(0, at) },
    stats: stats(spec, walked.value.nulls, min, max),
  });
}

/** The number of rows the cells hold. */
export function cellCount(cells: ColumnCells): number {
  return Array.isArray(cells) ? cells.length : (cells as PackedCells).packed.length / (cells as PackedCells).width;
}

/** Checks and converts one column of a row group. */
export function prepareColumn(spec: ColumnSpec, cells: ColumnCells): Result<PreparedColumn, ValueError> {
  const levels = spec.nullable ? new Uint8Array(cellCount(cells)) : new Uint8Array(0);
  const bad: Bad = (row, detail) => err({ type: 'InvalidValue', column: spec.name, row, detail });
  if (spec.type === 'rowid') return rowIds(spec, cells, levels, bad);
  if (!Array.isArray(cells)) return bad(0, 'packed cells are only for row ids');
  const list = cells as readonly CellValue[];
  if (spec.type === 'boolean') return booleans(spec, list, levels);
  if (spec.type === 'string') return strings(spec, list, levels);
  return numeric(spec, list, levels);
}

export const EMPTY_STATS: ChunkStats = {
  nulls: 0,
  min: undefined,
  max: undefined,
  minBytes: undefined,
  maxBytes: undefined,
};

/** Orders two logical values of one column as its statistics do. */
export function compareCells(a: Bound, b: Bound): number {
  if (typeof a === 'string' && typeof b === 'string') return compareStrings(a, b);
  if (a instanceof Uint8Array && b instanceof Uint8Array) return compareBytes(a, b);
  if (typeof a === 'boolean') return Number(a) - Number(b);
  return (a as number) < (b as number) ? -1 : (a as number) > (b as number) ? 1 : 0;
}

/** The statistics of two chunks of one column taken together. */
export function mergeStats(a: ChunkStats, b: ChunkStats): ChunkStats {
  const bMin = b.min !== undefined && (a.min === undefined || compareCells(b.min, a.min) < 0);
  const bMax = b.max !== undefined && (a.max === undefined || compareCells(b.max, a.max) > 0);
  return {
    nulls: a.nulls + b.nulls,
    min: bMin ? b.min : a.min,
    max: bMax ? b.max : a.max,
    minBytes: bMin ? b.minBytes : a.minBytes,
    maxBytes: bMax ? b.maxBytes : a.maxBytes,
  };
}
