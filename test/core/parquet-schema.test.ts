/**
 * The column schema every object is written under (core/parquet/schema.ts): `checkSchema`'s
 * refusals word for word, the column-count limit at its edge, and each column type's
 * Parquet physical type (parquet.thrift `Type`), which readers elsewhere depend on.
 */
import { describe, expect, it } from 'vitest';
import {
  checkSchema,
  COLUMN_TYPES,
  MAX_COLUMNS,
  physicalOf,
  type ColumnSpec,
  type ColumnType,
} from '../../src/core/parquet/schema.js';

const col = (name: string, type: ColumnType = 'int32'): ColumnSpec => ({ name, type, nullable: true });
const many = (n: number) => Array.from({ length: n }, (_, i) => col(`c${i}`));
const refusal = (columns: readonly ColumnSpec[]) => {
  const checked = checkSchema(columns);
  return checked.ok ? 'accepted' : checked.error;
};

describe('checkSchema', () => {
  it('accepts up to MAX_COLUMNS well-formed, distinct, typed columns', () => {
    expect(checkSchema(many(MAX_COLUMNS))).toEqual({ ok: true, value: many(MAX_COLUMNS) });
    expect(checkSchema(COLUMN_TYPES.map((t) => col(`x_${t}`, t))).ok).toBe(true);
  });

  it.each<[string, readonly ColumnSpec[], string]>([
    ['none', [], 'no columns'],
    ['one too many', many(MAX_COLUMNS + 1), `more than ${MAX_COLUMNS} columns`],
    ['a name with a space', [col('a b')], 'column name "a b"'],
    ['a name of 65 characters', [col('a'.repeat(65))], `column name "${'a'.repeat(65)}"`],
    ['a name starting with a digit', [col('1a')], 'column name "1a"'],
    ['__proto__', [col('__proto__')], 'column name __proto__ is reserved'],
    ['a name twice', [col('a'), col('b'), col('a', 'string')], 'column a appears twice'],
    ['an unknown type', [col('a', 'decimal' as ColumnType)], 'column a: type'],
  ])('refuses %s', (_, columns, detail) => {
    expect(refusal(columns)).toEqual({ type: 'InvalidSchema', detail });
  });
});

describe('physicalOf', () => {
  it('stores each column type in its Parquet physical type', () => {
    expect(Object.fromEntries(COLUMN_TYPES.map((t) => [t, physicalOf(t)]))).toEqual({
      boolean: 'BOOLEAN',
      int32: 'INT32',
      int64: 'INT64',
      timestamp: 'INT64',
      float: 'FLOAT',
      double: 'DOUBLE',
      string: 'BYTE_ARRAY',
      rowid: 'FIXED_LEN_BYTE_ARRAY',
    });
  });
});
