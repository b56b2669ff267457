/**
 * CSV (core/csv.ts): behaviour the mutation run of csv.ts showed unpinned — a parser that
 * stays refused after a fault, the int32/int64 bounds of inference, boolean cells, quoting
 * of fields with surrounding whitespace, and a header whose first name is blank.
 */
import { describe, expect, it } from 'vitest';
import { checkHeader, CsvParser, csvField, csvRecord, SchemaInference, toCell } from '../../src/core/csv.js';

describe('CSV parser after a fault', () => {
  it('keeps refusing with the same fault, even when the next chunk would parse on its own', () => {
    const parser = new CsvParser();
    const fault = {
      ok: false,
      error: { type: 'CsvMalformed', line: 2, detail: 'a quote inside an unquoted field or after a closing quote' },
    };
    expect(parser.push('a\nx"')).toEqual(fault);
    expect(parser.push('y\n')).toEqual(fault);
    expect(parser.end()).toEqual(fault);
  });

  it('finds no record in a second end() with no text since the first', () => {
    const parser = new CsvParser();
    expect(parser.push('a,b')).toEqual({ ok: true, value: [] });
    expect(parser.end()).toEqual({ ok: true, value: [['a', 'b']] });
    expect(parser.end()).toEqual({ ok: true, value: [] });
    // And reads on as before once more text comes.
    expect(parser.push('c\n')).toEqual({ ok: true, value: [['c']] });
  });
});

describe('CSV type inference at the integer bounds', () => {
  it('takes int32 from -2^31 to 2^31 - 1, int64 from -2^63 to 2^63 - 1, and nothing past those as int64', () => {
    const inference = new SchemaInference([
      'i32min',
      'i32under',
      'i32max',
      'i32over',
      'i64min',
      'i64under',
      'i64max',
      'i64over',
    ]);
    inference.observe([
      '-2147483648',
      '-2147483649',
      '2147483647',
      '2147483648',
      '-9223372036854775808',
      '-9223372036854775809',
      '9223372036854775807',
      '9223372036854775808',
    ]);
    expect(inference.schema()).toEqual({
      ok: true,
      value: [
        // The narrowest type that holds it: int32 reaches one further below zero than above.
        { name: 'i32min', type: 'int32', nullable: false },
        { name: 'i32under', type: 'int64', nullable: false },
        { name: 'i32max', type: 'int32', nullable: false },
        { name: 'i32over', type: 'int64', nullable: false },
        { name: 'i64min', type: 'int64', nullable: false },
        // One below int64 is not a double exactly either: it stays text.
        { name: 'i64under', type: 'string', nullable: false },
        { name: 'i64max', type: 'int64', nullable: false },
        // 2^63 is a double exactly.
        { name: 'i64over', type: 'double', nullable: false },
      ],
    });
  });
});

describe('CSV cells', () => {
  it('reads true as true, false as false and an empty boolean field as null', () => {
    expect([toCell('boolean', 'true'), toCell('boolean', 'false'), toCell('boolean', '')]).toEqual([true, false, null]);
  });
});

describe('CSV writing', () => {
  it('quotes a field with leading or trailing whitespace and leaves inner spaces unquoted', () => {
    expect([csvField(' lead'), csvField('trail '), csvField('\ttab'), csvField('in side')]).toEqual([
      '" lead"',
      '"trail "',
      '"\ttab"',
      'in side',
    ]);
    expect(csvRecord([' a', 'b c', 'd\n'])).toBe('" a",b c,"d\n"\n');
  });
});

describe('CSV header', () => {
  it('treats a header with a blank first name as a header row, refused by the schema for that name', () => {
    const header = checkHeader(['', 'b']);
    expect(header).toEqual({ ok: true, value: ['', 'b'] });
    const names = header.ok ? header.value : [];
    expect(new SchemaInference(names).schema()).toEqual({
      ok: false,
      error: { type: 'CsvHeader', detail: 'column name ""' },
    });
  });
});
