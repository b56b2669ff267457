/**
 * The reader's own paths (core/parquet/read.ts), one refusal or reading at a time: files
 * assembled here page by page and module by module with the Thrift writer and the module
 * sealer — plaintext (`PAR1`) or encrypted (`PARE`: footer key, column keys, column
 * metadata sealed apart, DuckDB's modules without AAD) — each with one thing wrong, and
 * the typed error compared word for word. Our writer's files where its layout is the point
 * (footer-key protection, no rows, one key imported once).
 */
import { describe, expect, it } from 'vitest';
import { concatAll, utf8 } from '../../src/core/bytes.js';
import {
  GCM_MODULE_OVERHEAD,
  MODULE,
  moduleAad,
  sealModule,
  type AesKey,
  type FileAad,
  type ParquetError,
  type PmeCipher,
} from '../../src/core/parquet/modules.js';
import { openParquet, type ParquetFile, type ReadKeys } from '../../src/core/parquet/read.js';
import { encodeStruct, T, type Field } from '../../src/core/parquet/thrift.js';
import { ok, type Result } from '../../src/core/result.js';
import { writeEncryptedParquet } from '../../src/core/parquet/write.js';
import { webPmeCipher } from '../../src/runtime/pme-cipher.js';
import { seededRandom } from '../helpers/deterministic.js';

const random = seededRandom('parquet-read-paths');
const FOOTER_KEY = random.bytes(16);
const UNIQUE = random.bytes(8);
const MAGIC = { PAR1: utf8('PAR1'), PARE: utf8('PARE') };
const TYPE = { INT32: 1, BYTE_ARRAY: 6 } as const;
const PAGE = { DATA: 0, INDEX: 1, DICTIONARY: 2 } as const;
const ENCODING = { PLAIN: 0, RLE: 3, RLE_DICTIONARY: 8 } as const;

/** Fields by id, a later one replacing an earlier one; a field whose value is undefined is left out. */
const merged = (...lists: (readonly Field[])[]): Field[] =>
  [...new Map(lists.flat().map((f) => [f[0], f])).values()].sort((a, b) => a[0] - b[0]);

const int32s = (...values: number[]): Uint8Array => {
  const out = new Uint8Array(values.length * 4);
  values.forEach((v, i) => new DataView(out.buffer).setInt32(i * 4, v, true));
  return out;
};
const strings = (...values: string[]): Uint8Array =>
  concatAll(values.flatMap((v) => [int32s(utf8(v).length), utf8(v)]));

type Page = {
  readonly type: number;
  readonly body: Uint8Array;
  /** Header fields replaced (sizes, counts); the header's bytes replaced whole. */
  readonly patch?: readonly Field[];
  readonly header?: Uint8Array;
  /** What the chunk layout and the module AADs take the page for (by default, its type). */
  readonly role?: 'dictionary' | 'data';
  /** The last byte (of the tag) of a sealed module flipped. */
  readonly flip?: 'header' | 'page';
};

/** A data page header's counts (field 5): its values, their encoding, RLE levels. */
const counts = (values: number, encoding: number = ENCODING.PLAIN): Field => [
  5,
  T.STRUCT,
  [
    [1, T.I32, values],
    [2, T.I32, encoding],
    [3, T.I32, ENCODING.RLE],
    [4, T.I32, ENCODING.RLE],
  ],
];
const dataPage = (body: Uint8Array, values: number, patch: readonly Field[] = []): Page => ({
  type: PAGE.DATA,
  body,
  patch: merged([counts(values)], patch),
});
const dictionaryPage = (body: Uint8Array, values: number, patch: readonly Field[] = []): Page => ({
  type: PAGE.DICTIONARY,
  body,
  patch: merged(
    [
      [
        7,
        T.STRUCT,
        [
          [1, T.I32, values],
          [2, T.I32, ENCODING.PLAIN],
        ],
      ],
    ],
    patch,
  ),
});
/** RLE_DICTIONARY indices of bit width 1, one RLE run per index. */
const indexPage = (...indices: number[]): Page =>
  dataPage(Uint8Array.from([1, ...indices.flatMap((i) => [2, i])]), indices.length, [
    counts(indices.length, ENCODING.RLE_DICTIONARY),
  ]);

/** Where a chunk landed: its first byte, its end, its first data page. */
type Layout = { readonly start: number; readonly end: number; readonly data: number };

type Chunk = {
  readonly path: readonly string[];
  readonly type?: number;
  readonly values: number;
  readonly pages: readonly Page[];
  readonly codec?: number;
  /** ColumnMetaData fields replaced, given where the chunk landed. */
  readonly meta?: (at: Layout) => readonly Field[];
  /** ColumnChunk fields replaced. */
  readonly fields?: readonly Field[];
  /** Marked for the footer key or a column key of its own; sealed with it in an encrypted file. */
  readonly key?: 'footer' | Uint8Array;
  /** ColumnMetaData sealed apart: the module, its body alone, the body with a flipped tag, or an empty struct sealed. */
  readonly sealedMeta?: 'module' | 'body' | 'flipped' | 'empty';
};

