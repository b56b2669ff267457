/**
 * The encrypted Parquet writer (core/parquet/write.ts) seen from the bytes it writes. A
 * recording cipher keeps every module's AAD and plaintext; the file is walked module by
 * module by their length prefixes, and the footer, page headers and FileCryptoMetaData are
 * decoded field by field, so each size, offset, encoding, statistic and ordinal is compared
 * with what the modules themselves show. Page bodies are checked byte for byte (PLAIN
 * booleans, DELTA_BINARY_PACKED integers across page splits), then read back. Refusals —
 * values, counts, too many pages or row groups, a finished writer — are compared whole.
 */
import { describe, expect, it } from 'vitest';
import { concat, utf8 } from '../../src/core/bytes.js';
import type { Random } from '../../src/core/ports.js';
import { rawStruct, type RawStruct } from '../../src/core/parquet/footer.js';
import { MAX_PAGES_PER_CHUNK, TAG_BYTES, type PmeCipher } from '../../src/core/parquet/modules.js';
import { openParquet } from '../../src/core/parquet/read.js';
import type { CellValue, ColumnSpec, ColumnType } from '../../src/core/parquet/schema.js';
import {
  EncryptedParquetWriter,
  MAX_ROW_GROUPS,
  SNAPPY,
  UNCOMPRESSED,
  writeEncryptedParquet,
  type PageCompression,
  type WriterOptions,
} from '../../src/core/parquet/write.js';
import { webPmeCipher } from '../../src/runtime/pme-cipher.js';
import { seededRandom } from '../helpers/deterministic.js';

const random = seededRandom('parquet-write-paths');
const KEY = random.bytes(16);

type Sealed = { readonly aad: Uint8Array; readonly plain: Uint8Array };

/** WebCrypto AES-GCM that keeps each module's AAD and plaintext, in the order the writer seals them. */
function recordingCipher(): { cipher: PmeCipher; sealed: Sealed[] } {
  const sealed: Sealed[] = [];
  const cipher: PmeCipher = {
    async key(raw) {
      const key = await webPmeCipher.key(raw);
      return {
        ...key,
        gcmEncrypt: (nonce, aad, plain) => {
          sealed.push({ aad: aad.slice(), plain: plain.slice() });
          return key.gcmEncrypt(nonce, aad, plain);
        },
      };
    },
  };
  return { cipher, sealed };
}

/** A stand-in for files of many thousand modules: the plaintext and `tagBytes` zeros (nothing reads it back). */
const cheapCipher = (tagBytes = TAG_BYTES): PmeCipher => ({
  key: async () => ({
    gcmEncrypt: async (_nonce, _aad, plain) => concat(plain, new Uint8Array(tagBytes)),
    gcmDecrypt: async () => undefined,
    ctrDecrypt: async (_counter, ciphertext) => ciphertext,
  }),
});
const zeroRandom: Random = { bytes: (length) => new Uint8Array(length) };

/** The value at a path of thrift field ids (numbers) and list positions (`[i]`) in a decoded struct. */
function pick(value: unknown, ...path: (number | [number])[]): unknown {
  for (const step of path) {
    value = Array.isArray(step) ? (value as unknown[])[step[0]] : (value as RawStruct)[`field_${step}`];
  }
  return value;
}

function decoded(bytes: Uint8Array, what: string): RawStruct {
  const raw = rawStruct(bytes, what);
  if (!raw.ok) throw new Error(JSON.stringify(raw.error));
  return raw.value.value;
}

type Module = Sealed & { readonly at: number; readonly size: number };
type Page = { readonly header: RawStruct; readonly headerModule: Module; readonly body: Module };
type Chunk = { readonly rowGroup: number; readonly column: number; readonly pages: Page[] };

type Written = {
  readonly bytes: Uint8Array;
  readonly footer: RawStruct;
  readonly crypto: RawStruct;
  readonly modules: Module[];
  readonly chunks: Chunk[];
  readonly footerAad: Uint8Array;
};

