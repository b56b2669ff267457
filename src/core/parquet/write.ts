/**
 * Writing encrypted Parquet (SOP/1 objects): Parquet Modular Encryption in
 * encrypted-footer mode, AES_GCM_V1, uniform encryption under one footer key
 * (the object's DEK), 8 random bytes of aad_file_unique, no AAD prefix,
 * RowGroup.ordinal written (Encryption.md §5.4; facts in
 * shared/notes/parquet-encryption.md).
 *
 *   "PARE"
 *   per row group, per column: [dictionary page header module][dictionary page module]
 *                              ([data page header module][data page module])…
 *   FileCryptoMetaData (plain thrift) ‖ footer module (FileMetaData, AAD type 0)
 *   u32 LE length(FileCryptoMetaData ‖ footer module) ‖ "PARE"
 *
 * Pages are DATA_PAGE (V1) — the kind every reader accepts, and the only kind
 * DuckDB decrypts — built from hyparquet-writer's encoders (PLAIN, the RLE /
 * bit-packed hybrid, Snappy) rather than its V2-only page writer. Column chunks
 * carry ENCRYPTION_WITH_FOOTER_KEY, their ColumnMetaData stays inside the
 * encrypted footer. Sizes count modules whole: compressed_page_size is the page
 * module's length, total_compressed_size includes the header modules.
 *
 * Streaming: each row group is encoded, encrypted and handed to the sink
 * before the next is accepted, so a large import holds one row group at a time.
 */
import { ByteWriter } from 'hyparquet-writer/src/bytewriter.js';
import { deltaBinaryPack } from 'hyparquet-writer/src/delta.js';
import { writeRleBitPackedHybrid } from 'hyparquet-writer/src/encoding.js';
import { writePlain } from 'hyparquet-writer/src/plain.js';
import { snappyCompress } from 'hyparquet-writer/src/snappy.js';
import { concatAll } from '../bytes.js';
import type { Random } from '../ports.js';
import { err, ok, type Result } from '../result.js';
import {
  EMPTY_STATS,
  mergeStats,
  prepareColumn,
  cellCount,
  type ChunkStats,
  type ColumnCells,
  type PreparedColumn,
  type ValueError,
} from './columns.js';
import {
  GCM_MODULE_OVERHEAD,
  isAesKeyLength,
  MAX_PAGES_PER_CHUNK,
  MODULE,
  moduleAad,
  NONCE_BYTES,
  sealModule,
  type AesKey,
  type FileAad,
  type PmeCipher,
} from './modules.js';
import {
  checkSchema,
  PHYSICAL,
  physicalOf,
  ROW_ID_BYTES,
  type CellValue,
  type ColumnSpec,
  type SchemaError,
} from './schema.js';
import { encodeStruct, T, type Field } from './thrift.js';

export const PARE = Uint8Array.of(0x50, 0x41, 0x52, 0x45);
export const AAD_FILE_UNIQUE_BYTES = 8;
/**
 * One data page per column chunk unless asked otherwise. DuckDB 1.5 (our
 * independent reader) builds every data-page AAD with page ordinal 0 — checked
 * here: a chunk of two pages fails its tag check, the same bytes with ordinal 0
 * pass — so a multi-page chunk written to the spec is unreadable to it. A
 * single-page chunk has ordinal 0 under both readings. Row groups stay bounded
 * (the object writer's default is 100,000 rows), which bounds the page size.
 */
export const DEFAULT_PAGE_BYTES = Number.POSITIVE_INFINITY;
export const MAX_ROW_GROUPS = 32767;

const ENCODING = { PLAIN: 0, RLE: 3, DELTA_BINARY_PACKED: 5, RLE_DICTIONARY: 8 } as const;
const CODECS: Record<Codec, number> = { UNCOMPRESSED: 0, SNAPPY: 1, ZSTD: 6 };
const PAGE = { DATA_PAGE: 0, DICTIONARY_PAGE: 2 } as const;