type FileSpec = {
  readonly schema: readonly (readonly Field[])[];
  readonly rowGroups: readonly {
    readonly rows: number;
    readonly chunks: readonly Chunk[];
    /** The stored RowGroup.ordinal (the one the AADs carry); `null` stores none (the AADs then carry the index). */
    readonly ordinal?: number | null;
  }[];
  /** Encrypted footer (PARE) under FOOTER_KEY; `duckdb`: no aad_file_unique, every module sealed without AAD. */
  readonly encrypted?: 'spec' | 'duckdb';
  /** FileMetaData fields replaced. */
  readonly footer?: readonly Field[];
};

const root = (children: number): Field[] => [
  [4, T.BINARY, 'schema'],
  [5, T.I32, children],
];
const leaf = (name: string, type: number = TYPE.INT32, ...extra: Field[]): Field[] =>
  merged(
    [
      [1, T.I32, type],
      [3, T.I32, 0],
      [4, T.BINARY, name],
    ],
    extra,
  );
const COLUMN_KEY = random.bytes(16);
const COLUMN_META_ENCRYPTED: Field = [8, T.STRUCT, [[1, T.STRUCT, []]]];

async function seal(key: AesKey, aad: Uint8Array, plain: Uint8Array, flip: boolean): Promise<Uint8Array> {
  const module = await sealModule(key, random.bytes(12), aad, plain);
  if (flip) module[module.length - 1]! ^= 1;
  return module;
}

/** The file `spec` describes. */
async function build(spec: FileSpec): Promise<{ bytes: Uint8Array }> {
  const aad: FileAad =
    spec.encrypted === 'duckdb'
      ? { prefix: new Uint8Array(0), fileUnique: new Uint8Array(0), none: true }
      : { prefix: new Uint8Array(0), fileUnique: UNIQUE };
  const footerKey = await webPmeCipher.key(FOOTER_KEY);
  const parts: Uint8Array[] = [spec.encrypted ? MAGIC.PARE : MAGIC.PAR1];
  let at = 4;
  const emit = (bytes: Uint8Array) => {
    parts.push(bytes);
    at += bytes.length;
  };
  const groups: Field[][] = [];
  for (const [g, group] of spec.rowGroups.entries()) {
    const ordinal = group.ordinal ?? g;
    const chunks: Field[][] = [];
    for (const [c, chunk] of group.chunks.entries()) {
      const own = chunk.key instanceof Uint8Array ? await webPmeCipher.key(chunk.key) : footerKey;
      const sealed = spec.encrypted === 'duckdb' || (spec.encrypted === 'spec' && chunk.key !== undefined);
      const ordinals = { rowGroup: ordinal, column: c };
      const start = at;
      let data: number | undefined;
      let dictionary: number | undefined;
      let dataPages = 0;
      for (const page of chunk.pages) {
        const isDictionary = (page.role ?? (page.type === PAGE.DICTIONARY ? 'dictionary' : 'data')) === 'dictionary';
        const size = sealed && spec.encrypted === 'spec' ? page.body.length + GCM_MODULE_OVERHEAD : page.body.length;
        const header =
          page.header ??
          encodeStruct(
            merged(
              [
                [1, T.I32, page.type],
                [2, T.I32, page.body.length],
                [3, T.I32, size],
              ],
              page.patch ?? [],
            ),
          );
        if (isDictionary) dictionary ??= at;
        else data ??= at;
        if (sealed) {
          const o = { ...ordinals, page: dataPages };
          const [headerType, pageType] = isDictionary
            ? [MODULE.DICTIONARY_PAGE_HEADER, MODULE.DICTIONARY_PAGE]
            : [MODULE.DATA_PAGE_HEADER, MODULE.DATA_PAGE];
          emit(await seal(own, moduleAad(aad, headerType, o), header, page.flip === 'header'));
          emit(await seal(own, moduleAad(aad, pageType, o), page.body, page.flip === 'page'));
        } else {
          emit(header);
          emit(page.body);
        }
        if (!isDictionary) dataPages++;
      }
      const where = { start, end: at, data: data ?? start };
      const meta = merged(
        [
          [1, T.I32, chunk.type ?? TYPE.INT32],
          [2, T.LIST, { elem: T.I32, items: [ENCODING.PLAIN] }],
          [3, T.LIST, { elem: T.BINARY, items: chunk.path }],
          [4, T.I32, chunk.codec ?? 0],
          [5, T.I64, chunk.values],
          [6, T.I64, at - start],
          [7, T.I64, at - start],
          [9, T.I64, where.data],
          [11, T.I64, dictionary],
        ],
        chunk.meta?.(where) ?? [],
      );
      const crypto: Field | undefined =
        chunk.key === undefined
          ? undefined
          : chunk.key === 'footer'
            ? COLUMN_META_ENCRYPTED
            : [8, T.STRUCT, [[2, T.STRUCT, [[1, T.LIST, { elem: T.BINARY, items: chunk.path }]]]]];
      let metaField: Field = [3, T.STRUCT, meta];
      if (chunk.sealedMeta) {
        const plain = chunk.sealedMeta === 'empty' ? new Uint8Array(0) : encodeStruct(meta);
        const aadMeta = moduleAad(aad, MODULE.COLUMN_META, ordinals);
        const module = await seal(own, aadMeta, plain, chunk.sealedMeta === 'flipped');
        metaField = [9, T.BINARY, chunk.sealedMeta === 'module' ? module : module.subarray(4)];
      }
      chunks.push(merged([[2, T.I64, start], metaField], crypto ? [crypto] : [], chunk.fields ?? []));
    }
    groups.push([
      [1, T.LIST, { elem: T.STRUCT, items: chunks }],
      [2, T.I64, 0],
      [3, T.I64, group.rows],
      [7, T.I16, group.ordinal === null ? undefined : ordinal],
    ]);
  }
  const footer = encodeStruct(
    merged(
      [
        [1, T.I32, 2],
        [2, T.LIST, { elem: T.STRUCT, items: spec.schema }],
        [3, T.I64, spec.rowGroups.reduce((n, g) => n + g.rows, 0)],
        [4, T.LIST, { elem: T.STRUCT, items: groups }],
        [6, T.BINARY, 'parquet-read-paths'],
      ],
      spec.footer ?? [],
    ),
  );
  const footerAt = at;
  if (spec.encrypted) {
    const algorithm: Field[] = spec.encrypted === 'duckdb' ? [] : [[2, T.BINARY, UNIQUE]];
    emit(encodeStruct([[1, T.STRUCT, [[1, T.STRUCT, algorithm]]]]));
    emit(await seal(footerKey, moduleAad(aad, MODULE.FOOTER), footer, false));
  } else emit(footer);
  emit(int32s(at - footerAt));
  emit(spec.encrypted ? MAGIC.PARE : MAGIC.PAR1);
  return { bytes: concatAll(parts) };
}