const le16 = (n: number): number[] => [n & 0xff, n >> 8];

/**
 * Walks the file by module lengths from after the magic to FileCryptoMetaData, pairs each module
 * with what was sealed, and groups page header and page modules into chunks by their AAD ordinals.
 */
function inspect(bytes: Uint8Array, sealed: readonly Sealed[]): Written {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const tailAt = bytes.length - 8 - view.getUint32(bytes.length - 8, true);
  const modules: Module[] = [];
  let at = 4;
  while (at < tailAt) {
    const size = 4 + view.getUint32(at, true);
    expect(size - 4 - 12 - TAG_BYTES).toBe(sealed[modules.length]!.plain.length);
    modules.push({ at, size, ...sealed[modules.length]! });
    at += size;
  }
  expect(at).toBe(tailAt);
  expect(sealed).toHaveLength(modules.length + 1);
  const crypto = decoded(bytes.subarray(tailAt, bytes.length - 8), 'FileCryptoMetaData');
  const footer = decoded(sealed[sealed.length - 1]!.plain, 'FileMetaData');
  const chunks: Chunk[] = [];
  for (let i = 0; i < modules.length; i += 2) {
    const headerModule = modules[i]!;
    const rowGroup = headerModule.aad[9]! | (headerModule.aad[10]! << 8);
    const column = headerModule.aad[11]! | (headerModule.aad[12]! << 8);
    const last = chunks[chunks.length - 1];
    const chunk = last?.rowGroup === rowGroup && last.column === column ? last : { rowGroup, column, pages: [] };
    if (chunk !== last) chunks.push(chunk);
    chunk.pages.push({ header: decoded(headerModule.plain, 'PageHeader'), headerModule, body: modules[i + 1]! });
  }
  return { bytes, footer, crypto, modules, chunks, footerAad: sealed[sealed.length - 1]!.aad };
}

type WriteOptions = {
  readonly pageBytes?: number;
  readonly rowGroupRows?: number;
  readonly compression?: PageCompression;
  readonly createdBy?: string;
};

async function write(
  columns: ColumnSpec[],
  rows: Record<string, CellValue>[],
  options: WriteOptions = {},
): Promise<Written> {
  const { cipher, sealed } = recordingCipher();
  const written = await writeEncryptedParquet(rows, {
    columns,
    footerKey: KEY,
    cipher,
    random,
    compression: UNCOMPRESSED,
    ...options,
  });
  if (!written.ok) throw new Error(JSON.stringify(written.error));
  return inspect(written.value.bytes, sealed);
}

async function readBack(bytes: Uint8Array): Promise<Record<string, unknown>[]> {
  const file = await openParquet(bytes, { footerKey: KEY }, webPmeCipher);
  if (!file.ok) throw new Error(JSON.stringify(file.error));
  const rows = await file.value.readRows();
  if (!rows.ok) throw new Error(JSON.stringify(rows.error));
  return rows.value;
}

/** Rows of one column's values. */
const rowsOf = (name: string, values: readonly CellValue[]): Record<string, CellValue>[] =>
  values.map((value) => ({ [name]: value }));

const dataPages = (chunk: Chunk): Page[] => chunk.pages.filter((p) => p.header['field_1'] === 0);
const pageRows = (chunk: Chunk): unknown[] => dataPages(chunk).map((p) => pick(p.header, 5, 1));
const bodies = (chunk: Chunk): number[][] => dataPages(chunk).map((p) => Array.from(p.body.plain));

/** The AAD the specification gives a module (Encryption.md §4.4): no prefix. */
const aadOf = (unique: Uint8Array, type: number, rowGroup: number, column: number, page?: number): Uint8Array =>
  Uint8Array.from([...unique, type, ...le16(rowGroup), ...le16(column), ...(page === undefined ? [] : le16(page))]);

const col = (name: string, type: ColumnType, nullable = false): ColumnSpec => ({ name, type, nullable });

