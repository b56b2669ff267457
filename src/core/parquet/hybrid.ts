/**
 * The RLE / bit-packed hybrid streams of a data page (repetition and definition levels,
 * dictionary indices, RLE booleans), checked before hyparquet decodes them.
 *
 * hyparquet decodes a hybrid stream into a plain JavaScript array of the page's value count
 * and trusts each run's count: a run of N values writes N elements, whatever the array's
 * length. A few bytes can claim 2^31 values, and a JavaScript array grown past V8's limit
 * (about 2^27 elements) ends the whole process with a fatal error, not an exception; a
 * bit-packed run of width 0 claiming billions of values loops for minutes. So the stream is
 * walked here first, exactly as hyparquet will walk it, and refused if a run claims more
 * values than remain, or if the stream needs bytes past its declared length. A valid file
 * never does either: its runs add up to the page's values.
 */
import { decompressPage } from 'hyparquet/src/datapage.js';
import { getMaxDefinitionLevel, getMaxRepetitionLevel } from 'hyparquet/src/schema.js';
import type { ColumnDecoder, PageHeader, SchemaTree } from 'hyparquet/src/types.js';
import { err, ok, type Result } from '../result.js';
import { guarded, malformed, u32 } from './decoding.js';
import type { ParquetError } from './modules.js';

/** Widest value a hybrid stream holds (levels and dictionary indices are 32-bit at most). */
const MAX_WIDTH = 32;

/** Bits needed for `value` (hyparquet's bitWidth). */
const widthOf = (value: number): number => 32 - Math.clz32(value);

/**
 * Walks one hybrid stream of `values` values and `width` bits each, starting at `start` in
 * `page`: `length` bytes long, or (when undefined) prefixed by its length as a 4-byte
 * integer. Gives how many of its values equal `target` (definition levels: the values that
 * are not null), or why hyparquet could not decode it into `values` elements. With `bound`,
 * every value must be below it (dictionary indices: the dictionary's size; hyparquet would
 * read an index past it as `undefined`, a value that is neither the column's nor null).
 */
export function checkHybrid(
  page: Uint8Array,
  start: number,
  length: number | undefined,
  width: number,
  values: number,
  what: string,
  target = -1,
  bound = Number.POSITIVE_INFINITY,
): Result<number, ParquetError> {
  if (width > MAX_WIDTH) return err(malformed(`${what}: values ${width} bits wide`));
  let at = start;
  if (length === undefined) {
    if (at + 4 > page.length) return err(malformed(`${what}: no length before the values`));
    length = u32(page, at);
    at += 4;
  }
  const end = at + length;
  if (end > page.length) return err(malformed(`${what}: ${length} bytes claimed, ${page.length - at} in the page`));
  let seen = 0;
  let matches = 0;
  while (seen < values) {
    // A varint as hyparquet's readVarInt reads it: 7 bits a byte, in a 32-bit integer.
    let header = 0;
    for (let shift = 0; ; shift += 7) {
      if (at >= end) return err(malformed(`${what}: ends after ${seen} of ${values} values`));
      const byte = page[at++]!;
      header |= (byte & 0x7f) << shift;
      if (!(byte & 0x80)) break;
    }
    const left = values - seen;
    if (header & 1) {
      // Bit-packed: groups of 8 values, `width` bytes a group; the last group may be padding.
      const count = (header >> 1) << 3;
      if (count < 0 || count - 8 >= left)
        return err(malformed(`${what}: a packed run of ${count} values, ${left} left`));
      // hyparquet's readBitPacked reads a first byte before any value: a run of no groups, or
      // of width 0, still moves it one byte on. When more runs follow, its next header is
      // read after that byte, and so it is here (otherwise the two walks part: a stream
      // accepted here could make hyparquet read a run of 2^30 values into a page of one).
      const bytes = (count / 8) * width;
      const moved = bytes === 0 && count < left ? 1 : bytes;
      if (at + moved > end) return err(malformed(`${what}: a packed run past the stream's end`));
      if (target >= 0 || bound !== Number.POSITIVE_INFINITY) {
        const scan = packedScan(page, at, width, Math.min(count, left), target);
        if (scan.max >= bound) return err(beyond(what, scan.max, bound));
        matches += scan.matches;
      }
      at += moved;
      seen += Math.min(count, left);
    } else {
      const count = header >>> 1;
      if (count > left) return err(malformed(`${what}: a run of ${count} values, ${left} left`));
      const bytes = (width + 7) >> 3;
      if (at + bytes > end) return err(malformed(`${what}: a run past the stream's end`));
      let value = 0;
      for (let i = 0; i < bytes; i++) value |= page[at + i]! << (i * 8);
      value >>>= 0;
      if (count > 0 && value >= bound) return err(beyond(what, value, bound));
      if (value === target) matches += count;
      at += bytes;
      seen += count;
    }
  }
  return ok(matches);
}

