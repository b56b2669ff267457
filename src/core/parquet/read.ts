/**
 * Reading Parquet with Modular Encryption — the whole standard, not only our
 * own files (Encryption.md §5): encrypted footers (`PARE`) and signed
 * plaintext footers (`PAR1` + nonce‖tag), AES_GCM_V1 and AES_GCM_CTR_V1,
 * uniform and per-column keys, AAD prefixes stored in the file or supplied by
 * the caller; unencrypted files too.
 *
 * hyparquet does not decrypt, and it coalesces adjacent column-chunk reads, so
 * a decrypting buffer under it cannot work. Instead each column chunk is walked
 * module by module here — page header, then page — and every decrypted page is
 * handed to hyparquet's page decoder (`parquetHeader`, `readPage`), which does
 * levels, encodings, dictionaries, decompression and type conversion.
 *
 * Every length read from the file is bounded by the file before it is used;
 * anything malformed, truncated, tampered or keyed wrongly is a typed
 * `ParquetError`, never a partial result.
 */
import { assembleNested } from 'hyparquet/src/assemble.js';
import { parquetHeader, readPage } from 'hyparquet/src/column.js';
import { convert } from 'hyparquet/src/convert.js';
import { parquetSchema } from 'hyparquet/src/metadata.js';
import type {
  ColumnDecoder,
  ColumnMetaData,
  Compressors,
  DecodedArray,
  FileMetaData,
  PageHeader,
  SchemaTree,
} from 'hyparquet/src/types.js';
import {
  asMetadata,
  columnMetaOf,
  rawStruct,
  readTail,
  type Algorithm,
  type Cipher,
  type FooterMode,
  type RawStruct,
  type ReadKeys,
  type ReadOptions,
  type Tail,
} from './footer.js';
import { DECOMPRESSORS, isReadableCodec } from './codecs.js';
import { bytesSource, tailBytes, withTail, type ByteSource } from './source.js';
import { checkedPage } from './hybrid.js';
import {
  checkHeader,
  concatValues,
  escapedAsMalformed,
  guarded,
  isCount,
  malformed,
  PARSERS,
  settled,
  u32,
} from './decoding.js';
import type { ColumnValues } from './decoding.js';
import { err, ok, type Result } from '../result.js';
import {
  isAesKeyLength,
  MODULE,
  moduleAad,
  moduleAt,
  NONCE_BYTES,
  openCtrBody,
  openGcmBody,
  TAG_BYTES,
  type AesKey,
  type FileAad,
  type ParquetError,
  type PmeCipher,
} from './modules.js';

export type { ColumnValues } from './decoding.js';
export type { Algorithm, FooterMode, ReadKeys, ReadOptions } from './footer.js';
export type { ByteSource } from './source.js';

export type ColumnInfo = {
  /** Dotted path of the leaf. */
  readonly path: string;
  /** The top-level field the leaf belongs to: the name of the column a reader sees. */
  readonly name: string;
  readonly type: string;
  /** How the leaf's chunks are protected: none, the footer key, or a key of its own. */
  readonly protection: 'plaintext' | 'footer-key' | 'column-key';
};

type Leaf = ColumnInfo & { readonly ordinal: number; readonly schemaPath: SchemaTree[]; readonly top: SchemaTree };

/** An opened Parquet file: footer checked and decoded, columns read on demand. */
/**
 * What makes a schema unreadable before any page is: a field without a name (SchemaElement.name
 * is required, and a column is found by its name), or a column annotated LIST or MAP. Those
 * annotations belong to the group around a repeated field; on a column they describe nothing
 * to assemble, and hyparquet's assembly fails on them.
 */
function schemaFault(node: SchemaTree): string | undefined {
  for (const child of node.children) {
    const { name, converted_type: converted, logical_type: logical } = child.element;
    if (!name) return 'a field without a name';
    const annotation = [converted, logical?.type].find((a) => GROUP_ONLY.has(a));
    if (child.children.length === 0 && annotation)
      return `${name}: a column annotated ${annotation}, which only a group may be`;
    const fault = schemaFault(child);
    if (fault) return fault;
  }
  return undefined;
}

/** The annotations only a group may carry. */
const GROUP_ONLY: ReadonlySet<string | undefined> = new Set(['LIST', 'MAP', 'MAP_KEY_VALUE']);

