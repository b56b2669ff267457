/**
 * Plain (unencrypted) files of the public parquet-testing corpus
 * (shared/vectors/parquet-testing-all/data; what each holds is in its README.md) read
 * through our reader, where they showed a fault of ours: binary read as text, a file of
 * no rows refused.
 */
import { readFileSync } from 'node:fs';
import { expect, it } from 'vitest';
import { toHex } from '../../src/core/bytes.js';
import { openParquet } from '../../src/core/parquet/read.js';
import { webPmeCipher } from '../../src/runtime/pme-cipher.js';
import { describeVectors, vectorPath } from '../helpers/vectors.js';

const DIR = 'parquet-testing-all/data';

async function columnsOf(name: string): Promise<Record<string, unknown[]>> {
  const file = await openParquet(new Uint8Array(readFileSync(vectorPath(`${DIR}/${name}`))), {}, webPmeCipher);
  if (!file.ok) throw new Error(`${name}: ${file.error.type}`);
  const columns = await file.value.readColumns();
  if (!columns.ok) throw new Error(`${name}: ${columns.error.type}`);
  return Object.fromEntries(Object.entries(columns.value).map(([k, v]) => [k, Array.from(v as ArrayLike<unknown>)]));
}

describeVectors('the parquet-testing corpus, plain files', DIR, () => {
  it('binary.parquet: an unannotated BYTE_ARRAY stays bytes (0x00 … 0x0b), not text', async () => {
    const foo = (await columnsOf('binary.parquet'))['foo']!;
    expect(foo.every((v) => v instanceof Uint8Array)).toBe(true);
    expect(foo.map((v) => toHex(v as Uint8Array))).toEqual(
      Array.from({ length: 12 }, (_, i) => i.toString(16).padStart(2, '0')),
    );
  });

  it('binary_truncated_min_max.parquet: UTF8 columns are text, their BYTE_ARRAY twins the same bytes', async () => {
    const columns = await columnsOf('binary_truncated_min_max.parquet');
    const text = columns['utf8_no_truncation']!;
    const bytes = columns['binary_no_truncation']!;
    expect(text.length).toBeGreaterThan(0);
    expect(typeof text[0]).toBe('string');
    expect(bytes.map((b) => new TextDecoder().decode(b as Uint8Array))).toEqual(text);
  });

  it('column_chunk_key_value_metadata.parquet: a valid file of no rows reads as no rows', async () => {
    const columns = await columnsOf('column_chunk_key_value_metadata.parquet');
    expect(Object.keys(columns)).toEqual(['column1', 'column2']);
    expect(columns['column1']).toEqual([]);
    expect(columns['column2']).toEqual([]);
  });
});
