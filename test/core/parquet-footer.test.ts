/**
 * The tail of a Parquet file (core/parquet/footer.ts): magic at both ends, the footer
 * length, FileCryptoMetaData and its algorithm union, signed plaintext footers (the
 * signature computed here with @noble/ciphers' GCM, not with the code under test), and the
 * ColumnMetaData a column key seals apart. Files are assembled byte by byte with the Thrift
 * writer, so each refusal is reached on its own and compared word for word.
 */
import { gcm } from '@noble/ciphers/aes.js';
import { describe, expect, it } from 'vitest';
import { columnMetaOf, readTail, type ReadKeys } from '../../src/core/parquet/footer.js';
import { encodeStruct, T, type Field } from '../../src/core/parquet/thrift.js';
import { webPmeCipher } from '../../src/runtime/pme-cipher.js';

const PAR1 = [0x50, 0x41, 0x52, 0x31];
const PARE = [0x50, 0x41, 0x52, 0x45];
const le32 = (n: number) => [n & 0xff, (n >> 8) & 0xff, (n >> 16) & 0xff, (n >>> 24) & 0xff];
const file = (magic: number[], footer: Uint8Array, tail = magic) =>
  Uint8Array.from([...magic, 0, 0, ...footer, ...le32(footer.length), ...tail]);
const tail = (bytes: Uint8Array, keys: ReadKeys = {}) => readTail(bytes, keys, webPmeCipher);

const unique = Uint8Array.of(9, 8, 7, 6, 5, 4, 3, 2);
const gcmV1 = (fields: Field[] = [[2, T.BINARY, unique]]): Field => [8, T.STRUCT, [[1, T.STRUCT, fields]]];
/** FileMetaData's bytes as far as the tail reads them: a version, and the algorithm (field 8) when signed. */
const metadata = (...extra: Field[]) => encodeStruct([[1, T.I32, 2], ...extra]);

describe('the file tail', () => {
  it('refuses files too short, without magic, cut, or with a footer longer than the file', async () => {
    expect(await tail(new Uint8Array(11))).toEqual({
      ok: false,
      error: { type: 'Truncated', detail: 'shorter than magic, footer length and magic' },
    });
    const footer = metadata();
    expect(await tail(file([1, 2, 3, 4], footer))).toEqual({
      ok: false,
      error: { type: 'NotParquet', detail: 'no Parquet magic' },
    });
    for (const magic of [PAR1, PARE]) {
      expect(await tail(file(magic, footer, [0, 0, 0, 0]))).toEqual({
        ok: false,
        error: { type: 'Truncated', detail: 'closing magic missing' },
      });
    }
    expect(await tail(file(PARE, footer, PAR1))).toEqual({
      ok: false,
      error: { type: 'Truncated', detail: 'closing magic missing' },
    });
    const long = file(PAR1, footer);
    long.set(le32(footer.length + 3), long.length - 8);
    expect(await tail(long)).toEqual({
      ok: false,
      error: { type: 'Truncated', detail: `footer of ${footer.length + 3} bytes exceeds the file` },
    });
  });

  it('reads a plaintext footer as it is', async () => {
    const footer = metadata();
    expect(await tail(file(PAR1, footer))).toEqual({ ok: true, value: { footer, mode: 'plaintext' } });
  });

  it('checks a signed plaintext footer’s signature when the footer key is given', async () => {
    const key = new Uint8Array(16).fill(5);
    const footer = metadata(gcmV1());
    const nonce = new Uint8Array(12).fill(2);
    const aad = Uint8Array.from([...unique, 0]); // no prefix ‖ file unique ‖ module type FOOTER
    const tag = gcm(key, nonce, aad).encrypt(footer).subarray(footer.length);
    const signed = file(PAR1, Uint8Array.from([...footer, ...nonce, ...tag]));
    const read = {
      footer,
      mode: 'signed',
      algorithm: 'AES_GCM_V1',
      aad: { prefix: new Uint8Array(0), fileUnique: unique },
    };
    expect(await tail(signed, { footerKey: key })).toEqual({ ok: true, value: read });
    // Without the key the footer is read unchecked, as the specification allows.
    expect(await tail(signed)).toEqual({ ok: true, value: read });
    expect(await tail(signed, { footerKey: new Uint8Array(16).fill(6) })).toEqual({
      ok: false,
      error: { type: 'FooterSignatureInvalid' },
    });
    expect(await tail(signed, { footerKey: new Uint8Array(15) })).toEqual({
      ok: false,
      error: { type: 'KeyInvalid', column: '(footer)' },
    });
    const short = file(PAR1, Uint8Array.from([...footer, ...nonce, ...tag.subarray(1)]));
    expect(await tail(short)).toEqual({
      ok: false,
      error: { type: 'Malformed', detail: 'plaintext footer signature is not 28 bytes' },
    });
  });

  it('refuses an unknown algorithm, or one without aad_file_unique unless reading DuckDB’s files', async () => {
    const unknown = file(
      PAR1,
      Uint8Array.from([...metadata([8, T.STRUCT, [[3, T.STRUCT, []]]]), ...new Uint8Array(28)]),
    );
    expect(await tail(unknown)).toEqual({
      ok: false,
      error: { type: 'Unsupported', detail: 'unknown encryption algorithm' },
    });
    // FileCryptoMetaData { 1: AES_GCM_V1 {} }: no aad_file_unique.
    const crypto = encodeStruct([[1, T.STRUCT, [[1, T.STRUCT, []]]]]);
    const noUnique = file(PARE, Uint8Array.from([...crypto, ...le32(28), ...new Uint8Array(28)]));
    expect(await tail(noUnique, { footerKey: new Uint8Array(16) })).toEqual({
      ok: false,
      error: {
        type: 'Malformed',
        detail: 'encryption algorithm without aad_file_unique (as DuckDB writes; readable only with duckdbNoAad)',
      },
    });
    // With duckdbNoAad the footer is opened with no AAD: here the all-zero module fails to decrypt.
    expect(await tail(noUnique, { footerKey: new Uint8Array(16), duckdbNoAad: true })).toEqual({
      ok: false,
      error: { type: 'DecryptFailed', module: 'footer' },
    });
    expect(await tail(noUnique)).toEqual({
      ok: false,
      error: {
        type: 'Malformed',
        detail: 'encryption algorithm without aad_file_unique (as DuckDB writes; readable only with duckdbNoAad)',
      },
    });
  });
});