const beyond = (what: string, value: number, bound: number): ParquetError =>
  malformed(`${what}: index ${value} past a dictionary of ${bound}`);

/** How many bits are set in each byte value. */
const ONES = Uint8Array.from({ length: 256 }, (_, byte) => {
  let ones = 0;
  for (let bits = byte; bits > 0; bits >>= 1) ones += bits & 1;
  return ones;
});

/**
 * Of the first `count` values packed `width` bits each (least significant bit first): how
 * many equal `target`, and the largest. Runs over every dictionary index and definition level
 * of a page on the read path, so values up to 24 bits wide (every level; dictionaries of up
 * to 16 million entries) are taken from a 32-bit accumulator a byte at a time, as hyparquet's
 * own readBitPacked does; wider ones bit by bit.
 */
export function packedScan(
  page: Uint8Array,
  at: number,
  width: number,
  count: number,
  target: number,
): { matches: number; max: number } {
  let matches = 0;
  let max = 0;
  if (width === 1) {
    // Definition levels of a flat optional column: count the ones a byte at a time.
    let ones = 0;
    const whole = count >> 3;
    for (let i = 0; i < whole; i++) ones += ONES[page[at + i]!]!;
    if (count & 7) ones += ONES[page[at + whole]! & ((1 << (count & 7)) - 1)]!;
    matches = target === 1 ? ones : target === 0 ? count - ones : 0;
    return { matches, max: ones > 0 ? 1 : 0 };
  }
  if (width <= 24) {
    const mask = (1 << width) - 1;
    let buffer = 0;
    let bits = 0;
    let next = at;
    for (let i = 0; i < count; i++) {
      // Fewer than `width` ≤ 24 bits left, plus 8 a byte: never past the accumulator's 32.
      while (bits < width) {
        buffer |= page[next++]! << bits;
        bits += 8;
      }
      const value = buffer & mask;
      buffer >>>= width;
      bits -= width;
      if (value === target) matches++;
      if (value > max) max = value;
    }
    return { matches, max };
  }
  for (let i = 0; i < count; i++) {
    let value = 0;
    for (let bit = 0; bit < width; bit++) {
      const position = i * width + bit;
      value |= ((page[at + (position >> 3)]! >> (position & 7)) & 1) << bit;
    }
    // Unsigned: a 32-bit value with its top bit set is not negative.
    value >>>= 0;
    if (value === target) matches++;
    if (value > max) max = value;
  }
  return { matches, max };
}

/**
 * Every hybrid stream of a data page whose values are already decompressed (`page`: a v1
 * page whole; a v2 page as levels then values), at the places hyparquet's readDataPage and
 * readDataPageV2 read them, each with the number of values hyparquet will decode from it.
 */