const MIXED: ColumnSpec[] = [
  col('n', 'int32', true),
  col('city', 'string', true),
  col('ok', 'boolean'),
  col('big', 'int64'),
  col('at', 'timestamp'),
  col('note', 'string'),
  col('x', 'double', true),
  col('f', 'float'),
  col('id', 'rowid'),
];

const mixedRow = (i: number): Record<string, CellValue> => ({
  n: i % 3 === 1 ? null : i * 7 - 20,
  city: i % 4 === 3 ? null : ['Zürich', 'Bern'][i % 2]!,
  ok: i % 3 === 0,
  big: BigInt(i) * 5_000_000_000n - 7n,
  at: 1_700_000_000_000 + i * 1000,
  note: `note ${i}`,
  x: null,
  f: i / 4,
  id: Uint8Array.from({ length: 16 }, (_, b) => (b === 15 ? i : 1)),
});

describe('the footer of an encrypted file', () => {
  it('names version, rows, schema, creator and column orders, and one AES_GCM_V1 with unique AAD and no prefix', async () => {
    const rows = Array.from({ length: 6 }, (_, i) => mixedRow(i));
    const written = await write(MIXED, rows, { rowGroupRows: 4 });
    const unique = pick(written.crypto, 1, 1, 2);
    expect(unique).toHaveLength(8);
    expect(written.crypto).toEqual({ field_1: { field_1: { field_2: unique, field_3: false } } });
    const { footer } = written;
    expect(Object.keys(footer).sort()).toEqual(['field_1', 'field_2', 'field_3', 'field_4', 'field_6', 'field_7']);
    expect(footer['field_1']).toBe(2);
    expect(footer['field_3']).toBe(6n);
    expect(footer['field_6']).toEqual(utf8('sovereign-mesh sop/1'));
    expect(footer['field_7']).toEqual(MIXED.map(() => ({ field_1: {} })));
    expect(footer['field_2']).toEqual([
      { field_4: utf8('schema'), field_5: 9 },
      { field_1: 1, field_3: 1, field_4: utf8('n') },
      { field_1: 6, field_3: 1, field_4: utf8('city'), field_6: 0, field_10: { field_1: {} } },
      { field_1: 0, field_3: 0, field_4: utf8('ok') },
      { field_1: 2, field_3: 0, field_4: utf8('big') },
      {
        field_1: 2,
        field_3: 0,
        field_4: utf8('at'),
        field_6: 9,
        field_10: { field_8: { field_1: true, field_2: { field_1: {} } } },
      },
      { field_1: 6, field_3: 0, field_4: utf8('note'), field_6: 0, field_10: { field_1: {} } },
      { field_1: 5, field_3: 1, field_4: utf8('x') },
      { field_1: 4, field_3: 0, field_4: utf8('f') },
      { field_1: 7, field_2: 16, field_3: 0, field_4: utf8('id') },
    ]);
    expect(await readBack(written.bytes)).toEqual(rows);
  });

  it('names the creator it is given', async () => {
    const { footer } = await write([col('n', 'int32')], rowsOf('n', [1]), {
      createdBy: 'a test',
    });
    expect(footer['field_6']).toEqual(utf8('a test'));
  });

  it('describes each row group and column chunk by the modules written for it', async () => {
    const rows = Array.from({ length: 10 }, (_, i) => mixedRow(i));
    const written = await write(MIXED, rows, { rowGroupRows: 6, pageBytes: 24 });
    const groups = pick(written.footer, 4) as RawStruct[];
    expect(groups).toHaveLength(2);
    expect(written.chunks.map((c) => [c.rowGroup, c.column])).toEqual(
      [0, 1].flatMap((g) => MIXED.map((_, c) => [g, c])),
    );
    // Page types chunk by chunk (2 dictionary, 0 data): several pages to a chunk, a dictionary where text repeats.
    expect(written.chunks.map((c) => c.pages.map((p) => p.header['field_1']).join(''))).toEqual(
      ['0', '20', '0', '00', '00', '00', '0', '0', '000'].concat(['0', '0', '0', '00', '00', '00', '0', '0', '00']),
    );
    const unique = pick(written.crypto, 1, 1, 2) as Uint8Array;
    groups.forEach((group, g) => {
      const chunks = written.chunks.filter((c) => c.rowGroup === g);
      const totals = chunks.map((chunk, c) => {
        const modules = chunk.pages.flatMap((p) => [p.headerModule, p.body]);
        const dictionary = chunk.pages[0]!.header['field_1'] === 2 ? chunk.pages[0] : undefined;
        const uncompressed = chunk.pages.reduce(
          (n, p) => n + p.headerModule.plain.length + (p.header['field_2'] as number),
          0,
        );
        const compressed = modules.reduce((n, m) => n + m.size, 0);
        const meta = pick(group, 1, [c], 3) as RawStruct;
        expect(pick(group, 1, [c], 2)).toBe(BigInt(modules[0]!.at));
        expect(pick(group, 1, [c], 8)).toEqual({ field_1: {} });
        expect(meta['field_3']).toEqual([utf8(MIXED[c]!.name)]);
        expect(meta['field_4']).toBe(0);
        expect(meta['field_5']).toBe(g === 0 ? 6n : 4n);
        expect(meta['field_6']).toBe(BigInt(uncompressed));
        expect(meta['field_7']).toBe(BigInt(compressed));
        expect(meta['field_9']).toBe(BigInt(dataPages(chunk)[0]!.headerModule.at));
        expect(meta['field_11']).toBe(dictionary ? BigInt(dictionary.headerModule.at) : undefined);
        // Page and page-header AADs: module type, row group, column and — for data pages — the page ordinal.
        let page = 0;
        for (const p of chunk.pages) {
          expect(p.header['field_3']).toBe(p.body.size);
          expect(p.header['field_2']).toBe(p.body.plain.length);
          if (p === dictionary) {
            expect(p.headerModule.aad).toEqual(aadOf(unique, 5, g, c));
            expect(p.body.aad).toEqual(aadOf(unique, 3, g, c));
          } else {
            expect(p.headerModule.aad).toEqual(aadOf(unique, 4, g, c, page));
            expect(p.body.aad).toEqual(aadOf(unique, 2, g, c, page));
            page++;
          }
        }
        return { uncompressed, compressed, at: modules[0]!.at };
      });
      const { field_1: columnChunks, ...rest } = group;
      expect(columnChunks).toHaveLength(MIXED.length);
      expect(rest).toEqual({
        field_2: BigInt(totals.reduce((n, t) => n + t.uncompressed, 0)),
        field_3: g === 0 ? 6n : 4n,
        field_5: BigInt(totals[0]!.at),
        field_6: BigInt(totals.reduce((n, t) => n + t.compressed, 0)),
        field_7: g,
      });
    });
    // The footer's own module: type 0 and no ordinals.
    expect(written.footerAad).toEqual(Uint8Array.from([...unique, 0]));
    expect(await readBack(written.bytes)).toEqual(rows);
  });

  it('lists each chunk’s encodings: delta for integers, a dictionary for repeated text, RLE levels when nullable', async () => {
    const columns: ColumnSpec[] = [...MIXED, col('n2', 'int32')];
    const rows = Array.from({ length: 8 }, (_, i) => ({ ...mixedRow(i), n2: i }));
    const written = await write(columns, rows);
    const metas = pick(written.footer, 4, [0], 1) as RawStruct[];
    expect(metas.map((m) => pick(m, 3, 2))).toEqual([[5, 3], [0, 8, 3], [0], [5], [5], [0], [0, 3], [0], [0], [5]]);
    expect(metas.map((m) => pick(m, 3, 1))).toEqual([1, 6, 0, 2, 2, 6, 5, 4, 7, 1]);
    expect(written.chunks.map((c) => dataPages(c).map((p) => pick(p.header, 5)))).toEqual(
      [5, 8, 0, 5, 5, 0, 0, 0, 0, 5].map((encoding) => [{ field_1: 8, field_2: encoding, field_3: 3, field_4: 3 }]),
    );
    // The dictionary page: PLAIN entries, counted.
    expect(written.chunks[1]!.pages[0]!.header).toEqual({
      field_1: 2,
      field_2: 2 * 4 + 'Zürich'.length + 1 + 'Bern'.length,
      field_3: written.chunks[1]!.pages[1]!.headerModule.at - written.chunks[1]!.pages[0]!.body.at,
      field_7: { field_1: 2, field_2: 0 },
    });
    expect(await readBack(written.bytes)).toEqual(rows);
  });

  it('keeps statistics in the footer: nulls, PLAIN-encoded max and min, exact bounds', async () => {
    const columns: ColumnSpec[] = [col('n', 'int32', true), col('s', 'string', true), col('none', 'double', true)];
    const rows = [
      { n: 5, s: 'pear', none: null },
      { n: null, s: null, none: null },
      { n: -3, s: 'apple', none: null },
    ];
    const { footer } = await write(columns, rows);
    const stats = (c: number) => pick(footer, 4, [0], 1, [c], 3, 12);
    expect(stats(0)).toEqual({
      field_3: 1n,
      field_5: Uint8Array.of(5, 0, 0, 0),
      field_6: Uint8Array.of(0xfd, 0xff, 0xff, 0xff),
      field_7: true,
      field_8: true,
    });
    expect(stats(1)).toEqual({
      field_3: 1n,
      field_5: utf8('pear'),
      field_6: utf8('apple'),
      field_7: true,
      field_8: true,
    });
    expect(stats(2)).toEqual({ field_3: 3n });
  });

  it('names the codec, and counts compressed sizes as the modules and uncompressed sizes as the pages', async () => {
    const values = Array.from({ length: 200 }, (_, i) => `text ${i % 50} text text text`);
    const rows = rowsOf('s', values);
    const written = await write([col('s', 'string')], rows, { compression: SNAPPY });
    const meta = pick(written.footer, 4, [0], 1, [0], 3) as RawStruct;
    expect(meta['field_4']).toBe(1);
    const [dictionary, data] = written.chunks[0]!.pages;
    for (const page of [dictionary!, data!]) {
      expect(page.header['field_3']).toBe(page.body.size);
      expect(page.header['field_2']).toBeGreaterThan(page.body.plain.length);
    }
    expect(dictionary!.header['field_2']).toBe(50 * 4 + values.slice(0, 50).reduce((n, v) => n + v.length, 0));
    expect(meta['field_6']).toBe(
      BigInt(
        dictionary!.headerModule.plain.length +
          (dictionary!.header['field_2'] as number) +
          data!.headerModule.plain.length +
          (data!.header['field_2'] as number),
      ),
    );
    expect(await readBack(written.bytes)).toEqual(rows);
  });
});