const X_SCHEMA = [root(1), leaf('x')];
const X_PAGES = [dataPage(int32s(1, 2, 3), 3)];

/** One INT32 column `x` of the rows 1, 2, 3 in one row group; `chunk` and `spec` replace parts of it. */
const xFile = (chunk: Partial<Chunk> = {}, spec: Partial<FileSpec> = {}) =>
  build({
    schema: X_SCHEMA,
    rowGroups: [{ rows: 3, chunks: [{ path: ['x'], values: 3, pages: X_PAGES, ...chunk }] }],
    ...spec,
  });

async function opened(bytes: Uint8Array, keys: ReadKeys = { footerKey: FOOTER_KEY }): Promise<ParquetFile> {
  const file = await openParquet(bytes, keys, webPmeCipher);
  if (!file.ok) throw new Error(JSON.stringify(file.error));
  return file.value;
}

/** Every column of a file as plain arrays, or the refusal. */
async function read(bytes: Uint8Array, keys: ReadKeys = { footerKey: FOOTER_KEY }) {
  const file = await openParquet(bytes, keys, webPmeCipher);
  if (!file.ok) return file;
  const columns = await file.value.readColumns();
  if (!columns.ok) return columns;
  const plain = Object.entries(columns.value).map(([k, v]) => [k, Array.from(v as ArrayLike<unknown>)] as const);
  return ok(Object.fromEntries(plain));
}

const refused = (error: ParquetError) => ({ ok: false, error });
const X_READ = { ok: true, value: { x: [1, 2, 3] } };

/** A refusal of `type` whose detail matches `detail` (where the rest of the message is hyparquet's). */
function expectRefused(result: Result<unknown, ParquetError>, type: ParquetError['type'], detail: RegExp): void {
  if (result.ok) throw new Error('expected a refusal');
  expect(result.error.type).toBe(type);
  expect('detail' in result.error ? result.error.detail : '').toMatch(detail);
}