export type WriterOptions = {
  readonly columns: readonly ColumnSpec[];
  /** The footer key (an object's DEK): 16, 24 or 32 bytes. */
  readonly footerKey: Uint8Array;
  readonly cipher: PmeCipher;
  readonly random: Random;
  /** Receives the file's bytes in order; the next row group waits for it. */
  readonly sink: (bytes: Uint8Array) => void | Promise<void>;
  /** Target uncompressed bytes per data page. */
  readonly pageBytes?: number;
  readonly createdBy?: string;
  /** Page compression; Snappy (pure JS, always here) unless told otherwise. */
  readonly compression?: PageCompression;
};

export type Codec = 'SNAPPY' | 'UNCOMPRESSED' | 'ZSTD';

/**
 * How pages are compressed: the codec the file names and the function that makes its
 * bytes. ZSTD comes from outside the core (a WebAssembly build of the reference zstd,
 * started asynchronously by the runtime: src/runtime/zstd.ts).
 */
export type PageCompression = { readonly codec: Codec; readonly compress: (raw: Uint8Array) => Uint8Array };

export const SNAPPY: PageCompression = { codec: 'SNAPPY', compress: snappyCompress };
export const UNCOMPRESSED: PageCompression = { codec: 'UNCOMPRESSED', compress: (raw) => raw };

export type ColumnSummary = ChunkStats & { readonly name: string };

export type WrittenFile = {
  readonly rows: number;
  readonly bytes: number;
  readonly rowGroups: number;
  /** Whole-file statistics per column, merged over the row groups. */
  readonly columns: readonly ColumnSummary[];
};

export type WriteError = SchemaError | ValueError | { readonly type: 'TooLarge'; readonly detail: string };

/** One module to emit: its plaintext and AAD, encrypted when the row group is flushed. */
type PendingModule = { readonly plain: Uint8Array; readonly aad: Uint8Array };

type EncodedChunk = {
  readonly modules: PendingModule[];
  readonly meta: readonly Field[];
  readonly bytes: number;
  readonly uncompressed: number;
};

function levelsSection(levels: Uint8Array): Uint8Array {
  const w = new ByteWriter();
  w.appendUint32(0);
  const length = writeRleBitPackedHybrid(w, levels, 1);
  w.view.setUint32(0, length, true);
  return w.getBytes();
}

function dictionaryIndexes(indexes: Uint32Array, entries: number): Uint8Array {
  const w = new ByteWriter();
  const bitWidth = Math.max(1, Math.ceil(Math.log2(entries)));
  w.appendUint8(bitWidth);
  writeRleBitPackedHybrid(w, indexes, bitWidth);
  return w.getBytes();
}

/** PLAIN encoding of values [from, to) (parquet Encodings.md): fixed-width bytes as they lie, booleans bit-packed LSB first, strings length-prefixed UTF-8. */
function plainValues(column: PreparedColumn, from: number, to: number): Uint8Array {
  const { values } = column;
  if (values.kind === 'fixed') return values.bytes.subarray(from * values.width, to * values.width);
  if (values.kind === 'bool') {
    const out = new Uint8Array(Math.ceil((to - from) / 8));
    for (let i = from; i < to; i++) if (values.data[i]) out[(i - from) >> 3]! |= 1 << ((i - from) & 7);
    return out;
  }
  let size = 0;
  for (let i = from; i < to; i++) size += values.data[i]!.length * 3 + 4;
  const out = new Uint8Array(size);
  const view = new DataView(out.buffer);
  let at = 0;
  for (let i = from; i < to; i++) {
    const { written } = ENCODER.encodeInto(values.data[i]!, out.subarray(at + 4));
    view.setUint32(at, written, true);
    at += 4 + written;
  }
  return out.subarray(0, at);
}

const ENCODER = new TextEncoder();

/**
 * Integer columns (int32, int64, timestamps) are written DELTA_BINARY_PACKED: measurement
 * times and counters move in small steps, so their deltas pack into a few bits where PLAIN
 * spends 8 bytes a value (1,000,000 timestamps a second apart: 1.9 MB PLAIN + ZSTD, a few KB
 * delta-packed). Every reader we check against decodes it in V1 pages (DuckDB, hyparquet).
 */
