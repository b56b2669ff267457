/**
 * The Apache parquet-testing encrypted files (shared/vectors/parquet-testing,
 * keys in its KEYS.md) read through our PME reader with the values their
 * generator wrote (Arrow `read_configurations_test.cc`): every mode — uniform,
 * column keys, CTR, signed plaintext footer, stored and supplied AAD prefix —
 * and the refusals: wrong keys, missing keys, missing or wrong prefix, a
 * tampered signed footer. `external_key_material_java` needs a KMS and is out
 * of scope.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { expect, it } from 'vitest';
import { utf8 } from '../../src/core/bytes.js';
import { openParquet, type ReadKeys } from '../../src/core/parquet/read.js';
import { webPmeCipher } from '../../src/runtime/pme-cipher.js';
import { describeVectors, hasVector, vectorPath } from '../helpers/vectors.js';

const DIR = 'parquet-testing/data';
const OUT_OF_SCOPE = 'external_key_material_java.parquet.encrypted';

const KEYS_128: ReadKeys = {
  footerKey: utf8('0123456789012345'),
  columnKeys: new Map([
    ['double_field', utf8('1234567890123450')],
    ['float_field', utf8('1234567890123451')],
  ]),
};
const AES256_COLUMNS = [
  'double_field',
  'float_field',
  'boolean_field',
  'int32_field',
  'ba_field',
  'flba_field',
  'int64_field.list.element',
  'int96_field',
];
const KEYS_256: ReadKeys = {
  footerKey: utf8('01234567890123456789012345678901'),
  columnKeys: new Map(AES256_COLUMNS.map((path, i) => [path, utf8(`1234567890123456789012345678901${i + 2}`)])),
};

type Vector = { readonly file: string; readonly keys: ReadKeys; readonly rows: number };

function vectors(): Vector[] {
  if (!hasVector(DIR)) return [];
  const out: Vector[] = [];
  for (const sub of ['', 'aes256/']) {
    for (const name of readdirSync(vectorPath(DIR + '/' + sub)).filter((f) => f.endsWith('.parquet.encrypted'))) {
      if (name === OUT_OF_SCOPE) continue;
      const base = sub ? KEYS_256 : KEYS_128;
      const keys = name.includes('disable_aad_storage') ? { ...base, aadPrefix: utf8('tester') } : base;
      out.push({ file: sub + name, keys, rows: name.includes('bloom_filter') ? 2000 : 50 });
    }
  }
  return out;
}

const read = (file: string): Uint8Array => new Uint8Array(readFileSync(vectorPath(`${DIR}/${file}`)));

/** The generator's values for row i of the 50-row files. */
function expectedRow(i: number): Record<string, unknown> {
  return {
    boolean_field: i % 2 === 0,
    int32_field: i,
    int64_field: [BigInt(2 * i) * 10n ** 12n, BigInt(2 * i + 1) * 10n ** 12n],
    float_field: Math.fround(i * Math.fround(1.1)),
    double_field: i * 1.1111111,
    // A BYTE_ARRAY without a UTF8/STRING annotation: binary, read as the bytes written.
    ba_field: i % 2 === 0 ? utf8(`parquet${String(i).padStart(3, '0')}`) : null,
    flba_field: new Uint8Array(10).fill(i),
  };
}