describe('opening: columns, protection, row groups against the schema', () => {
  it('lists each leaf with its type and protection: plaintext, footer key, column key', async () => {
    const plain = await opened((await xFile()).bytes);
    expect(plain.columns).toEqual([{ path: 'x', name: 'x', type: 'INT32', protection: 'plaintext' }]);
    const { bytes } = await build({
      schema: [root(2), leaf('a'), leaf('b', TYPE.BYTE_ARRAY)],
      rowGroups: [
        {
          rows: 1,
          chunks: [
            { path: ['a'], values: 1, pages: [dataPage(int32s(7), 1)], key: 'footer' },
            { path: ['b'], type: TYPE.BYTE_ARRAY, values: 1, pages: [dataPage(strings('b'), 1)], key: COLUMN_KEY },
          ],
        },
      ],
      encrypted: 'spec',
    });
    const file = await opened(bytes, { footerKey: FOOTER_KEY, columnKeys: new Map([['b', COLUMN_KEY]]) });
    expect(file.columns).toEqual([
      { path: 'a', name: 'a', type: 'INT32', protection: 'footer-key' },
      { path: 'b', name: 'b', type: 'BYTE_ARRAY', protection: 'column-key' },
    ]);
    expect(await file.readRows()).toEqual({ ok: true, value: [{ a: 7, b: utf8('b') }] });
  });

  it('names a leaf of no physical type UNKNOWN, and opens a file of no row groups', async () => {
    const { bytes } = await build({ schema: [root(1), merged([[4, T.BINARY, 'x']])], rowGroups: [] });
    const file = await opened(bytes);
    expect(file.columns).toEqual([{ path: 'x', name: 'x', type: 'UNKNOWN', protection: 'plaintext' }]);
    expect(file.rowCount).toBe(0);
    expect(await file.readRows()).toEqual({ ok: true, value: [] });
  });

  it('reads our writer’s file of no rows: footer-key columns, no row groups, no rows', async () => {
    const written = await writeEncryptedParquet([], {
      columns: [{ name: 'n', type: 'int32', nullable: false }],
      footerKey: FOOTER_KEY,
      cipher: webPmeCipher,
      random,
    });
    if (!written.ok) throw new Error(JSON.stringify(written.error));
    const file = await opened(written.value.bytes);
    expect(file.metadata.row_groups).toEqual([]);
    expect(file.columns).toEqual([{ path: 'n', name: 'n', type: 'INT32', protection: 'plaintext' }]);
    expect(await file.readColumns()).toEqual({ ok: true, value: { n: [] } });
  });

  it('marks every column of our writer’s files as under the footer key', async () => {
    const written = await writeEncryptedParquet([{ n: 1, s: 'one' }], {
      columns: [
        { name: 'n', type: 'int32', nullable: false },
        { name: 's', type: 'string', nullable: true },
      ],
      footerKey: FOOTER_KEY,
      cipher: webPmeCipher,
      random,
    });
    if (!written.ok) throw new Error(JSON.stringify(written.error));
    const file = await opened(written.value.bytes);
    expect(file.columns.map((c) => c.protection)).toEqual(['footer-key', 'footer-key']);
    expect(await file.readRows()).toEqual({ ok: true, value: [{ n: 1, s: 'one' }] });
  });

  it('refuses a row group whose column count differs from the schema', async () => {
    const { bytes } = await build({
      schema: [root(2), leaf('x'), leaf('y')],
      rowGroups: [{ rows: 3, chunks: [{ path: ['x'], values: 3, pages: X_PAGES }] }],
    });
    expect(await openParquet(bytes, {}, webPmeCipher)).toEqual(
      refused({ type: 'Malformed', detail: 'row group column count differs from the schema' }),
    );
  });

  it('refuses a footer hyparquet cannot read as FileMetaData, and a schema that cannot be a tree', async () => {
    const noSchema = await xFile({}, { footer: [[2, T.LIST, undefined]] });
    expectRefused(await openParquet(noSchema.bytes, {}, webPmeCipher), 'Malformed', /^FileMetaData: /);
    const missingChild = await build({ schema: [root(2), leaf('x')], rowGroups: [] });
    expectRefused(await openParquet(missingChild.bytes, {}, webPmeCipher), 'Malformed', /^schema: /);
  });

  it('types a fault of the cipher while opening as a malformed file', async () => {
    const failing: PmeCipher = { key: () => Promise.reject(new Error('no AES here')) };
    const { bytes } = await xFile({ key: 'footer' }, { encrypted: 'spec' });
    expect(await openParquet(bytes, { footerKey: FOOTER_KEY }, failing)).toEqual(
      refused({ type: 'Malformed', detail: 'file: no AES here' }),
    );
  });
});