function deltaEncoded(column: PreparedColumn): boolean {
  const { type } = column.spec;
  return !column.dictionary && (type === 'int32' || type === 'int64' || type === 'timestamp');
}

/** DELTA_BINARY_PACKED values [from, to) of a fixed-width integer column (its bytes are little-endian). */
function deltaValues(column: PreparedColumn, from: number, to: number): Uint8Array {
  const { values } = column;
  if (values.kind !== 'fixed') throw new Error('parquet: delta encoding takes integer columns');
  const view = new DataView(values.bytes.buffer, values.bytes.byteOffset, values.bytes.byteLength);
  const w = new ByteWriter();
  if (values.width === 4) {
    const ints = new Int32Array(to - from);
    for (let i = from; i < to; i++) ints[i - from] = view.getInt32(i * 4, true);
    deltaBinaryPack(w, ints, 'INT32');
  } else {
    const longs = new BigInt64Array(to - from);
    for (let i = from; i < to; i++) longs[i - from] = view.getBigInt64(i * 8, true);
    deltaBinaryPack(w, longs, 'INT64');
  }
  return w.getBytes();
}

function valueBytes(column: PreparedColumn, i: number): number {
  if (column.dictionary) return 4;
  const { values } = column;
  if (values.kind === 'fixed') return values.width;
  if (values.kind === 'bool') return 0.125;
  return values.data[i]!.length + 4;
}

/** Splits rows into pages of about `pageBytes`: [first row, end row, first value, end value]. */
function pages(column: PreparedColumn, pageBytes: number): [number, number, number, number][] {
  const out: [number, number, number, number][] = [];
  let startRow = 0;
  let startValue = 0;
  let value = 0;
  let bytes = 0;
  for (let row = 0; row < column.rows; row++) {
    const present = !column.spec.nullable || column.levels[row] === 1;
    if (present) bytes += valueBytes(column, value++);
    if (bytes >= pageBytes && row + 1 < column.rows) {
      out.push([startRow, row + 1, startValue, value]);
      startRow = row + 1;
      startValue = value;
      bytes = 0;
    }
  }
  out.push([startRow, column.rows, startValue, value]);
  return out;
}

function statisticsFields(stats: ChunkStats): Field[] {
  return [
    [3, T.I64, stats.nulls],
    [5, T.BINARY, stats.maxBytes],
    [6, T.BINARY, stats.minBytes],
    [7, T.BOOL, stats.maxBytes ? true : undefined],
    [8, T.BOOL, stats.minBytes ? true : undefined],
  ];
}

function pageHeader(type: number, uncompressed: number, compressed: number, detail: Field): Uint8Array {
  return encodeStruct([[1, T.I32, type], [2, T.I32, uncompressed], [3, T.I32, compressed], detail]);
}

