/**
 * CSV (core/csv.ts): RFC 4180 parsing in any chunking, type inference over
 * every record, timestamps with zones, and the malformed inputs it refuses.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  checkHeader,
  CsvParser,
  csvRecord,
  isoTime,
  MAX_FIELD_CHARS,
  parseTimestamp,
  SchemaInference,
  toCell,
} from '../../src/core/csv.js';
import { runs } from '../helpers/runs.js';

function parseAll(text: string, chunk = text.length || 1): string[][] {
  const parser = new CsvParser();
  const out: string[][] = [];
  for (let at = 0; at < text.length; at += chunk) {
    const r = parser.push(text.slice(at, at + chunk));
    if (!r.ok) throw new Error(JSON.stringify(r.error));
    out.push(...r.value);
  }
  const last = parser.end();
  if (!last.ok) throw new Error(JSON.stringify(last.error));
  return [...out, ...last.value];
}

describe('CSV parsing', () => {
  it('reads quotes, escaped quotes, commas and newlines inside fields, CRLF, and a last line without newline', () => {
    const text = 'a,b,c\r\n1,"x, ""y""",\n2,"multi\nline",z';
    expect(parseAll(text)).toEqual([
      ['a', 'b', 'c'],
      ['1', 'x, "y"', ''],
      ['2', 'multi\nline', 'z'],
    ]);
  });

  it('gives the same records however the text is cut into chunks (property)', () => {
    const field = fc.string({ unit: fc.constantFrom('a', 'é', ',', '"', '\n', ' ', '1'), maxLength: 6 });
    fc.assert(
      fc.property(
        fc.array(fc.array(field, { minLength: 1, maxLength: 4 }), { minLength: 1, maxLength: 6 }),
        fc.integer({ min: 1, max: 7 }),
        (records, chunk) => {
          const text = records.map(csvRecord).join('');
          expect(parseAll(text, chunk)).toEqual(records);
        },
      ),
      { numRuns: runs(300) },
    );
  });

  it('names the line of a fault after records with newlines inside quotes, and keeps refusing after one', () => {
    const parser = new CsvParser();
    expect(parser.push('a,b\n"x\ny",1\n2,3\n4,"5"6\n')).toEqual({
      ok: false,
      error: { type: 'CsvMalformed', line: 5, detail: 'a quote inside an unquoted field or after a closing quote' },
    });
    expect(parser.push('7,8\n')).toMatchObject({ ok: false, error: { line: 5 } });
    expect(parser.end()).toMatchObject({ ok: false, error: { line: 5 } });
    const unclosed = new CsvParser();
    unclosed.push('a\n1\n"open\nstill');
    expect(unclosed.end()).toEqual({
      ok: false,
      // Noticed at the end of the text: the line the open field reached.
      error: { type: 'CsvMalformed', line: 4, detail: 'a quoted field is not closed' },
    });
  });

  it('refuses a field longer than MAX_FIELD_CHARS, naming its line', () => {
    const parser = new CsvParser();
    expect(parser.push(`a\n${'x'.repeat(MAX_FIELD_CHARS)}\n`).ok).toBe(true);
    expect(parser.push(`${'y'.repeat(MAX_FIELD_CHARS + 1)}\n`)).toEqual({
      ok: false,
      error: { type: 'CsvMalformed', line: 3, detail: `a field longer than ${MAX_FIELD_CHARS} characters` },
    });
  });

  it('reads nothing from empty text, and a header-only file as its header', () => {
    expect(parseAll('')).toEqual([]);
    expect(parseAll('a,b')).toEqual([['a', 'b']]);
    expect(checkHeader([])).toEqual({ ok: false, error: { type: 'CsvHeader', detail: 'no header row' } });
    expect(checkHeader([''])).toEqual({ ok: false, error: { type: 'CsvHeader', detail: 'no header row' } });
    expect(checkHeader([' a ', 'b'])).toEqual({ ok: true, value: ['a', 'b'] });
  });

  it('refuses a stray quote and an unclosed quoted field, naming the line', () => {
    const stray = new CsvParser().push('a,b\n1,x"y\n');
    expect(stray).toMatchObject({ ok: false, error: { type: 'CsvMalformed', line: 2 } });
    const parser = new CsvParser();
    parser.push('a\n"open');
    expect(parser.end()).toMatchObject({ ok: false, error: { type: 'CsvMalformed' } });
  });
});

describe('CSV type inference', () => {
  it('takes the narrowest type every value fits and marks columns with empty fields nullable', () => {
    const inference = new SchemaInference(['b', 'i', 'big', 'f', 't', 's', 'mixed']);
    inference.observe(['true', '1', '1', '1', '2024-01-01', 'x', '12']);
    inference.observe(['false', '-7', '9007199254740993', '2.5', '2024-01-01T10:00:00Z', '', '2024-01-01T00:00:00Z']);
    inference.observe(['', '2147483647', '-1', '1e3', '2024-01-01T10:00:00.250+02:00', 'y', '3']);
    const schema = inference.schema();
    expect(schema.ok && schema.value.map((c) => [c.name, c.type, c.nullable])).toEqual([
      ['b', 'boolean', true],
      ['i', 'int32', false],
      ['big', 'int64', false],
      ['f', 'double', false],
      ['t', 'timestamp', false],
      ['s', 'string', true],
      ['mixed', 'string', false],
    ]);
    expect(toCell('int64', '9007199254740993')).toBe(9007199254740993n);
  });

  it('reads zones with minutes either side of UTC, and prints times a date cannot hold as milliseconds', () => {
    expect(parseTimestamp('2024-01-01T10:00:00+05:30')).toBe(Date.UTC(2024, 0, 1, 4, 30));
    expect(parseTimestamp('2024-01-01T10:00:00-0330')).toBe(Date.UTC(2024, 0, 1, 13, 30));
    expect(parseTimestamp('2024-02-30')).toBeUndefined();
    expect(parseTimestamp('2024-13-01')).toBeUndefined();
    expect(isoTime(Date.UTC(2024, 0, 1))).toBe('2024-01-01T00:00:00.000Z');
    expect(isoTime(9e15)).toBe('9000000000000000 ms');
    expect(() => toCell('rowid', 'ab')).toThrow('csv: row ids are not read from CSV');
    const inference = new SchemaInference(['t']);
    for (const t of ['2024-01-01T00:00:00.1234Z', '2024-01-01T00:00:00.12304Z']) {
      const one = new SchemaInference(['t']);
      one.observe([t]);
      expect(
        one.schema().ok && one.schema().ok ? (one.schema() as { value: { type: string }[] }).value[0]!.type : '',
        t,
      ).toBe('string');
    }
    inference.observe(['2024-01-01']);
    inference.observe(['2024-01-02']);
    expect(inference.records).toBe(2);
  });

  it('reads ISO 8601 timestamps with their zone, refuses a time without one and impossible dates', () => {
    expect(parseTimestamp('2024-01-01T10:00:00.250+02:00')).toBe(Date.UTC(2024, 0, 1, 8, 0, 0, 250));
    expect(parseTimestamp('2024-02-29')).toBe(Date.UTC(2024, 1, 29));
    expect(parseTimestamp('2023-02-29')).toBeUndefined();
    expect(parseTimestamp('2024-01-01T10:00:00')).toBeUndefined();
  });

  it('refuses header names that cannot be columns, __proto__ among them', () => {
    const inference = new SchemaInference(['ok', 'not ok']);
    expect(inference.schema()).toMatchObject({ ok: false, error: { type: 'CsvHeader' } });
    const proto = new SchemaInference(['a', '__proto__']);
    proto.observe(['1', '2']);
    expect(proto.schema()).toMatchObject({ ok: false, error: { type: 'CsvHeader', detail: /__proto__ is reserved/ } });
  });

  it('keeps values exactly: a wider integer than int64 or a time finer than milliseconds stays text', () => {
    const inference = new SchemaInference(['wide', 'exact', 'fine', 'ms', 'zeros']);
    inference.observe([
      '123456789012345678901234567890',
      '1180591620717411303424',
      '2024-01-01T00:00:00.123456789Z',
      '2024-01-01T00:00:00.123Z',
      '2024-01-01T00:00:00.123000Z',
    ]);
    const schema = inference.schema();
    expect(schema.ok && schema.value.map((c) => c.type)).toEqual([
      'string',
      'double',
      'string',
      'timestamp',
      'timestamp',
    ]);
    // 2^70 is a double exactly; the 30-digit integer is not.
    expect(toCell('double', '1180591620717411303424')).toBe(2 ** 70);
  });
});

describe('CSV edge cases the mutation batch showed untested', () => {
  it('reads old Mac line endings (CR alone) without losing the character after each', () => {
    expect(parseAll('x,y\r1,2\r3,4')).toEqual([
      ['x', 'y'],
      ['1', '2'],
      ['3', '4'],
    ]);
  });

  it('keeps a last record that is one empty quoted field, and adds none after a final newline', () => {
    expect(parseAll('a\n""')).toEqual([['a'], ['']]);
    const parser = new CsvParser();
    expect(parser.push('a,b\n')).toEqual({ ok: true, value: [['a', 'b']] });
    expect(parser.end()).toEqual({ ok: true, value: [] });
  });

  it('takes a header of one column', () => {
    expect(checkHeader(['name'])).toEqual({ ok: true, value: ['name'] });
    expect(checkHeader([''])).toMatchObject({ ok: false, error: { type: 'CsvHeader', detail: 'no header row' } });
  });

  it('types a column that is empty in every record as nullable text', () => {
    const inference = new SchemaInference(['n', 'blank']);
    inference.observe(['1', '']);
    inference.observe(['2', '']);
    expect(inference.schema()).toEqual({
      ok: true,
      value: [
        { name: 'n', type: 'int32', nullable: false },
        { name: 'blank', type: 'string', nullable: true },
      ],
    });
  });

  it('refuses dates before the year 100 rather than read them as 19xx', () => {
    expect(parseTimestamp('0050-01-01')).toBeUndefined();
    expect(parseTimestamp('0100-01-01')).toBe(-59_011_459_200_000);
  });

  it('reads a float cell of a declared float column as a number', () => {
    expect(toCell('float', '1.5')).toBe(1.5);
    expect(toCell('float', '')).toBeNull();
  });
});