describe('column chunks: keys, metadata, bounds', () => {
  const twoKeys = (a: Uint8Array, b: Uint8Array) =>
    build({
      schema: [root(2), leaf('a'), leaf('b')],
      rowGroups: [
        {
          rows: 1,
          chunks: [
            { path: ['a'], values: 1, pages: [dataPage(int32s(10), 1)], key: a, sealedMeta: 'module' },
            { path: ['b'], values: 1, pages: [dataPage(int32s(20), 1)], key: b, sealedMeta: 'body' },
          ],
        },
      ],
      encrypted: 'spec',
    });

  it('reads each column under its own key, keys that differ only in their digits’ grouping included', async () => {
    // As digit strings run together, 1|11|1… and 11|1|1… are the same; as keys they are not.
    const a = Uint8Array.from([1, 11, ...new Array<number>(14).fill(1)]);
    const b = Uint8Array.from([11, 1, ...new Array<number>(14).fill(1)]);
    const { bytes } = await twoKeys(a, b);
    const keys = {
      footerKey: FOOTER_KEY,
      columnKeys: new Map([
        ['a', a],
        ['b', b],
      ]),
    };
    expect(await read(bytes, keys)).toEqual({ ok: true, value: { a: [10], b: [20] } });
  });

  it('asks for a column key it was not given, and refuses one of a wrong length', async () => {
    const { bytes } = await twoKeys(COLUMN_KEY, COLUMN_KEY);
    expect(await read(bytes)).toEqual(refused({ type: 'KeyMissing', column: 'a' }));
    expect(await read(bytes, { footerKey: FOOTER_KEY, columnKeys: new Map([['a', new Uint8Array(15)]]) })).toEqual(
      refused({ type: 'KeyInvalid', column: 'a' }),
    );
  });

  it('imports each key once per file, however many chunks it opens', async () => {
    let imports = 0;
    const counting: PmeCipher = {
      key: (raw) => {
        imports++;
        return webPmeCipher.key(raw);
      },
    };
    const { bytes } = await build({
      schema: [root(3), leaf('a'), leaf('b'), leaf('c')],
      rowGroups: [0, 1].map(() => ({
        rows: 1,
        chunks: ['a', 'b', 'c'].map((path) => ({
          path: [path],
          values: 1,
          pages: [dataPage(int32s(5), 1)],
          key: 'footer' as const,
        })),
      })),
      encrypted: 'spec',
    });
    const file = await openParquet(bytes, { footerKey: FOOTER_KEY }, counting);
    if (!file.ok) throw new Error(JSON.stringify(file.error));
    expect(imports).toBe(1); // the footer's
    expect(await file.value.readRows()).toEqual({
      ok: true,
      value: [
        { a: 5, b: 5, c: 5 },
        { a: 5, b: 5, c: 5 },
      ],
    });
    expect(imports).toBe(2); // and once more for the six chunks
  });

  it('refuses an encrypted column chunk in a plaintext file', async () => {
    const { bytes } = await xFile({ key: 'footer' });
    expect(await read(bytes)).toEqual(
      refused({ type: 'Malformed', detail: 'encrypted column chunk in an unencrypted file' }),
    );
  });

  it('reads metadata sealed apart with or without its length, and refuses it cut, tampered or empty', async () => {
    const sealedApart = (sealedMeta: NonNullable<Chunk['sealedMeta']>, fields: readonly Field[] = []) =>
      xFile({ key: COLUMN_KEY, sealedMeta, fields }, { encrypted: 'spec' });
    const keys = { footerKey: FOOTER_KEY, columnKeys: new Map([['x', COLUMN_KEY]]) };
    expect(await read((await sealedApart('module')).bytes, keys)).toEqual(X_READ);
    expect(await read((await sealedApart('body')).bytes, keys)).toEqual(X_READ);
    expect(await read((await sealedApart('body', [[9, T.BINARY, Uint8Array.of(1, 2)]])).bytes, keys)).toEqual(
      refused({ type: 'Malformed', detail: 'x: column metadata: module too short' }),
    );
    expect(await read((await sealedApart('flipped')).bytes, keys)).toEqual(
      refused({ type: 'DecryptFailed', module: 'x: column metadata' }),
    );
    expect(await read((await sealedApart('empty')).bytes, keys)).toEqual(
      refused({ type: 'Malformed', detail: 'ColumnMetaData: thrift struct ended without STOP' }),
    );
  });

  it('refuses a chunk without metadata', async () => {
    const { bytes } = await xFile({ fields: [[3, T.STRUCT, undefined]] });
    expect(await read(bytes)).toEqual(refused({ type: 'Malformed', detail: 'x: column chunk without metadata' }));
  });

  it('builds page AADs from the stored row group ordinal, or from the index where none is stored', async () => {
    expect(await read((await xFile({ key: 'footer' }, { encrypted: 'spec' })).bytes)).toEqual(X_READ);
    const stored = await build({
      schema: X_SCHEMA,
      rowGroups: [{ rows: 3, ordinal: 5, chunks: [{ path: ['x'], values: 3, pages: X_PAGES, key: 'footer' }] }],
      encrypted: 'spec',
    });
    expect(await read(stored.bytes)).toEqual(X_READ);
    const none = await build({
      schema: X_SCHEMA,
      rowGroups: [1, 4].map((v) => ({
        rows: 1,
        ordinal: null,
        chunks: [{ path: ['x'], values: 1, pages: [dataPage(int32s(v), 1)], key: 'footer' as const }],
      })),
      encrypted: 'spec',
    });
    expect(await read(none.bytes)).toEqual({ ok: true, value: { x: [1, 4] } });
  });

  it('refuses a codec it cannot decompress, by name', async () => {
    const { bytes } = await xFile({ codec: 3 });
    expect(await read(bytes)).toEqual(refused({ type: 'Unsupported', detail: 'x: LZO compression' }));
  });

  it('starts a chunk at its dictionary page only when that comes first', async () => {
    // A dictionary offset past the data page (no dictionary there), and one of 0 (as some writers leave it).
    for (const offset of [(at: Layout) => at.data + 1, () => 0]) {
      const meta = (at: Layout): Field[] => [[11, T.I64, offset(at)]];
      expect(await read((await xFile({ meta })).bytes)).toEqual(X_READ);
      expect(await read((await xFile({ meta, key: 'footer' }, { encrypted: 'spec' })).bytes)).toEqual(X_READ);
    }
  });

  it('refuses a chunk that starts before the data or runs past the file, and reads one that ends at its end', async () => {
    const outside = refused({ type: 'Truncated', detail: 'x: column chunk outside the file' });
    expect(await read((await xFile({ meta: () => [[9, T.I64, 0]] })).bytes)).toEqual(outside);
    expect(await read((await xFile({ meta: () => [[9, T.I64, 3]] })).bytes)).toEqual(outside);
    expect(await read((await xFile({ meta: () => [[7, T.I64, 5000]] })).bytes)).toEqual(outside);
    expect(await read((await xFile({ meta: () => [[7, T.I64, -1]] })).bytes)).toEqual(outside);
    const endsEarly = refused({ type: 'Truncated', detail: 'x: column chunk ends before its values' });
    expect(await read((await xFile({ meta: () => [[7, T.I64, 0]] })).bytes)).toEqual(endsEarly);
    // Sizes of 64 to 8191 take two bytes of varint, so the file's length stays what it was.
    const first = await xFile({ meta: () => [[7, T.I64, 100]] });
    const toEnd = await xFile({ meta: (at) => [[7, T.I64, first.bytes.length - at.start]] });
    expect(toEnd.bytes.length).toBe(first.bytes.length);
    expect(await read(toEnd.bytes)).toEqual(X_READ);
  });

  it('refuses a chunk whose pages hold fewer values than it claims', async () => {
    expect(await read((await xFile({ values: 4 })).bytes)).toEqual(
      refused({ type: 'Truncated', detail: 'x: column chunk ends before its values' }),
    );
  });

  it('refuses row counts its values do not match', async () => {
    const { bytes } = await build({
      schema: X_SCHEMA,
      rowGroups: [{ rows: 4, chunks: [{ path: ['x'], values: 3, pages: X_PAGES }] }],
    });
    expect(await read(bytes)).toEqual(
      refused({ type: 'Malformed', detail: 'x: 3 values for the 4 rows of row group 0' }),
    );
  });
});