/** Encodes one column chunk into modules; offsets follow from the module sizes, known before encrypting. */
function encodeChunk(
  column: PreparedColumn,
  file: FileAad,
  rowGroup: number,
  ordinal: number,
  offset: number,
  pageBytes: number,
  { codec, compress }: PageCompression,
): Result<EncodedChunk, WriteError> {
  const modules: PendingModule[] = [];
  let at = offset;
  let uncompressed = 0;
  const push = (plain: Uint8Array, aad: Uint8Array): number => {
    const start = at;
    modules.push({ plain, aad });
    at += plain.length + GCM_MODULE_OVERHEAD;
    return start;
  };
  const ordinals = { rowGroup, column: ordinal };
  const { dictionary } = column;
  let dictionaryOffset: number | undefined;
  const encodings: number[] = [];
  if (dictionary) {
    const w = new ByteWriter();
    writePlain(w, dictionary.entries as never, 'BYTE_ARRAY', undefined);
    const body = compress(w.getBytes());
    const header = pageHeader(PAGE.DICTIONARY_PAGE, w.offset, body.length + GCM_MODULE_OVERHEAD, [
      7,
      T.STRUCT,
      [
        [1, T.I32, dictionary.entries.length],
        [2, T.I32, ENCODING.PLAIN],
      ],
    ]);
    dictionaryOffset = push(header, moduleAad(file, MODULE.DICTIONARY_PAGE_HEADER, ordinals));
    push(body, moduleAad(file, MODULE.DICTIONARY_PAGE, ordinals));
    uncompressed += header.length + w.offset;
    encodings.push(ENCODING.PLAIN, ENCODING.RLE_DICTIONARY);
  } else encodings.push(deltaEncoded(column) ? ENCODING.DELTA_BINARY_PACKED : ENCODING.PLAIN);
  if (column.spec.nullable) encodings.push(ENCODING.RLE);

  const split = pages(column, pageBytes);
  if (split.length > MAX_PAGES_PER_CHUNK)
    return err({ type: 'TooLarge', detail: `${column.spec.name}: too many pages` });
  let dataOffset = -1;
  split.forEach(([fromRow, toRow, fromValue, toValue], page) => {
    const parts: Uint8Array[] = [];
    if (column.spec.nullable) parts.push(levelsSection(column.levels.subarray(fromRow, toRow)));
    const delta = deltaEncoded(column);
    parts.push(
      dictionary
        ? dictionaryIndexes(dictionary.indexes.subarray(fromValue, toValue), dictionary.entries.length)
        : delta
          ? deltaValues(column, fromValue, toValue)
          : plainValues(column, fromValue, toValue),
    );
    const raw = parts.length === 1 ? parts[0]! : concatAll(parts);
    const body = compress(raw);
    const header = pageHeader(PAGE.DATA_PAGE, raw.length, body.length + GCM_MODULE_OVERHEAD, [
      5,
      T.STRUCT,
      [
        [1, T.I32, toRow - fromRow],
        [2, T.I32, dictionary ? ENCODING.RLE_DICTIONARY : delta ? ENCODING.DELTA_BINARY_PACKED : ENCODING.PLAIN],
        [3, T.I32, ENCODING.RLE],
        [4, T.I32, ENCODING.RLE],
      ],
    ]);
    const headerAt = push(header, moduleAad(file, MODULE.DATA_PAGE_HEADER, { ...ordinals, page }));
    if (dataOffset < 0) dataOffset = headerAt;
    push(body, moduleAad(file, MODULE.DATA_PAGE, { ...ordinals, page }));
    uncompressed += header.length + raw.length;
  });

  const meta: Field[] = [
    [1, T.I32, PHYSICAL[physicalOf(column.spec.type)]],
    [2, T.LIST, { elem: T.I32, items: encodings }],
    [3, T.LIST, { elem: T.BINARY, items: [column.spec.name] }],
    [4, T.I32, CODECS[codec]],
    [5, T.I64, column.rows],
    [6, T.I64, uncompressed],
    [7, T.I64, at - offset],
    [9, T.I64, dataOffset],
    [11, T.I64, dictionaryOffset],
    [12, T.STRUCT, statisticsFields(column.stats)],
  ];
  return ok({ modules, meta, bytes: at - offset, uncompressed });
}

function schemaElement(spec: ColumnSpec): Field[] {
  const logical: Field | undefined =
    spec.type === 'string'
      ? [10, T.STRUCT, [[1, T.STRUCT, []]]]
      : spec.type === 'timestamp'
        ? [
            10,
            T.STRUCT,
            [
              [
                8,
                T.STRUCT,
                [
                  [1, T.BOOL, true],
                  [2, T.STRUCT, [[1, T.STRUCT, []]]],
                ],
              ],
            ],
          ]
        : undefined;
  return [
    [1, T.I32, PHYSICAL[physicalOf(spec.type)]],
    [2, T.I32, spec.type === 'rowid' ? ROW_ID_BYTES : undefined],
    [3, T.I32, spec.nullable ? 1 : 0],
    [4, T.BINARY, spec.name],
    [6, T.I32, spec.type === 'string' ? 0 : spec.type === 'timestamp' ? 9 : undefined],
    ...(logical ? [logical] : []),
  ];
}

