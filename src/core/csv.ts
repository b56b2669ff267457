/**
 * CSV in and out (RFC 4180): a streaming parser (chunks of text in, complete
 * records out, so a large import never holds the file), column type inference
 * over every record, conversion of fields to typed cells, and CSV writing.
 *
 * Inference takes the narrowest type every non-empty field of a column fits:
 * boolean (true/false), int32, int64, double, timestamp (ISO 8601 with a
 * date, time and zone, or a date alone, read as UTC), else string. An empty
 * field is null and makes the column nullable. Quoted fields keep their text
 * as is: `"007"` in an integer column is still the integer 7, never silently
 * reinterpreted otherwise.
 */
import { err, ok, type Result } from './result.js';
import { checkSchema, type CellValue, type ColumnSpec, type ColumnType } from './parquet/schema.js';

export type CsvError =
  | { readonly type: 'CsvMalformed'; readonly line: number; readonly detail: string }
  | { readonly type: 'CsvRagged'; readonly line: number; readonly expected: number; readonly actual: number }
  | { readonly type: 'CsvHeader'; readonly detail: string };

export const MAX_FIELD_CHARS = 1 << 20;

/** Incremental RFC 4180 parser; `\n` or `\r\n` end records. */
export class CsvParser {
  #field = '';
  #record: string[] = [];
  #quoted = false;
  #inQuotes = false;
  #afterQuote = false;
  #line = 1;
  #pendingCr = false;
  #started = false;
  #error: CsvError | undefined;

  /** Records completed by this chunk. */
  push(chunk: string): Result<string[][], CsvError> {
    if (this.#error) return err(this.#error);
    const out: string[][] = [];
    for (let i = 0; i < chunk.length; i++) {
      const c = chunk[i]!;
      if (this.#pendingCr) {
        this.#pendingCr = false;
        if (c === '\n') continue;
      }
      if (this.#inQuotes) {
        if (c === '"') {
          this.#inQuotes = false;
          this.#afterQuote = true;
        } else {
          if (c === '\n') this.#line++;
          this.#field += c;
        }
      } else if (this.#afterQuote && c === '"') {
        this.#field += '"';
        this.#inQuotes = true;
        this.#afterQuote = false;
      } else if (c === ',') {
        this.#endField();
      } else if (c === '\n' || c === '\r') {
        this.#pendingCr = c === '\r';
        this.#endField();
        out.push(this.#record);
        this.#record = [];
        this.#started = false;
        this.#line++;
      } else if (c === '"' && this.#field === '' && !this.#quoted) {
        this.#inQuotes = true;
        this.#quoted = true;
        this.#started = true;
      } else {
        if (this.#afterQuote || c === '"') {
          this.#error = {
            type: 'CsvMalformed',
            line: this.#line,
            detail: 'a quote inside an unquoted field or after a closing quote',
          };
          return err(this.#error);
        }
        this.#field += c;
        this.#started = true;
      }
      if (this.#field.length > MAX_FIELD_CHARS) {
        this.#error = {
          type: 'CsvMalformed',
          line: this.#line,
          detail: `a field longer than ${MAX_FIELD_CHARS} characters`,
        };
        return err(this.#error);
      }
    }
    return ok(out);
  }

  /** The last record, if the text did not end with a newline. */
  end(): Result<string[][], CsvError> {
    if (this.#error) return err(this.#error);
    if (this.#inQuotes) return err({ type: 'CsvMalformed', line: this.#line, detail: 'a quoted field is not closed' });
    if (!this.#started && this.#record.length === 0 && this.#field === '') return ok([]);
    this.#endField();
    const last = this.#record;
    this.#record = [];
    // Ended: a second end() with no text since finds no record (it found an empty one).
    this.#started = false;
    return ok([last]);
  }

  #endField(): void {
    this.#record.push(this.#field);
    this.#field = '';
    this.#quoted = false;
    this.#afterQuote = false;
    this.#started = true;
  }
}

const INT = /^[+-]?\d+$/;
const FLOAT = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/;
const ISO = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})?)?$/;

/** Milliseconds since the epoch, or undefined when the text is not an ISO 8601 date or date-time. */
export function parseTimestamp(text: string): number | undefined {
  const m = ISO.exec(text);
  if (!m) return undefined;
  const [, y, mo, d, h, mi, s, frac, zone] = m;
  if (h !== undefined && zone === undefined) return undefined;
  const base = Date.UTC(Number(y), Number(mo) - 1, Number(d), Number(h ?? 0), Number(mi ?? 0), Number(s ?? 0));
  const check = new Date(base);
  if (
    check.getUTCFullYear() !== Number(y) ||
    check.getUTCMonth() !== Number(mo) - 1 ||
    check.getUTCDate() !== Number(d)
  )
    return undefined;
  const ms = frac ? Math.floor(Number(frac) * 1000) : 0;
  let offset = 0;
  if (zone && zone !== 'Z') {
    const sign = zone.startsWith('-') ? -1 : 1;
    const digits = zone.slice(1).replace(':', '');
    offset = sign * (Number(digits.slice(0, 2)) * 60 + Number(digits.slice(2))) * 60_000;
  }
  return base + ms - offset;
}

const ORDER: ColumnType[] = ['boolean', 'int32', 'int64', 'double', 'timestamp', 'string'];

function fits(type: ColumnType, text: string): boolean {
  switch (type) {
    case 'boolean':
      return text === 'true' || text === 'false';
    case 'int32':
      return INT.test(text) && Number(text) >= -(2 ** 31) && Number(text) <= 2 ** 31 - 1;
    case 'int64':
      return INT.test(text) && BigInt(text) >= -(2n ** 63n) && BigInt(text) <= 2n ** 63n - 1n;
    case 'double':
      // Kept exactly or not a double: an integer wider than int64 that a double would round stays text.
      return FLOAT.test(text) && (!INT.test(text) || BigInt(Number(text)) === BigInt(text));
    case 'timestamp':
      // Timestamps hold milliseconds: a finer fraction that is not zero keeps the column as text.
      return parseTimestamp(text) !== undefined && !/\.\d{3}\d*[1-9]/.test(text);
    default:
      return true;
  }
}

/** Column types learned from records, one `observe` at a time. */
export class SchemaInference {
  readonly #header: readonly string[];
  #candidates: ColumnType[][];
  readonly #nullable: boolean[];
  #records = 0;