describe('pages', () => {
  it('reads a dictionary-encoded column, in either kind of file', async () => {
    const chunk = {
      type: TYPE.BYTE_ARRAY,
      values: 3,
      pages: [dictionaryPage(strings('on', 'off'), 2), indexPage(1, 0, 1)],
    };
    const schema = [root(1), leaf('x', TYPE.BYTE_ARRAY, [6, T.I32, 0])];
    const words = { ok: true, value: { x: ['off', 'on', 'off'] } };
    expect(await read((await xFile(chunk, { schema })).bytes)).toEqual(words);
    expect(await read((await xFile({ ...chunk, key: 'footer' }, { schema, encrypted: 'spec' })).bytes)).toEqual(words);
  });

  it('refuses a dictionary index past the dictionary, or with no dictionary at all', async () => {
    const past = await xFile({ values: 3, pages: [dictionaryPage(int32s(5), 1), indexPage(0, 1, 0)] });
    expect(await read(past.bytes)).toEqual(
      refused({ type: 'Malformed', detail: 'x page dictionary indices: index 1 past a dictionary of 1' }),
    );
    const none = await xFile({ values: 3, pages: [indexPage(0, 0, 0)] });
    expect(await read(none.bytes)).toEqual(
      refused({ type: 'Malformed', detail: 'x page dictionary indices: index 0 past a dictionary of 0' }),
    );
  });

  it('reads an ENUM, by converted or by logical type, as text; other binary stays bytes', async () => {
    const chunk = { type: TYPE.BYTE_ARRAY, pages: [dataPage(strings('red', 'green', 'blue'), 3)] };
    const colours = { ok: true, value: { x: ['red', 'green', 'blue'] } };
    const enumBy = (...annotation: Field[]) =>
      xFile(chunk, { schema: [root(1), leaf('x', TYPE.BYTE_ARRAY, ...annotation)] });
    expect(await read((await enumBy([6, T.I32, 4])).bytes)).toEqual(colours);
    expect(await read((await enumBy([10, T.STRUCT, [[4, T.STRUCT, []]]])).bytes)).toEqual(colours);
    expect(await read((await enumBy()).bytes)).toEqual({ ok: true, value: { x: ['red', 'green', 'blue'].map(utf8) } });
  });

  it('refuses a column annotated LIST or MAP (converted or logical type): only a group may be', async () => {
    const annotated = async (...annotation: Field[]) =>
      read((await xFile({}, { schema: [root(1), leaf('x', TYPE.INT32, ...annotation)] })).bytes);
    const refusedAs = (annotation: string) =>
      refused({ type: 'Malformed', detail: `schema: x: a column annotated ${annotation}, which only a group may be` });
    expect(await annotated([6, T.I32, 3])).toEqual(refusedAs('LIST'));
    expect(await annotated([6, T.I32, 1])).toEqual(refusedAs('MAP'));
    expect(await annotated([6, T.I32, 2])).toEqual(refusedAs('MAP_KEY_VALUE'));
    expect(await annotated([10, T.STRUCT, [[3, T.STRUCT, []]]])).toEqual(refusedAs('LIST'));
    expect(await annotated([10, T.STRUCT, [[2, T.STRUCT, []]]])).toEqual(refusedAs('MAP'));
    // Any other annotation on a column is read as before.
    expect(await annotated([6, T.I32, 17])).toEqual(X_READ);
    // Inside a group, and after a group that has no fault.
    const nested = async (...fields: Field[][]) =>
      read(
        (
          await build({
            schema: [root(2), ...fields],
            rowGroups: [
              {
                rows: 1,
                chunks: [
                  { path: ['s', 'a'], values: 1, pages: [dataPage(int32s(1), 1)] },
                  { path: ['x'], values: 1, pages: [dataPage(int32s(2), 1)] },
                ],
              },
            ],
          })
        ).bytes,
      );
    const group = (a: Field[]): Field[][] => [
      [
        [3, T.I32, 0],
        [4, T.BINARY, 's'],
        [5, T.I32, 1],
      ],
      a,
    ];
    expect(await nested(...group(leaf('a')), leaf('x'))).toEqual({ ok: true, value: { s: [{ a: 1 }], x: [2] } });
    expect(await nested(...group(leaf('a', TYPE.INT32, [6, T.I32, 3])), leaf('x'))).toEqual(
      refused({ type: 'Malformed', detail: 'schema: a: a column annotated LIST, which only a group may be' }),
    );
    expect(await nested(...group(leaf('a')), leaf('x', TYPE.INT32, [6, T.I32, 1]))).toEqual(refusedAs('MAP'));
  });

  it('refuses a dictionary page hyparquet cannot read, or whose values a date cannot hold', async () => {
    const wrongSize = await xFile({ pages: [dictionaryPage(int32s(1, 2), 2, [[2, T.I32, 9]]), indexPage(0, 1, 0)] });
    expect(await read(wrongSize.bytes)).toEqual(
      refused({
        type: 'Malformed',
        detail: 'x dictionary: parquet decompressed page length 8 does not match header 9',
      }),
    );
    const farDate = await xFile(
      { pages: [dictionaryPage(int32s(200_000_000), 1), indexPage(0, 0, 0)] },
      { schema: [root(1), leaf('x', TYPE.INT32, [6, T.I32, 6])] },
    );
    expect(await read(farDate.bytes)).toEqual(
      refused({ type: 'Unsupported', detail: 'x dictionary: date 200000000 days is outside the range' }),
    );
  });

  it('refuses a page that is neither data nor dictionary', async () => {
    const { bytes } = await xFile({ pages: [{ type: PAGE.INDEX, body: new Uint8Array(0) }, ...X_PAGES] });
    expect(await read(bytes)).toEqual(refused({ type: 'Unsupported', detail: 'x: page type INDEX_PAGE' }));
  });

  it('refuses a data page hyparquet cannot read, naming the page', async () => {
    const { bytes } = await xFile({ pages: [dataPage(int32s(1, 2, 3), 3, [[2, T.I32, 13]])] });
    expect(await read(bytes)).toEqual(
      refused({ type: 'Malformed', detail: 'x page: parquet decompressed page length 12 does not match header 13' }),
    );
  });

  it('counts data pages in what it names: a bad header of the second page is page 1', async () => {
    const pages = (second: readonly Field[]) => [dataPage(int32s(1, 2), 2), dataPage(int32s(3), 1, second)];
    expect(await read((await xFile({ pages: pages([]) })).bytes)).toEqual(X_READ);
    expect(await read((await xFile({ pages: pages([[2, T.I32, undefined]]) })).bytes)).toEqual(
      refused({ type: 'Malformed', detail: 'x page 1: page header has no valid uncompressed size' }),
    );
  });

  describe.each([
    ['a plaintext', {}, {}],
    ['an encrypted', { key: 'footer' as const }, { encrypted: 'spec' as const }],
  ])('in %s chunk', (_, chunk, spec) => {
    const page = (patch: Partial<Page>) => xFile({ ...chunk, pages: [{ ...X_PAGES[0]!, ...patch }] }, spec);

    it('refuses a page header that is no header', async () => {
      const { bytes } = await page({ header: Uint8Array.of(0x18, 0x7f) });
      expectRefused(await read(bytes), 'Malformed', /^x page 0 header: thrift binary length 127 exceeds/);
    });

    it('refuses a page header without the page’s size', async () => {
      const { bytes } = await page({ patch: [...X_PAGES[0]!.patch!, [3, T.I32, undefined]] });
      expect(await read(bytes)).toEqual(refused({ type: 'Malformed', detail: 'x page 0: page header has no size' }));
    });
  });
});