export function checkPageStreams(
  page: Uint8Array,
  header: PageHeader,
  schemaPath: readonly SchemaTree[],
  type: string,
  what: string,
  /** Values in the chunk's dictionary (0 without one): what dictionary indices must stay below. */
  dictionarySize = 0,
): ParquetError | undefined {
  const maxRepetition = getMaxRepetitionLevel(schemaPath as SchemaTree[]);
  const maxDefinition = getMaxDefinitionLevel(schemaPath as SchemaTree[]);
  const v1 = header.data_page_header;
  const v2 = header.data_page_header_v2;
  let at = 0;
  let encoding: string;
  /** Values that are not null: those the value stream holds. */
  let present: number;
  if (v1) {
    encoding = v1.encoding;
    present = v1.num_values;
    if (schemaPath.length > 1 && maxRepetition > 0) {
      const levels = checkHybrid(
        page,
        at,
        undefined,
        widthOf(maxRepetition),
        v1.num_values,
        `${what} repetition levels`,
      );
      if (!levels.ok) return levels.error;
      at += 4 + u32(page, at);
    }
    if (maxDefinition > 0) {
      const w = widthOf(maxDefinition);
      const levels = checkHybrid(page, at, undefined, w, v1.num_values, `${what} definition levels`, maxDefinition);
      if (!levels.ok) return levels.error;
      present = levels.value;
      at += 4 + u32(page, at);
    }
  } else if (v2) {
    encoding = v2.encoding;
    const repetition = v2.repetition_levels_byte_length;
    const definition = v2.definition_levels_byte_length;
    if (maxRepetition > 0) {
      const w = widthOf(maxRepetition);
      const levels = checkHybrid(page, 0, repetition, w, v2.num_values, `${what} repetition levels`);
      if (!levels.ok) return levels.error;
    }
    if (maxDefinition > 0) {
      const w = widthOf(maxDefinition);
      const levels = checkHybrid(page, repetition, definition, w, v2.num_values, `${what} definition levels`);
      if (!levels.ok) return levels.error;
    }
    at = repetition + definition;
    present = v2.num_values - v2.num_nulls;
  } else {
    return undefined;
  }
  const hybrid = encoding === 'RLE' || encoding === 'PLAIN_DICTIONARY' || encoding === 'RLE_DICTIONARY';
  // RLE booleans: a v2 page's RLE values whatever the type; a v1 page's hybrid values of a BOOLEAN column.
  const booleans = v2 ? encoding === 'RLE' : hybrid && type === 'BOOLEAN';
  let stream: Result<number, ParquetError> = ok(0);
  if (booleans) stream = checkHybrid(page, at, undefined, 1, present, `${what} values`);
  else if (hybrid) {
    if (at >= page.length) return malformed(`${what}: no bit width before the dictionary indices`);
    const width = page[at]!;
    const indices = `${what} dictionary indices`;
    // hyparquet's v1 reader takes a width of 0 as all zeros and reads no stream.
    if (width === 0 && v1) return present > 0 && dictionarySize === 0 ? beyond(indices, 0, 0) : undefined;
    const bound = encoding === 'RLE' ? Number.POSITIVE_INFINITY : dictionarySize;
    stream = checkHybrid(page, at + 1, page.length - at - 1, width, present, indices, -1, bound);
  }
  return stream.ok ? undefined : stream.error;
}

/** A data page as hyparquet's readPage is to be given it. */
export type CheckedPage = { readonly header: PageHeader; readonly body: Uint8Array; readonly decoder: ColumnDecoder };

/**
 * A data page (its header already checked) decompressed once, here, so that its hybrid
 * streams are checked on the very bytes hyparquet decodes; hyparquet is then handed the
 * page as stored uncompressed (a v1 page under the UNCOMPRESSED codec, a v2 page marked
 * not compressed), which it does not decompress again.
 */
export function checkedPage(
  header: PageHeader,
  body: Uint8Array,
  decoder: ColumnDecoder,
  what: string,
  /** Values in the chunk's dictionary page, 0 without one. */
  dictionarySize = 0,
): Result<CheckedPage, ParquetError> {
  const { codec, compressors } = decoder;
  let page: CheckedPage = { header: { ...header, compressed_page_size: body.length }, body, decoder };
  const v2 = header.data_page_header_v2;
  if (header.type === 'DATA_PAGE' && codec !== 'UNCOMPRESSED') {
    const plain = guarded(what, () => decompressPage(body, header.uncompressed_page_size, codec, compressors));
    if (!plain.ok) return plain;
    page = {
      header: { ...header, compressed_page_size: plain.value.length },
      body: plain.value,
      decoder: { ...decoder, codec: 'UNCOMPRESSED' },
    };
  } else if (header.type === 'DATA_PAGE_V2' && v2 && v2.is_compressed !== false && codec !== 'UNCOMPRESSED') {
    const levels = v2.repetition_levels_byte_length + v2.definition_levels_byte_length;
    const size = header.uncompressed_page_size - levels;
    const values = guarded(what, () => decompressPage(body.subarray(levels), size, codec, compressors));
    if (!values.ok) return values;
    const whole = new Uint8Array(levels + values.value.length);
    whole.set(body.subarray(0, levels));
    whole.set(values.value, levels);
    page = {
      header: { ...header, compressed_page_size: whole.length, data_page_header_v2: { ...v2, is_compressed: false } },
      body: whole,
      decoder,
    };
  }
  const invalid = checkPageStreams(page.body, page.header, decoder.schemaPath, decoder.type, what, dictionarySize);
  return invalid ? err(invalid) : ok(page);
}