  constructor(header: readonly string[]) {
    this.#header = header;
    this.#candidates = header.map(() => [...ORDER]);
    this.#nullable = header.map(() => false);
  }

  observe(record: readonly string[]): void {
    this.#records++;
    record.forEach((text, i) => {
      if (text === '') {
        this.#nullable[i] = true;
        return;
      }
      const list = this.#candidates[i]!;
      if (list.length > 1) this.#candidates[i] = list.filter((type) => fits(type, text));
    });
  }

  get records(): number {
    return this.#records;
  }

  schema(): Result<ColumnSpec[], CsvError> {
    const columns = this.#header.map((name, i) => {
      const list = this.#candidates[i]!;
      const type = list.length === ORDER.length ? 'string' : list[0]!;
      return { name, type, nullable: this.#nullable[i]! };
    });
    const checked = checkSchema(columns);
    return checked.ok ? ok(columns) : err({ type: 'CsvHeader', detail: checked.error.detail });
  }
}

/** One field as a cell of its column's type (the inferred type always fits). */
export function toCell(type: ColumnType, text: string): CellValue {
  if (text === '') return null;
  switch (type) {
    case 'boolean':
      return text === 'true';
    case 'int32':
      return Number(text);
    case 'int64':
      return BigInt(text);
    case 'double':
    case 'float':
      return Number(text);
    case 'timestamp':
      return parseTimestamp(text)!;
    case 'rowid':
      throw new Error('csv: row ids are not read from CSV');
    default:
      return text;
  }
}

/**
 * The header record's names, trimmed, or why there is no header row. Whether the names are
 * usable as columns and none repeats is checked with the schema (SchemaInference.schema).
 */
export function checkHeader(record: readonly string[] | undefined): Result<string[], CsvError> {
  if (!record || record.length === 0 || (record.length === 1 && record[0] === '')) {
    return err({ type: 'CsvHeader', detail: 'no header row' });
  }
  return ok(record.map((name) => name.trim()));
}

export function checkWidth(record: readonly string[], width: number, line: number): Result<void, CsvError> {
  return record.length === width
    ? ok(undefined)
    : err({ type: 'CsvRagged', line, expected: width, actual: record.length });
}

/** One CSV field, quoted when it must be. */
export function csvField(text: string): string {
  return /[",\r\n]/.test(text) || text !== text.trim() ? `"${text.replaceAll('"', '""')}"` : text;
}

export function csvRecord(fields: readonly string[]): string {
  return fields.map(csvField).join(',') + '\n';
}

/**
 * A time (epoch milliseconds) as ISO 8601 text; one outside what a date can hold (a bound
 * in a hostile manifest, say) as its number of milliseconds, never an exception.
 */
export function isoTime(ms: number): string {
  const date = new Date(ms);
  return Number.isNaN(date.getTime()) ? `${ms} ms` : date.toISOString();
}