describe('pages split at pageBytes', () => {
  it('counts each value’s bytes: fixed width, a bit per boolean, length and prefix per string, an index per dictionary entry', async () => {
    const columns: ColumnSpec[] = [
      col('n', 'int32'),
      col('m', 'int32', true),
      col('b', 'boolean'),
      col('s', 'string'),
      col('d', 'string'),
    ];
    const rows = Array.from({ length: 5 }, (_, i) => ({
      n: i,
      m: i === 1 || i === 2 ? null : i,
      b: i % 2 === 0,
      s: 'abcde'[i]!.repeat(2),
      d: 'alpha-beta',
    }));
    const written = await write(columns, rows, { pageBytes: 8 });
    expect(written.chunks.map(pageRows)).toEqual([[2, 2, 1], [4, 1], [5], [2, 2, 1], [2, 2, 1]]);
    expect(written.chunks[4]!.pages[0]!.header['field_1']).toBe(2);
    expect(await readBack(written.bytes)).toEqual(rows);
  });

  it('closes a page when its bytes reach pageBytes, and never adds an empty page at the end', async () => {
    const written = await write([col('n', 'int32')], rowsOf('n', [1, 2, 3, 4]), {
      pageBytes: 8,
    });
    // DELTA_BINARY_PACKED (Encodings.md): block 128, 4 miniblocks, count, first value, then a constant delta of 1.
    expect(bodies(written.chunks[0]!)).toEqual([
      [0x80, 1, 4, 2, 2, 2, 0, 0, 0, 0],
      [0x80, 1, 4, 2, 6, 2, 0, 0, 0, 0],
    ]);
    expect(await readBack(written.bytes)).toEqual(rowsOf('n', [1, 2, 3, 4]));
  });

  it('delta-packs each page of an int64 column from its own first value', async () => {
    const values = [10n, 20n, 30n];
    const written = await write([col('v', 'int64')], rowsOf('v', values), {
      pageBytes: 16,
    });
    expect(bodies(written.chunks[0]!)).toEqual([
      [0x80, 1, 4, 2, 20, 20, 0, 0, 0, 0],
      [0x80, 1, 4, 1, 60],
    ]);
    expect(await readBack(written.bytes)).toEqual(rowsOf('v', values));
  });

  it('wraps int32 deltas at 32 bits', async () => {
    const values = [2 ** 31 - 1, -(2 ** 31)];
    const written = await write([col('n', 'int32')], rowsOf('n', values));
    // First value zigzag(2^31 - 1) = 2^32 - 2; the delta wraps to +1 (zigzag 2), not -(2^32 - 1).
    expect(bodies(written.chunks[0]!)).toEqual([[0x80, 1, 4, 2, 0xfe, 0xff, 0xff, 0xff, 0x0f, 2, 0, 0, 0, 0]]);
    expect(await readBack(written.bytes)).toEqual(rowsOf('n', values));
  });

  it('bit-packs each page of booleans from its own first value, least significant bit first', async () => {
    const values = [true, false, true, true, true, false, false, true, true, true];
    // An eighth of a byte a value: three to a page.
    const written = await write([col('b', 'boolean')], rowsOf('b', values), {
      pageBytes: 0.375,
    });
    expect(pageRows(written.chunks[0]!)).toEqual([3, 3, 3, 1]);
    expect(bodies(written.chunks[0]!)).toEqual([[0b101], [0b011], [0b110], [0b1]]);
    expect(await readBack(written.bytes)).toEqual(rowsOf('b', values));
  });
});