export class ParquetFile {
  readonly metadata: FileMetaData;
  readonly mode: FooterMode;
  readonly algorithm: Algorithm | undefined;
  readonly columns: readonly ColumnInfo[];
  readonly #source: ByteSource;
  readonly #keys: ReadKeys;
  readonly #cipher: PmeCipher;
  readonly #aad: FileAad | undefined;
  readonly #leaves: readonly Leaf[];
  readonly #keyCache = new Map<string, Promise<AesKey>>();
  readonly #compressors: Compressors;

  private constructor(
    source: ByteSource,
    tail: Tail,
    metadata: FileMetaData,
    keys: ReadKeys,
    cipher: PmeCipher,
    leaves: Leaf[],
    compressors: Compressors,
  ) {
    this.#source = source;
    this.#compressors = compressors;
    this.metadata = metadata;
    this.mode = tail.mode;
    this.algorithm = tail.algorithm;
    this.#aad = tail.aad;
    this.#keys = keys;
    this.#cipher = cipher;
    this.#leaves = leaves;
    this.columns = leaves.map(({ path, name, type, protection }) => ({ path, name, type, protection }));
  }

  /** `input`: the whole file, or a source that reads its byte ranges on demand (source.ts). */
  static async open(
    input: Uint8Array | ByteSource,
    keys: ReadKeys,
    cipher: PmeCipher,
    options: ReadOptions = {},
  ): Promise<Result<ParquetFile, ParquetError>> {
    return escapedAsMalformed('file', () => ParquetFile.#open(input, keys, cipher, options));
  }

  static async #open(
    input: Uint8Array | ByteSource,
    keys: ReadKeys,
    cipher: PmeCipher,
    options: ReadOptions,
  ): Promise<Result<ParquetFile, ParquetError>> {
    let source: ByteSource;
    let tailRegion: Uint8Array;
    if (input instanceof Uint8Array) {
      source = bytesSource(input);
      tailRegion = input;
    } else {
      const read = await tailBytes(input);
      if (!read.ok) return read;
      source = withTail(input, read.value.end);
      tailRegion = read.value.tail;
    }
    const tail = await readTail(tailRegion, keys, cipher);
    if (!tail.ok) return tail;
    const metadata = asMetadata(tail.value.footer);
    if (!metadata.ok) return metadata;
    const tree = guarded('schema', () => parquetSchema(metadata.value));
    if (!tree.ok) return tree;
    const fault = schemaFault(tree.value);
    if (fault) return err(malformed(`schema: ${fault}`));
    const leaves: Leaf[] = [];
    const visit = (node: SchemaTree, path: SchemaTree[]): void => {
      if (node.children.length === 0) {
        const names = path.map((n) => n.element.name);
        const chunk = metadata.value.row_groups[0]?.columns[leaves.length];
        const crypto = chunk?.crypto_metadata as RawStruct | undefined;
        leaves.push({
          path: names.join('.'),
          name: names[0]!,
          type: node.element.type ?? 'UNKNOWN',
          protection: !crypto ? 'plaintext' : crypto['field_2'] ? 'column-key' : 'footer-key',
          ordinal: leaves.length,
          schemaPath: [tree.value, ...path],
          top: path[0]!,
        });
        return;
      }
      for (const child of node.children) visit(child, [...path, child]);
    };
    for (const child of tree.value.children) visit(child, [child]);
    for (const group of metadata.value.row_groups) {
      if (group.columns.length !== leaves.length)
        return err(malformed('row group column count differs from the schema'));
    }
    const compressors = { ...DECOMPRESSORS, ...options.decompressors };
    return ok(new ParquetFile(source, tail.value, metadata.value, keys, cipher, leaves, compressors));
  }

  /** The rows the row groups hold (what is read; some writers leave the footer's own count at 0). */
  get rowCount(): number {
    return this.metadata.row_groups.reduce((n, g) => n + Number(g.num_rows), 0);
  }