describe('sealed column metadata', () => {
  const path = [new TextEncoder().encode('a'), new TextEncoder().encode('b')];
  const full: Record<string, unknown> = {
    field_1: 1, // INT32
    field_2: [0, 8], // PLAIN, RLE_DICTIONARY
    field_3: path,
    field_4: 1, // SNAPPY
    field_5: 10,
    field_6: 300n,
    field_7: 200n,
    field_9: 4n,
    field_11: 100,
  };

  it('decodes every field it needs, numbers as bigints', () => {
    expect(columnMetaOf(full)).toEqual({
      ok: true,
      value: {
        type: 'INT32',
        encodings: ['PLAIN', 'RLE_DICTIONARY'],
        path_in_schema: ['a', 'b'],
        codec: 'SNAPPY',
        num_values: 10n,
        total_uncompressed_size: 300n,
        total_compressed_size: 200n,
        data_page_offset: 4n,
        dictionary_page_offset: 100n,
      },
    });
  });

  it('leaves out what is optional: encodings, uncompressed size, dictionary offset', () => {
    const rest = Object.fromEntries(
      Object.entries(full).filter(([k]) => !['field_2', 'field_6', 'field_11'].includes(k)),
    );
    expect(columnMetaOf(rest)).toStrictEqual({
      ok: true,
      value: {
        type: 'INT32',
        encodings: [],
        path_in_schema: ['a', 'b'],
        codec: 'SNAPPY',
        num_values: 10n,
        total_uncompressed_size: 0n,
        total_compressed_size: 200n,
        data_page_offset: 4n,
      },
    });
  });

  it.each(['field_1', 'field_3', 'field_4', 'field_5', 'field_7', 'field_9'])('refuses one without %s', (field) => {
    expect(columnMetaOf({ ...full, [field]: undefined })).toEqual({
      ok: false,
      error: { type: 'Malformed', detail: 'ColumnMetaData lacks a required field' },
    });
  });

  it('refuses an unknown type or codec, a path that is no list, and counts that are not whole numbers', () => {
    for (const bad of [{ field_1: 99 }, { field_4: 99 }, { field_3: 'a.b' }, { field_5: 1.5 }, { field_9: '4' }]) {
      expect(columnMetaOf({ ...full, ...bad }).ok, JSON.stringify(bad)).toBe(false);
    }
  });
});
