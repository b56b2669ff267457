/**
 * The column types of Sovereign Mesh objects and how each maps onto Parquet
 * (parquet.thrift `Type`, `ConvertedType`, `LogicalType`). Objects are flat
 * tables: one leaf per column, REQUIRED or OPTIONAL, never repeated.
 *
 *   boolean    BOOLEAN
 *   int32      INT32
 *   int64      INT64                                   values: bigint (or a safe-integer number)
 *   float      FLOAT
 *   double     DOUBLE
 *   string     BYTE_ARRAY, UTF8 / STRING
 *   timestamp  INT64, TIMESTAMP_MILLIS / TIMESTAMP(MILLIS, UTC)   values: integer ms since the epoch
 *   rowid      FIXED_LEN_BYTE_ARRAY(16)                the stable row identity (SOP/1)
 */
import { err, ok, type Result } from '../result.js';

export type ColumnType = 'boolean' | 'int32' | 'int64' | 'float' | 'double' | 'string' | 'timestamp' | 'rowid';

export const COLUMN_TYPES: readonly ColumnType[] = [
  'boolean',
  'int32',
  'int64',
  'float',
  'double',
  'string',
  'timestamp',
  'rowid',
];

export type ColumnSpec = { readonly name: string; readonly type: ColumnType; readonly nullable: boolean };

/** The row-identity column every object carries: 8 bytes naming the rows' origin ‖ u64 BE row ordinal. */
export const ROW_ID_COLUMN = '_row_id';
export const ROW_ID_BYTES = 16;

/** A value of one cell as the writer accepts it and the reader returns it. */
export type CellValue = boolean | number | bigint | string | Uint8Array | null;

export type SchemaError = { readonly type: 'InvalidSchema'; readonly detail: string };

const NAME = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;
export const MAX_COLUMNS = 256;

/** Checks a schema: unique, well-formed names; known types; at most MAX_COLUMNS columns. */
export function checkSchema(columns: readonly ColumnSpec[]): Result<readonly ColumnSpec[], SchemaError> {
  if (columns.length === 0) return err({ type: 'InvalidSchema', detail: 'no columns' });
  if (columns.length > MAX_COLUMNS) return err({ type: 'InvalidSchema', detail: `more than ${MAX_COLUMNS} columns` });
  const seen = new Set<string>();
  for (const c of columns) {
    if (!NAME.test(c.name)) return err({ type: 'InvalidSchema', detail: `column name ${JSON.stringify(c.name)}` });
    // Rows are plain objects keyed by column name: this one would set an object's prototype.
    if (c.name === '__proto__') return err({ type: 'InvalidSchema', detail: 'column name __proto__ is reserved' });
    if (seen.has(c.name)) return err({ type: 'InvalidSchema', detail: `column ${c.name} appears twice` });
    if (!COLUMN_TYPES.includes(c.type)) return err({ type: 'InvalidSchema', detail: `column ${c.name}: type` });
    seen.add(c.name);
  }
  return ok(columns);
}

/** Physical type numbers (parquet.thrift `Type`). */
export const PHYSICAL = {
  BOOLEAN: 0,
  INT32: 1,
  INT64: 2,
  INT96: 3,
  FLOAT: 4,
  DOUBLE: 5,
  BYTE_ARRAY: 6,
  FIXED_LEN_BYTE_ARRAY: 7,
} as const;

export type PhysicalName = keyof typeof PHYSICAL;

export function physicalOf(type: ColumnType): PhysicalName {
  switch (type) {
    case 'boolean':
      return 'BOOLEAN';
    case 'int32':
      return 'INT32';
    case 'int64':
    case 'timestamp':
      return 'INT64';
    case 'float':
      return 'FLOAT';
    case 'double':
      return 'DOUBLE';
    case 'string':
      return 'BYTE_ARRAY';
    case 'rowid':
      return 'FIXED_LEN_BYTE_ARRAY';
  }
}