  #key(raw: Uint8Array): Promise<AesKey> {
    const id = Array.from(raw).join(',');
    let key = this.#keyCache.get(id);
    if (!key) {
      key = this.#cipher.key(raw);
      this.#keyCache.set(id, key);
    }
    return key;
  }

  /** The cipher for one leaf's chunks, or undefined for a plaintext column. */
  async #chunkCipher(leaf: Leaf, crypto: RawStruct | undefined): Promise<Result<Cipher | undefined, ParquetError>> {
    // DuckDB marks no column as encrypted, yet encrypts every one with the footer key.
    if (!crypto && this.#aad?.none) crypto = {};
    if (!crypto) return ok(undefined);
    if (!this.#aad || !this.algorithm) return err(malformed('encrypted column chunk in an unencrypted file'));
    const raw = crypto['field_2'] ? this.#keys.columnKeys?.get(leaf.path) : this.#keys.footerKey;
    if (!raw) return err({ type: 'KeyMissing', column: leaf.path });
    if (!isAesKeyLength(raw)) return err({ type: 'KeyInvalid', column: leaf.path });
    return ok({ key: await this.#key(raw), algorithm: this.algorithm, aad: this.#aad });
  }

  async #chunkMeta(
    rowGroup: number,
    leaf: Leaf,
    cipher: Cipher | undefined,
  ): Promise<Result<ColumnMetaData, ParquetError>> {
    const chunk = this.metadata.row_groups[rowGroup]!.columns[leaf.ordinal]!;
    const encrypted = chunk.encrypted_column_metadata;
    if (encrypted && cipher) {
      const ordinal = this.#rowGroupOrdinal(rowGroup);
      // The field holds the module body (nonce ‖ ciphertext ‖ tag); some writers keep the length prefix.
      const body =
        encrypted.length >= 4 && u32(encrypted, 0) === encrypted.length - 4 ? encrypted.subarray(4) : encrypted;
      const aad = moduleAad(cipher.aad, MODULE.COLUMN_META, { rowGroup: ordinal, column: leaf.ordinal });
      const plain = await openGcmBody(cipher.key, aad, body, `${leaf.path}: column metadata`);
      if (!plain.ok) return plain;
      const raw = rawStruct(plain.value, 'ColumnMetaData');
      if (!raw.ok) return raw;
      return columnMetaOf(raw.value.value);
    }
    if (!chunk.meta_data) return err(malformed(`${leaf.path}: column chunk without metadata`));
    return ok(chunk.meta_data);
  }

  #rowGroupOrdinal(rowGroup: number): number {
    const ordinal = this.metadata.row_groups[rowGroup]!.ordinal;
    return ordinal === undefined ? rowGroup : ordinal;
  }

  /** Decodes one column chunk page by page into its values. */
  async #readChunk(rowGroup: number, leaf: Leaf): Promise<Result<ColumnValues, ParquetError>> {
    const chunk = this.metadata.row_groups[rowGroup]!.columns[leaf.ordinal]!;
    const cipher = await this.#chunkCipher(leaf, chunk.crypto_metadata);
    if (!cipher.ok) return cipher;
    const meta = await this.#chunkMeta(rowGroup, leaf, cipher.value);
    if (!meta.ok) return meta;
    const { data_page_offset, dictionary_page_offset, total_compressed_size, num_values, codec } = meta.value;
    if (!isReadableCodec(codec)) return err({ type: 'Unsupported', detail: `${leaf.path}: ${codec} compression` });
    // A chunk of no values (a file of no rows) has no pages to read, wherever its offsets point.
    if (num_values === 0n) return ok([]);
    const start = Number(
      dictionary_page_offset !== undefined && dictionary_page_offset > 0n && dictionary_page_offset < data_page_offset
        ? dictionary_page_offset
        : data_page_offset,
    );
    const chunkEnd = start + Number(total_compressed_size);
    if (start < 4 || chunkEnd > this.#source.size || chunkEnd < start)
      return err({ type: 'Truncated', detail: `${leaf.path}: column chunk outside the file` });
    // The chunk alone, read from its source; offsets below are relative to its start.
    const fetched = await this.#source.read(start, chunkEnd);
    if (!fetched.ok) return fetched;
    const bytes = fetched.value;
    const end = bytes.length;
    const element = leaf.schemaPath[leaf.schemaPath.length - 1]!.element;
    const decoder: ColumnDecoder = {
      pathInSchema: leaf.path.split('.'),
      type: meta.value.type,
      element,
      schemaPath: leaf.schemaPath,
      codec,
      compressors: this.#compressors,
      parsers: PARSERS,
      // Text only where the schema says so: an unannotated BYTE_ARRAY is binary and stays bytes
      // (decoded as UTF-8, arbitrary bytes became replacement characters). UTF8/STRING and JSON
      // are decoded by their annotation; ENUM is text too.
      utf8: element.converted_type === 'ENUM' || element.logical_type?.type === 'ENUM',
    };
    const ordinals = { rowGroup: this.#rowGroupOrdinal(rowGroup), column: leaf.ordinal };
    const out: unknown[][] = [];
    let dictionary: DecodedArray | undefined;
    let last: DecodedArray | undefined;
    let at = 0;
    let seen = 0n;
    let dataPages = 0;
    const expectDictionary = dictionary_page_offset !== undefined && Number(dictionary_page_offset) === start;
    while (seen < num_values) {
      if (at >= end) return err({ type: 'Truncated', detail: `${leaf.path}: column chunk ends before its values` });
      const firstPage = at === 0;
      const page = await this.#nextPage(bytes, at, cipher.value, {
        ...ordinals,
        dictionary: firstPage && expectDictionary,
        page: dataPages,
        what: `${leaf.path} page ${dataPages}`,
        base: start,
      });
      if (!page.ok) return page;
      at = page.value.end;
      const { header, body } = page.value;
      const invalid = checkHeader(header, body.length, `${leaf.path} page ${dataPages}`);
      if (invalid) return err(invalid);
      if (header.type === 'DICTIONARY_PAGE') {
        const reader = { view: new DataView(body.buffer, body.byteOffset, body.byteLength), offset: 0 };
        const patched: PageHeader = { ...header, compressed_page_size: body.length };
        const read = guarded(`${leaf.path} dictionary`, () =>
          readPage(reader, patched, decoder, undefined, undefined, 0),
        );
        if (!read.ok) return read;
        const data = read.value.data;
        if (data) {
          const converted = guarded(`${leaf.path} dictionary`, () => convert(data, decoder));
          if (!converted.ok) return converted;
          dictionary = converted.value;
        }
        continue;
      }
      if (header.type !== 'DATA_PAGE' && header.type !== 'DATA_PAGE_V2') {
        return err({ type: 'Unsupported', detail: `${leaf.path}: page type ${header.type}` });
      }
      // A page of no values is valid (some writers close a chunk with one); each page moves `at` on.
      seen += BigInt(header.data_page_header?.num_values ?? header.data_page_header_v2?.num_values ?? 0);
      dataPages++;
      const checked = checkedPage(header, body, decoder, `${leaf.path} page`, dictionary?.length ?? 0);
      if (!checked.ok) return checked;
      const { header: plainHeader, body: plain, decoder: plainDecoder } = checked.value;
      const plainReader = { view: new DataView(plain.buffer, plain.byteOffset, plain.byteLength), offset: 0 };
      const read = guarded(`${leaf.path} page`, () =>
        readPage(plainReader, plainHeader, plainDecoder, dictionary, last, 0),
      );
      if (!read.ok) return read;
      const data = read.value.data;
      if (data && data !== last) {
        out.push(data as unknown[]);
        last = data;
      }
    }
    return ok(concatValues(out));
  }

  /** One page: its header (decrypted and decoded) and its body (decrypted, still compressed). */
  async #nextPage(
    bytes: Uint8Array,
    at: number,
    cipher: Cipher | undefined,
    o: { rowGroup: number; column: number; page: number; dictionary: boolean; what: string; base: number },
  ): Promise<Result<{ header: PageHeader; body: Uint8Array; end: number }, ParquetError>> {
    if (!cipher) {
      const reader = { view: new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength), offset: at };
      const header = guarded(`${o.what} header`, () => parquetHeader(reader));
      if (!header.ok) return header;
      if (!isCount(header.value.compressed_page_size)) return err(malformed(`${o.what}: page header has no size`));
      const end = reader.offset + header.value.compressed_page_size;
      if (end > bytes.length) return err({ type: 'Truncated', detail: `${o.what}: runs past the chunk` });
      return ok({ header: header.value, body: bytes.subarray(reader.offset, end), end });
    }
    const headerModule = moduleAt(bytes, at, `${o.what} header`, o.base);
    if (!headerModule.ok) return headerModule;
    const headerType = o.dictionary ? MODULE.DICTIONARY_PAGE_HEADER : MODULE.DATA_PAGE_HEADER;
    const headerPlain = await openGcmBody(
      cipher.key,
      moduleAad(cipher.aad, headerType, o),
      headerModule.value.body,
      `${o.what} header`,
    );
    if (!headerPlain.ok) return headerPlain;
    const plain = headerPlain.value;
    const header = guarded(`${o.what} header`, () =>
      parquetHeader({ view: new DataView(plain.buffer, plain.byteOffset, plain.byteLength), offset: 0 }),
    );
    if (!header.ok) return header;
    if (!isCount(header.value.compressed_page_size)) return err(malformed(`${o.what}: page header has no size`));
    const isDictionary = header.value.type === 'DICTIONARY_PAGE';
    if (isDictionary !== o.dictionary) return err(malformed(`${o.what}: page type does not match the chunk layout`));
    const pageModule = moduleAt(bytes, headerModule.value.end, o.what, o.base);
    if (!pageModule.ok) return pageModule;
    // The specification counts the module (length, nonce, tag) in the page's size; DuckDB counts the page alone.
    const size = cipher.aad.none
      ? pageModule.value.body.length - NONCE_BYTES - TAG_BYTES
      : pageModule.value.end - headerModule.value.end;
    if (size !== header.value.compressed_page_size) {
      return err(malformed(`${o.what}: page module size disagrees with its header`));
    }
    const what = o.what;
    const body =
      cipher.algorithm === 'AES_GCM_CTR_V1'
        ? await openCtrBody(cipher.key, pageModule.value.body, what)
        : await openGcmBody(
            cipher.key,
            moduleAad(cipher.aad, isDictionary ? MODULE.DICTIONARY_PAGE : MODULE.DATA_PAGE, o),
            pageModule.value.body,
            what,
          );
    if (!body.ok) return body;
    return ok({ header: header.value, body: body.value, end: pageModule.value.end });
  }

  /** One top-level column of one row group: a leaf as it is, nested leaves assembled (lists, structs). */
  async #readGroupColumn(rowGroup: number, leaves: readonly Leaf[]): Promise<Result<ColumnValues, ParquetError>> {
    const top = leaves[0]!.top;
    if (top.children.length === 0) {
      const values = await this.#readChunk(rowGroup, leaves[0]!);
      if (!values.ok || top.element.repetition_type !== 'REPEATED') return values;
      return ok(Array.from(values.value as ArrayLike<unknown>, (v) => settled(v, top)));
    }
    const data = new Map<string, DecodedArray>();
    for (const leaf of leaves) {
      const values = await this.#readChunk(rowGroup, leaf);
      if (!values.ok) return values;
      data.set(leaf.path, values.value as DecodedArray);
    }
    const assembled = guarded(`${top.element.name}: nested column`, () => {
      assembleNested(data, top, PARSERS);
      return data.get(top.element.name);
    });
    if (!assembled.ok) return assembled;
    if (!assembled.value) return err(malformed(`${top.element.name}: nested column not assembled`));
    const values = assembled.value as unknown[];
    for (let i = 0; i < values.length; i++) values[i] = settled(values[i], top);
    return ok(values);
  }

  /**
   * Reads the named columns (all by default) of the chosen row groups (all by
   * default), column by column: the values of each column in row order.
   */
  async readColumns(
    options: { readonly columns?: readonly string[]; readonly rowGroups?: readonly number[] } = {},
  ): Promise<Result<Record<string, ColumnValues>, ParquetError>> {
    const names = options.columns ?? [...new Set(this.#leaves.map((l) => l.name))];
    const groups = options.rowGroups ?? this.metadata.row_groups.map((_, i) => i);
    const out: Record<string, ColumnValues> = {};
    for (const name of names) {
      const leaves = this.#leaves.filter((l) => l.name === name);
      if (leaves.length === 0) return err({ type: 'Malformed', detail: `no column ${name}` });
      const parts: ColumnValues[] = [];
      for (const g of groups) {
        if (!Number.isInteger(g) || g < 0 || g >= this.metadata.row_groups.length)
          throw new RangeError(`parquet: no row group ${g}`);
        const values = await escapedAsMalformed(name, () => this.#readGroupColumn(g, leaves));
        if (!values.ok) return values;
        const rows = Number(this.metadata.row_groups[g]!.num_rows);
        if (values.value.length !== rows) {
          return err(malformed(`${name}: ${values.value.length} values for the ${rows} rows of row group ${g}`));
        }
        parts.push(values.value);
      }
      out[name] = concatValues(parts);
    }
    return ok(out);
  }

  /** Reads rows as objects keyed by column name. */
  async readRows(
    options: { readonly columns?: readonly string[] } = {},
  ): Promise<Result<Record<string, unknown>[], ParquetError>> {
    const columns = await this.readColumns(options);
    if (!columns.ok) return columns;
    const entries = Object.entries(columns.value);
    const rows: Record<string, unknown>[] = [];
    const count = entries[0]?.[1].length ?? 0;
    for (let i = 0; i < count; i++) {
      const row: Record<string, unknown> = {};
      for (const [name, values] of entries) row[name] = values[i];
      rows.push(row);
    }
    return ok(rows);
  }
}

/** Opens a Parquet file, encrypted or not: its bytes, or a source of its byte ranges (source.ts). */
export function openParquet(
  input: Uint8Array | ByteSource,
  keys: ReadKeys,
  cipher: PmeCipher,
  options: ReadOptions = {},
): Promise<Result<ParquetFile, ParquetError>> {
  return ParquetFile.open(input, keys, cipher, options);
}