describe('modules of an encrypted chunk', () => {
  const sealed = (patch: Partial<Page>, meta?: Chunk['meta']) =>
    xFile({ key: 'footer', pages: [{ ...X_PAGES[0]!, ...patch }], ...(meta ? { meta } : {}) }, { encrypted: 'spec' });

  it('refuses a chunk cut inside a header module or a page module', async () => {
    expect(await read((await sealed({}, () => [[7, T.I64, 2]])).bytes)).toEqual(
      refused({ type: 'Truncated', detail: 'x page 0 header: no module length at 4' }),
    );
    const cut = await sealed({}, (at) => [[7, T.I64, at.end - at.start - 1]]);
    // The page module: nonce, 12 bytes of values, tag.
    expect(await read(cut.bytes)).toEqual(
      refused({ type: 'Truncated', detail: 'x page 0: module of 40 bytes runs past the end' }),
    );
  });

  it('refuses a tampered header or page module, naming it', async () => {
    expect(await read((await sealed({ flip: 'header' })).bytes)).toEqual(
      refused({ type: 'DecryptFailed', module: 'x page 0 header' }),
    );
    expect(await read((await sealed({ flip: 'page' })).bytes)).toEqual(
      refused({ type: 'DecryptFailed', module: 'x page 0' }),
    );
  });

  it('refuses a header that decrypts to nothing', async () => {
    expect(await read((await sealed({ header: new Uint8Array(0) })).bytes)).toEqual(
      refused({ type: 'Malformed', detail: 'x page 0 header: thrift struct ended without STOP' }),
    );
  });

  it('refuses a page whose type is not the one the chunk layout and its AAD say', async () => {
    const dictionaryAsData = await sealed({ type: PAGE.DICTIONARY, role: 'data' });
    expect(await read(dictionaryAsData.bytes)).toEqual(
      refused({ type: 'Malformed', detail: 'x page 0: page type does not match the chunk layout' }),
    );
  });

  it('refuses a page module whose size is not the one its header gives', async () => {
    const { bytes } = await sealed({ patch: [...X_PAGES[0]!.patch!, [3, T.I32, 12 + 31]] });
    expect(await read(bytes)).toEqual(
      refused({ type: 'Malformed', detail: 'x page 0: page module size disagrees with its header' }),
    );
  });

  it('reads DuckDB’s files: no column marked, every module sealed without AAD, sizes of the page alone', async () => {
    const duck = await build({
      schema: [root(2), leaf('x'), leaf('s', TYPE.BYTE_ARRAY, [6, T.I32, 0])],
      rowGroups: [
        {
          rows: 3,
          chunks: [
            { path: ['x'], values: 3, pages: X_PAGES },
            {
              path: ['s'],
              type: TYPE.BYTE_ARRAY,
              values: 3,
              pages: [dictionaryPage(strings('d', 'k'), 2), indexPage(1, 1, 0)],
            },
          ],
        },
      ],
      encrypted: 'duckdb',
    });
    expect(await read(duck.bytes, { footerKey: FOOTER_KEY, duckdbNoAad: true })).toEqual({
      ok: true,
      value: { x: [1, 2, 3], s: ['k', 'k', 'd'] },
    });
  });
});