/** Writes one encrypted Parquet file, a row group per `writeRowGroup` call. */
export class EncryptedParquetWriter {
  readonly #options: WriterOptions;
  readonly #columns: readonly ColumnSpec[];
  readonly #key: AesKey;
  readonly #file: FileAad;
  readonly #pageBytes: number;
  readonly #rowGroups: Field[][] = [];
  #summaries: ColumnSummary[];
  #offset = 0;
  #rows = 0;
  #done = false;

  private constructor(options: WriterOptions, columns: readonly ColumnSpec[], key: AesKey, fileUnique: Uint8Array) {
    this.#options = options;
    this.#columns = columns;
    this.#key = key;
    this.#file = { prefix: new Uint8Array(0), fileUnique };
    this.#pageBytes = options.pageBytes ?? DEFAULT_PAGE_BYTES;
    this.#summaries = columns.map((c) => ({ ...EMPTY_STATS, name: c.name }));
  }

  static async start(options: WriterOptions): Promise<Result<EncryptedParquetWriter, WriteError>> {
    const columns = checkSchema(options.columns);
    if (!columns.ok) return columns;
    if (!isAesKeyLength(options.footerKey)) throw new Error('parquet: footer key must be 16, 24 or 32 bytes');
    const key = await options.cipher.key(options.footerKey);
    const writer = new EncryptedParquetWriter(options, columns.value, key, options.random.bytes(AAD_FILE_UNIQUE_BYTES));
    await writer.#emit(PARE);
    return ok(writer);
  }