type Cells = Record<string, CellValue[]>;

async function started(columns: ColumnSpec[], options: Partial<WriterOptions> = {}) {
  const sunk: Uint8Array[] = [];
  const writer = await EncryptedParquetWriter.start({
    columns,
    footerKey: KEY,
    cipher: webPmeCipher,
    random,
    sink: (bytes) => void sunk.push(bytes),
    ...options,
  });
  if (!writer.ok) throw new Error(JSON.stringify(writer.error));
  return { writer: writer.value, sunk };
}

const TWO: ColumnSpec[] = [col('a', 'int32'), col('b', 'string', true)];

describe('the writer refuses', () => {
  it('a footer key that is not an AES key', async () => {
    await expect(
      EncryptedParquetWriter.start({
        columns: TWO,
        footerKey: new Uint8Array(20),
        cipher: cheapCipher(),
        random,
        sink: () => undefined,
      }),
    ).rejects.toThrow(new Error('parquet: footer key must be 16, 24 or 32 bytes'));
  });

  it('rows once finished, and finishing twice', async () => {
    const { writer } = await started(TWO);
    expect(await writer.finish()).toMatchObject({ rows: 0, rowGroups: 0 });
    await expect(writer.writeRowGroup({ a: [1], b: ['x'] })).rejects.toThrow(
      new Error('parquet: writer already finished'),
    );
    await expect(writer.finish()).rejects.toThrow(new Error('parquet: writer already finished'));
  });

  it('a row group without its first column, or with columns of other lengths', async () => {
    const { writer } = await started(TWO);
    const group = (cells: Cells) => writer.writeRowGroup(cells);
    expect(await group({ b: ['x'] })).toEqual({
      ok: false,
      error: { type: 'InvalidValue', column: 'a', row: 0, detail: 'column missing' },
    });
    expect(await group({ a: [1, 2] })).toEqual({
      ok: false,
      error: { type: 'InvalidValue', column: 'b', row: 0, detail: 'expected 2 values' },
    });
    expect(await group({ a: [1, 2], b: ['x'] })).toEqual({
      ok: false,
      error: { type: 'InvalidValue', column: 'b', row: 1, detail: 'expected 2 values' },
    });
    expect(await group({ a: [], b: ['x'] })).toEqual({
      ok: false,
      error: { type: 'InvalidValue', column: 'b', row: 0, detail: 'expected 0 values' },
    });
    expect(await writer.finish()).toMatchObject({ rows: 0, rowGroups: 0 });
  });

  it('a chunk of more pages than a page ordinal can number', async () => {
    const columns: ColumnSpec[] = [col('n', 'int32')];
    const options = { cipher: cheapCipher(), random: zeroRandom, pageBytes: 1 };
    const most = await started(columns, options);
    expect(await most.writer.writeRowGroup({ n: Array.from({ length: MAX_PAGES_PER_CHUNK }, (_, i) => i) })).toEqual({
      ok: true,
      value: undefined,
    });
    // Two modules a page, each its plaintext and 32 bytes of length, nonce and tag.
    expect(most.sunk[1]!.length).toBeGreaterThan(MAX_PAGES_PER_CHUNK * 2 * 32);
    const over = await started(columns, options);
    expect(
      await over.writer.writeRowGroup({ n: Array.from({ length: MAX_PAGES_PER_CHUNK + 1 }, (_, i) => i) }),
    ).toEqual({ ok: false, error: { type: 'TooLarge', detail: 'n: too many pages' } });
    expect(over.sunk).toHaveLength(1);
  });

  it('a row group past the most a RowGroup ordinal can number', async () => {
    const { writer } = await started([col('n', 'boolean')], {
      cipher: cheapCipher(),
      random: zeroRandom,
    });
    for (let g = 0; g < MAX_ROW_GROUPS; g++) {
      const written = await writer.writeRowGroup({ n: [true] });
      if (!written.ok) throw new Error(`row group ${g}: ${JSON.stringify(written.error)}`);
    }
    expect(await writer.writeRowGroup({ n: [true] })).toEqual({
      ok: false,
      error: { type: 'TooLarge', detail: 'too many row groups' },
    });
    expect(await writer.finish()).toMatchObject({ rows: MAX_ROW_GROUPS, rowGroups: MAX_ROW_GROUPS });
  });

  it('a cipher whose modules are not the size the layout counted', async () => {
    const { writer, sunk } = await started(TWO, { cipher: cheapCipher(0) });
    await expect(writer.writeRowGroup({ a: [1], b: ['x'] })).rejects.toThrow(
      new Error('parquet: module layout does not match what was written'),
    );
    expect(sunk).toHaveLength(2);
  });
});

describe('row groups of no rows', () => {
  it('are written as nothing, every column still given', async () => {
    const { writer, sunk } = await started(TWO);
    expect(await writer.writeRowGroup({ a: [], b: [] })).toEqual({ ok: true, value: undefined });
    expect(await writer.writeRowGroup({ a: [] })).toEqual({
      ok: false,
      error: { type: 'InvalidValue', column: 'b', row: 0, detail: 'column missing' },
    });
    expect(await writer.finish()).toEqual({
      rows: 0,
      bytes: sunk.reduce((n, b) => n + b.length, 0),
      rowGroups: 0,
      columns: TWO.map((c) => ({
        name: c.name,
        nulls: 0,
        min: undefined,
        max: undefined,
        minBytes: undefined,
        maxBytes: undefined,
      })),
    });
    expect(sunk).toHaveLength(2);
    expect(await readBack(concat(...sunk))).toEqual([]);
  });
});