describeVectors('parquet-testing encrypted vectors', DIR, () => {
  const all = vectors();

  it('finds the vectors: both key sizes, every mode', () => {
    expect(all.length).toBe(12);
  });

  it.each(all.map((v) => [v.file, v] as const))('%s reads with the generator’s values', async (_, v) => {
    const file = await openParquet(read(v.file), v.keys, webPmeCipher);
    if (!file.ok) throw new Error(JSON.stringify(file.error));
    expect(file.value.rowCount).toBe(v.rows);
    const rows = await file.value.readRows();
    if (!rows.ok) throw new Error(JSON.stringify(rows.error));
    expect(rows.value).toHaveLength(v.rows);
    if (v.file.includes('bloom_filter')) {
      for (const [i, row] of rows.value.entries()) {
        expect(row['int32_field']).toBe(i);
        expect(row['name']).toBe(`name_${i}`);
      }
      return;
    }
    for (const [i, row] of rows.value.entries()) {
      const { int96_field, ...rest } = row;
      expect(rest).toEqual(expectedRow(i));
      expect(typeof int96_field).toBe('number');
    }
    expect(file.value.mode).toBe(v.file.includes('plaintext_footer') ? 'signed' : 'encrypted');
    expect(file.value.algorithm).toBe(v.file.includes('_ctr') ? 'AES_GCM_CTR_V1' : 'AES_GCM_V1');
  });

  it('refuses a wrong footer key, naming the footer', async () => {
    const file = await openParquet(
      read('uniform_encryption.parquet.encrypted'),
      { footerKey: utf8('0123456789012346') },
      webPmeCipher,
    );
    expect(file).toEqual({ ok: false, error: { type: 'DecryptFailed', module: 'footer' } });
  });

  it('asks for the footer key when none is given', async () => {
    const file = await openParquet(read('uniform_encryption.parquet.encrypted'), {}, webPmeCipher);
    expect(file).toEqual({ ok: false, error: { type: 'KeyMissing', column: '(footer)' } });
  });

  it('requires the AAD prefix a file did not store, and refuses a wrong one', async () => {
    const bytes = read('encrypt_columns_and_footer_disable_aad_storage.parquet.encrypted');
    expect(await openParquet(bytes, KEYS_128, webPmeCipher)).toEqual({
      ok: false,
      error: { type: 'AadPrefixRequired' },
    });
    const wrong = await openParquet(bytes, { ...KEYS_128, aadPrefix: utf8('tester2') }, webPmeCipher);
    expect(wrong.ok ? undefined : wrong.error.type).toBe('DecryptFailed');
  });

  it('reads the columns it holds keys for and names the one it does not', async () => {
    const keys: ReadKeys = {
      footerKey: KEYS_128.footerKey!,
      columnKeys: new Map([['float_field', utf8('1234567890123451')]]),
    };
    const file = await openParquet(read('encrypt_columns_and_footer.parquet.encrypted'), keys, webPmeCipher);
    if (!file.ok) throw new Error(JSON.stringify(file.error));
    expect(file.value.columns.find((c) => c.path === 'double_field')?.protection).toBe('column-key');
    const some = await file.value.readColumns({ columns: ['float_field', 'int32_field'] });
    expect(some.ok).toBe(true);
    expect(await file.value.readColumns({ columns: ['double_field'] })).toEqual({
      ok: false,
      error: { type: 'KeyMissing', column: 'double_field' },
    });
  });

  it('refuses a column key that is wrong', async () => {
    const keys: ReadKeys = { ...KEYS_128, columnKeys: new Map([['double_field', utf8('1234567890123451')]]) };
    const file = await openParquet(read('encrypt_columns_and_footer.parquet.encrypted'), keys, webPmeCipher);
    if (!file.ok) throw new Error(JSON.stringify(file.error));
    const column = await file.value.readColumns({ columns: ['double_field'] });
    expect(column.ok ? undefined : column.error.type).toBe('DecryptFailed');
  });

  it('verifies a signed plaintext footer: a wrong key or a changed byte is FooterSignatureInvalid', async () => {
    const bytes = read('encrypt_columns_plaintext_footer.parquet.encrypted');
    const wrongKey = await openParquet(bytes, { ...KEYS_128, footerKey: utf8('0123456789012346') }, webPmeCipher);
    expect(wrongKey).toEqual({ ok: false, error: { type: 'FooterSignatureInvalid' } });
    const length = new DataView(bytes.buffer).getUint32(bytes.length - 8, true);
    const changed = bytes.slice();
    // A byte inside the footer's created_by string: still valid thrift, no longer what was signed.
    const createdBy = new TextDecoder('latin1').decode(changed).lastIndexOf('parquet-cpp');
    expect(createdBy).toBeGreaterThan(bytes.length - 8 - length);
    changed[createdBy] = changed[createdBy]! ^ 0x01;
    expect(await openParquet(changed, KEYS_128, webPmeCipher)).toEqual({
      ok: false,
      error: { type: 'FooterSignatureInvalid' },
    });
  });
});