  async #emit(bytes: Uint8Array): Promise<void> {
    this.#offset += bytes.length;
    await this.#options.sink(bytes);
  }

  async #seal(module: PendingModule): Promise<Uint8Array> {
    return sealModule(this.#key, this.#options.random.bytes(NONCE_BYTES), module.aad, module.plain);
  }

  /** Encodes, encrypts and emits one row group: a column of cells per schema column, all of one length. */
  async writeRowGroup(cells: Readonly<Record<string, ColumnCells>>): Promise<Result<void, WriteError>> {
    if (this.#done) throw new Error('parquet: writer already finished');
    const first = this.#columns[0]!.name;
    const firstColumn = cells[first];
    // Every column is given, even for no rows: a missing one is a caller's fault, never a
    // reason to drop the values of the others.
    if (!firstColumn) return err({ type: 'InvalidValue', column: first, row: 0, detail: 'column missing' });
    const rows = cellCount(firstColumn);
    if (rows === 0) {
      for (const { name } of this.#columns) {
        const column = cells[name];
        if (!column) return err({ type: 'InvalidValue', column: name, row: 0, detail: 'column missing' });
        if (cellCount(column) !== 0)
          return err({ type: 'InvalidValue', column: name, row: 0, detail: 'expected 0 values' });
      }
      return ok(undefined);
    }
    if (this.#rowGroups.length >= MAX_ROW_GROUPS) return err({ type: 'TooLarge', detail: 'too many row groups' });
    const prepared: PreparedColumn[] = [];
    for (const spec of this.#columns) {
      const column = cells[spec.name];
      if (!column || cellCount(column) !== rows) {
        return err({
          type: 'InvalidValue',
          column: spec.name,
          row: column ? cellCount(column) : 0,
          detail: `expected ${rows} values`,
        });
      }
      const p = prepareColumn(spec, column);
      if (!p.ok) return p;
      prepared.push(p.value);
    }
    const ordinal = this.#rowGroups.length;
    const start = this.#offset;
    let at = start;
    let uncompressed = 0;
    const chunks: EncodedChunk[] = [];
    for (let c = 0; c < prepared.length; c++) {
      const chunk = encodeChunk(
        prepared[c]!,
        this.#file,
        ordinal,
        c,
        at,
        this.#pageBytes,
        this.#options.compression ?? SNAPPY,
      );
      if (!chunk.ok) return chunk;
      chunks.push(chunk.value);
      at += chunk.value.bytes;
      uncompressed += chunk.value.uncompressed;
    }
    const sealed = await Promise.all(chunks.flatMap((chunk) => chunk.modules.map((m) => this.#seal(m))));
    await this.#emit(concatAll(sealed));
    if (this.#offset !== at) throw new Error('parquet: module layout does not match what was written');

    let chunkAt = start;
    const columnChunks = chunks.map((chunk) => {
      const fields: Field[] = [
        [2, T.I64, chunkAt],
        [3, T.STRUCT, chunk.meta],
        [8, T.STRUCT, [[1, T.STRUCT, []]]],
      ];
      chunkAt += chunk.bytes;
      return fields;
    });
    this.#rowGroups.push([
      [1, T.LIST, { elem: T.STRUCT, items: columnChunks }],
      [2, T.I64, uncompressed],
      [3, T.I64, rows],
      [5, T.I64, start],
      [6, T.I64, at - start],
      [7, T.I16, ordinal],
    ]);
    this.#summaries = this.#summaries.map((s, i) => ({
      ...mergeStats(s, prepared[i]!.stats),
      name: s.name,
    }));
    this.#rows += rows;
    return ok(undefined);
  }

  /** Writes the encrypted footer and closing magic. */
  async finish(): Promise<WrittenFile> {
    if (this.#done) throw new Error('parquet: writer already finished');
    this.#done = true;
    const footer = encodeStruct([
      [1, T.I32, 2],
      [
        2,
        T.LIST,
        {
          elem: T.STRUCT,
          items: [
            [
              [4, T.BINARY, 'schema'],
              [5, T.I32, this.#columns.length],
            ],
            ...this.#columns.map(schemaElement),
          ],
        },
      ],
      [3, T.I64, this.#rows],
      [4, T.LIST, { elem: T.STRUCT, items: this.#rowGroups }],
      [6, T.BINARY, this.#options.createdBy ?? 'sovereign-mesh sop/1'],
      [7, T.LIST, { elem: T.STRUCT, items: this.#columns.map(() => [[1, T.STRUCT, []]] as Field[]) }],
    ]);
    const crypto = encodeStruct([
      [
        1,
        T.STRUCT,
        [
          [
            1,
            T.STRUCT,
            [
              [2, T.BINARY, this.#file.fileUnique],
              [3, T.BOOL, false],
            ],
          ],
        ],
      ],
    ]);
    const footerModule = await sealModule(
      this.#key,
      this.#options.random.bytes(NONCE_BYTES),
      moduleAad(this.#file, MODULE.FOOTER),
      footer,
    );
    const tail = new Uint8Array(crypto.length + footerModule.length + 8);
    tail.set(crypto, 0);
    tail.set(footerModule, crypto.length);
    new DataView(tail.buffer).setUint32(crypto.length + footerModule.length, crypto.length + footerModule.length, true);
    tail.set(PARE, tail.length - 4);
    await this.#emit(tail);
    return { rows: this.#rows, bytes: this.#offset, rowGroups: this.#rowGroups.length, columns: this.#summaries };
  }
}

/** Writes rows (objects keyed by column name) as one encrypted file, `rowGroupRows` rows per row group. */
export async function writeEncryptedParquet(
  rows: readonly Readonly<Record<string, CellValue>>[],
  options: Omit<WriterOptions, 'sink'> & { readonly rowGroupRows?: number },
): Promise<Result<{ bytes: Uint8Array; file: WrittenFile }, WriteError>> {
  const parts: Uint8Array[] = [];
  const started = await EncryptedParquetWriter.start({ ...options, sink: (b) => void parts.push(b) });
  if (!started.ok) return started;
  const writer = started.value;
  const groupRows = options.rowGroupRows ?? 100_000;
  for (let from = 0; from < rows.length; from += groupRows) {
    const slice = rows.slice(from, from + groupRows);
    const cells: Record<string, CellValue[]> = {};
    for (const spec of options.columns) cells[spec.name] = slice.map((r) => r[spec.name] ?? null);
    const written = await writer.writeRowGroup(cells);
    if (!written.ok) return written;
  }
  const file = await writer.finish();
  return ok({ bytes: concatAll(parts), file });
}
