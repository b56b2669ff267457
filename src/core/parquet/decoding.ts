/**
 * What the Parquet reader (read.ts) gives hyparquet's decoders and checks around them: the
 * value parsers (times exact to the millisecond, refused outside a date's range or where an
 * INT96's day is lost; WKB kept as bytes), the guards that turn a decoder's exception into a
 * typed ParquetError, the page-header checks made before any decoder sees a header, and the
 * settling of assembled nested values (REPEATED fields as lists, absent groups as null).
 */
import { DEFAULT_PARSERS } from 'hyparquet/src/convert.js';
import type { DecodedArray, PageHeader, ParquetParsers, SchemaTree } from 'hyparquet/src/types.js';
import { err, ok, type Result } from '../result.js';
import type { ParquetError } from './modules.js';

/** A column's values: a typed array, or plain values. */
export type ColumnValues = DecodedArray | unknown[];

/** A valid value this reader cannot represent (a time outside what a JavaScript date holds). */
class Unrepresentable extends Error {}

/** ±100,000,000 days around 1970: the range of a JavaScript Date (ECMA-262 §21.4.1.1). */
const MAX_DATE_MS = 8.64e15;
const MAX_DATE_DAYS = 1e8;

function inDateRange(ms: number, what: string): number {
  if (!(Math.abs(ms) <= MAX_DATE_MS)) throw new Unrepresentable(`${what} ${ms} ms is outside the range of a date`);
  return ms;
}

/**
 * hyparquet joins an INT96's day and nanosecond fields with a bitwise or: a negative
 * nanosecond field (Spark writes them for times it cannot otherwise place, as in the
 * corpus's int96_from_spark.parquet) swallows the day, which reads as Julian day -1 plus
 * the nanoseconds' 64 bits taken unsigned, at least 2^63 — a time between 4421 and 4130
 * BCE. No INT64 timestamp reaches that far back, so such a time is refused, never read as
 * a wrong one; a genuine INT96 time of those three centuries is refused with it.
 */
const LOST_DAY_FROM = -2_440_589n * 86_400_000_000_000n + 2n ** 63n;
const LOST_DAY_TO = -2_440_589n * 86_400_000_000_000n + 2n ** 64n;

/** `units` per millisecond → milliseconds: whole ones exactly, the fraction added (Number(ns) / 1e6 rounded 410 ms to 409.9998). */
const msOf = (value: bigint, units: bigint): number =>
  inDateRange(Number(value / units) + Number(value % units) / Number(units), 'timestamp');

/**
 * Timestamps come back as milliseconds since the epoch (numbers), not Dates; dates as
 * Dates. A time outside what a date can hold is refused (`Unsupported`), never wrapped
 * or turned into an invalid date; bigint arithmetic stays bigint until the last step.
 */
export const PARSERS: ParquetParsers = {
  ...DEFAULT_PARSERS,
  timestampFromMilliseconds: (ms: bigint) => inDateRange(Number(ms), 'timestamp'),
  timestampFromMicroseconds: (us: bigint) => msOf(us, 1000n),
  timestampFromNanoseconds: (ns: bigint) => {
    if (ns >= LOST_DAY_FROM && ns < LOST_DAY_TO) {
      throw new Unrepresentable('an INT96 time with a negative nanosecond-of-day field (its day cannot be read)');
    }
    return msOf(ns, 1_000_000n);
  },
  // Binary stays binary: GEOMETRY and GEOGRAPHY are their WKB bytes (hyparquet would parse them to GeoJSON).
  geometryFromBytes: (bytes: Uint8Array | undefined) => bytes,
  geographyFromBytes: (bytes: Uint8Array | undefined) => bytes,
  dateFromDays: (days: number) => {
    if (!(Math.abs(days) <= MAX_DATE_DAYS)) throw new Unrepresentable(`date ${days} days is outside the range`);
    return new Date(days * 86_400_000);
  },
};

export const malformed = (detail: string): ParquetError => ({ type: 'Malformed', detail });

export function u32(bytes: Uint8Array, at: number): number {
  return new DataView(bytes.buffer, bytes.byteOffset + at, 4).getUint32(0, true);
}

/**
 * Runs a decoder from hyparquet over untrusted bytes: its exceptions are malformed input
 * (or a valid value this reader cannot represent: `Unsupported`).
 */
export function guarded<T>(what: string, fn: () => T): Result<T, ParquetError> {
  try {
    return ok(fn());
  } catch (e) {
    if (e instanceof Unrepresentable) return err({ type: 'Unsupported', detail: `${what}: ${e.message}` });
    return err(malformed(`${what}: ${e instanceof Error ? e.message : String(e)}`));
  }
}

/**
 * The last line of defence: a fault of a decoder that no guard above names (a field of an
 * unexpected type deep in a structure) is malformed input too, never an exception that
 * takes down the reader's worker. The fuzz test (parquet-fuzz.test.ts) finds none today.
 */
export async function escapedAsMalformed<T>(
  what: string,
  fn: () => Promise<Result<T, ParquetError>>,
): Promise<Result<T, ParquetError>> {
  try {
    return await fn();
  } catch (e) {
    return err(malformed(`${what}: ${e instanceof Error ? e.message : String(e)}`));
  }
}

/** Largest page this reader inflates (a header may claim any size; hyparquet allocates it). */
const MAX_PAGE_BYTES = 256 * 1024 * 1024;

/** hyparquet names an encoding by table lookup: a number outside the table gives undefined, whatever the type says. */
const isName = (e: unknown): boolean => typeof e === 'string';