describe('reading columns and rows', () => {
  const struct = (b: readonly number[]) =>
    build({
      schema: [
        root(1),
        [
          [3, T.I32, 0],
          [4, T.BINARY, 's'],
          [5, T.I32, 2],
        ],
        leaf('a'),
        leaf('b'),
      ],
      rowGroups: [
        {
          rows: 2,
          chunks: [
            { path: ['s', 'a'], values: 2, pages: [dataPage(int32s(1, 2), 2)] },
            { path: ['s', 'b'], values: b.length, pages: [dataPage(int32s(...b), b.length)] },
          ],
        },
      ],
    });

  it('assembles a struct from its leaves, and refuses leaves of different lengths', async () => {
    const file = await opened((await struct([3, 4])).bytes);
    expect(file.columns.map((c) => [c.path, c.name])).toEqual([
      ['s.a', 's'],
      ['s.b', 's'],
    ]);
    expect(await file.readRows()).toEqual({ ok: true, value: [{ s: { a: 1, b: 3 } }, { s: { a: 2, b: 4 } }] });
    expect(await read((await struct([3, 4, 5])).bytes)).toEqual(
      refused({ type: 'Malformed', detail: 's: nested column: parquet struct parsing error' }),
    );
  });

  it('refuses a schema with a field without a name, a group or a column', async () => {
    const { bytes } = await build({
      schema: [
        root(1),
        [
          [3, T.I32, 0],
          [5, T.I32, 1],
        ],
        leaf('a'),
      ],
      rowGroups: [{ rows: 1, chunks: [{ path: ['a'], values: 1, pages: [dataPage(int32s(1), 1)] }] }],
    });
    expect(await read(bytes)).toEqual(refused({ type: 'Malformed', detail: 'schema: a field without a name' }));
    const leafless = await build({
      schema: [
        root(1),
        [
          [1, T.I32, TYPE.INT32],
          [3, T.I32, 0],
        ],
      ],
      rowGroups: [{ rows: 1, chunks: [{ path: [''], values: 1, pages: [dataPage(int32s(1), 1)] }] }],
    });
    expect(await read(leafless.bytes)).toEqual(
      refused({ type: 'Malformed', detail: 'schema: a field without a name' }),
    );
  });

  const threeGroups = async () =>
    opened(
      (
        await build({
          schema: X_SCHEMA,
          rowGroups: [10, 20, 30].map((v) => ({
            rows: 2,
            chunks: [{ path: ['x'], values: 2, pages: [dataPage(int32s(v, v + 1), 2)] }],
          })),
        })
      ).bytes,
    );

  it('reads a flat column as its typed array, the chosen row groups in the order asked', async () => {
    const file = await threeGroups();
    expect(await file.readColumns()).toEqual({ ok: true, value: { x: Int32Array.of(10, 11, 20, 21, 30, 31) } });
    expect(await file.readColumns({ rowGroups: [2, 0] })).toEqual({
      ok: true,
      value: { x: Int32Array.of(30, 31, 10, 11) },
    });
  });

  it.each([-1, 0.5, 3, 4])('throws for row group %d of three', async (g) => {
    const file = await threeGroups();
    const reading = file.readColumns({ rowGroups: [g] });
    await expect(reading).rejects.toBeInstanceOf(RangeError);
    await expect(reading).rejects.toThrow(`parquet: no row group ${g}`);
  });

  it('names a column the file does not have', async () => {
    const file = await threeGroups();
    expect(await file.readColumns({ columns: ['x', 'y'] })).toEqual(
      refused({ type: 'Malformed', detail: 'no column y' }),
    );
  });

  it('reads no rows when asked for no columns', async () => {
    const file = await threeGroups();
    expect(await file.readRows({ columns: [] })).toEqual({ ok: true, value: [] });
    expect(await file.readRows({ columns: ['x'] })).toMatchObject({ ok: true, value: { length: 6, 5: { x: 31 } } });
  });
});