/** Most values one page may claim: 16,777,216 (a 1 MiB page of booleans holds 8,388,608). */
export const MAX_PAGE_VALUES = 1 << 24;

export const isCount = (n: unknown): n is number => typeof n === 'number' && Number.isSafeInteger(n) && n >= 0;

/**
 * A page header's sizes, counts and encodings, checked before any of them is used: hyparquet
 * trusts them (a v2 header without its level lengths left an offset undefined, and the
 * level decoder then read the same byte for ever).
 */
export function checkHeader(header: PageHeader, body: number, what: string): ParquetError | undefined {
  const bad = (field: string) => malformed(`${what}: page header ${field}`);
  // hyparquet allocates arrays of the page's value count, and a JavaScript array past V8's
  // limit (about 2^27 elements) ends the whole process, not with an exception: a page claiming
  // more values than any writer puts in one page is refused before decoding. (Runs that claim
  // more values than their page are hybrid.ts's to refuse.)
  const tooMany = (n: number) =>
    n > MAX_PAGE_VALUES ? { type: 'Unsupported' as const, detail: `${what}: page of ${n} values` } : undefined;
  if (!isCount(header.uncompressed_page_size)) return bad('has no valid uncompressed size');
  if (header.uncompressed_page_size > MAX_PAGE_BYTES)
    return { type: 'Unsupported', detail: `${what}: page of ${header.uncompressed_page_size} bytes` };
  if (header.type === 'DATA_PAGE') {
    const h = header.data_page_header;
    if (!h || !isCount(h.num_values)) return bad('has no valid data page header');
    if (tooMany(h.num_values)) return tooMany(h.num_values);
    if (!isName(h.encoding)) return { type: 'Unsupported', detail: `${what}: unknown encoding` };
  } else if (header.type === 'DATA_PAGE_V2') {
    const h = header.data_page_header_v2;
    if (!h) return bad('has no data page v2 header');
    const counts = [h.num_values, h.num_nulls, h.num_rows, h.definition_levels_byte_length];
    if (!counts.every(isCount) || !isCount(h.repetition_levels_byte_length)) return bad('lacks a count or a length');
    if (h.num_nulls > h.num_values) return bad('counts more nulls than values');
    if (tooMany(Math.max(h.num_values, h.num_rows))) return tooMany(Math.max(h.num_values, h.num_rows));
    const levels = h.definition_levels_byte_length + h.repetition_levels_byte_length;
    if (levels > body || levels > header.uncompressed_page_size) return bad('has levels longer than the page');
    if (!isName(h.encoding)) return { type: 'Unsupported', detail: `${what}: unknown encoding` };
  } else if (header.type === 'DICTIONARY_PAGE') {
    const h = header.dictionary_page_header;
    if (!h || !isCount(h.num_values)) return bad('has no valid dictionary page header');
    if (tooMany(h.num_values)) return tooMany(h.num_values);
  }
  return undefined;
}

const isAnnotated = (node: SchemaTree): boolean => {
  const element = node.element;
  return (
    element.converted_type === 'LIST' ||
    element.converted_type === 'MAP' ||
    element.converted_type === 'MAP_KEY_VALUE' ||
    element.logical_type?.type === 'LIST' ||
    element.logical_type?.type === 'MAP'
  );
};

/**
 * An assembled value as the schema says it is: a REPEATED field that is not the inside of
 * a LIST or MAP is a list, so none is `[]` (hyparquet gives null); an absent group is null
 * (hyparquet gives undefined). Inside LIST and MAP values hyparquet's shapes stand.
 */
export function settled(value: unknown, node: SchemaTree): unknown {
  const repeated = node.element.repetition_type === 'REPEATED';
  if (value === undefined || value === null) return repeated ? [] : null;
  const entries = node.children[0];
  if (isAnnotated(node) && entries?.children.length === 1 && typeof value === 'object') {
    // A MAP whose entries hold a key and no value is the list of its keys (hyparquet reads it as a struct).
    const [key] = entries.children;
    const list = (value as Record<string, unknown>)[entries.element.name];
    if (Array.isArray(list)) return list.map((e) => (e as Record<string, unknown> | null)?.[key!.element.name] ?? null);
  }
  if (isAnnotated(node) || node.children.length === 0) return value;
  const one = (item: unknown): unknown => {
    if (typeof item !== 'object' || item === null || Array.isArray(item) || item instanceof Uint8Array) return item;
    const record = item as Record<string, unknown>;
    for (const child of node.children) record[child.element.name] = settled(record[child.element.name], child);
    return record;
  };
  return repeated && Array.isArray(value) ? value.map(one) : one(value);
}

type TypedValues = Exclude<DecodedArray, unknown[]>;

/** Parts of one column in order, as one array: a typed array when every part is one of the same kind. */
export function concatValues(parts: readonly ColumnValues[]): ColumnValues {
  if (parts.length === 1) return parts[0]!;
  const first = parts[0];
  if (first && !Array.isArray(first) && parts.every((p) => p.constructor === first.constructor)) {
    const typed = parts as readonly TypedValues[];
    const Kind = first.constructor as new (n: number) => TypedValues;
    const out = new Kind(typed.reduce((n, p) => n + p.length, 0));
    let at = 0;
    for (const p of typed) {
      (out as { set(a: ArrayLike<unknown>, at: number): void }).set(p, at);
      at += p.length;
    }
    return out;
  }
  const out = new Array<unknown>(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) for (let i = 0; i < p.length; i++) out[at++] = p[i];
  return out;
}
