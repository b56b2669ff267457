/**
 * One column chunk in physical form (core/parquet/columns.ts): the value checks of every type,
 * the PLAIN bytes of values and statistics bounds (written out here from the Parquet encoding
 * spec, not from the code), the statistics' order (signed integers, IEEE floats without NaN and
 * with -0/+0 widened, code point order for strings, unsigned bytes for row ids), when strings
 * get a dictionary, and how two chunks' statistics combine. Orders are checked against oracles
 * of their own: code point arrays from the string iterator, and byte-by-byte comparison.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  cellCount,
  compareCells,
  compareStrings,
  EMPTY_STATS,
  mergeStats,
  plainBound,
  prepareColumn,
  type ChunkStats,
  type ColumnCells,
  type PreparedColumn,
} from '../../src/core/parquet/columns.js';
import type { CellValue, ColumnSpec, ColumnType } from '../../src/core/parquet/schema.js';

const spec = (type: ColumnType, nullable = false): ColumnSpec => ({ name: 'c', type, nullable });
const hex = (bytes: Uint8Array | undefined) => (bytes === undefined ? undefined : Buffer.from(bytes).toString('hex'));

function prepared(type: ColumnType, cells: ColumnCells, nullable = false): PreparedColumn {
  const result = prepareColumn(spec(type, nullable), cells);
  if (!result.ok) throw new Error(`unexpected refusal: ${result.error.detail} (row ${result.error.row})`);
  return result.value;
}

function refusal(type: ColumnType, cells: ColumnCells, nullable = false) {
  const result = prepareColumn(spec(type, nullable), cells);
  if (result.ok) throw new Error('expected a refusal');
  return result.error;
}

/** Code point order by the string iterator (lone surrogates as their own code points). */
function codePointOrder(a: string, b: string): number {
  const x = Array.from(a, (c) => c.codePointAt(0)!);
  const y = Array.from(b, (c) => c.codePointAt(0)!);
  for (let i = 0; i < Math.min(x.length, y.length); i++) if (x[i] !== y[i]) return x[i]! - y[i]!;
  return x.length - y.length;
}

/** Strings of code units chosen to meet at surrogate boundaries: pairs, lone halves, units above them. */
const unit = fc.oneof(
  fc.constantFrom('a', 'b', '\ud800', '\udbff', '\udc00', '\udfff', '\ue000', '\uffff', '\u{10000}', '\u{10ffff}'),
  fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c)),
);
const text = fc.array(unit, { maxLength: 6 }).map((units) => units.join(''));

describe('PLAIN bounds', () => {
  it('encodes each type as the Parquet PLAIN encoding does', () => {
    expect(hex(plainBound(spec('boolean'), true))).toBe('01');
    expect(hex(plainBound(spec('boolean'), false))).toBe('00');
    expect(hex(plainBound(spec('int32'), -2))).toBe('feffffff');
    expect(hex(plainBound(spec('float'), 1.5))).toBe('0000c03f');
    expect(hex(plainBound(spec('double'), 1.5))).toBe('000000000000f83f');
    expect(hex(plainBound(spec('int64'), -2n))).toBe('feffffffffffffff');
    expect(hex(plainBound(spec('int64'), 258))).toBe('0201000000000000');
    expect(hex(plainBound(spec('timestamp'), 1_700_000_000_000))).toBe('0068e5cf8b010000');
    expect(hex(plainBound(spec('string'), 'é'))).toBe('c3a9');
    const id = Uint8Array.from({ length: 16 }, (_, i) => i);
    expect(plainBound(spec('rowid'), id)).toBe(id);
  });
});

describe('code point order of strings', () => {
  it('orders astral characters after the rest of the BMP, unlike UTF-16', () => {
    expect(compareStrings('\uffff', '\u{10000}')).toBeLessThan(0);
    expect(compareStrings('a\u{10000}', 'a\uffff')).toBeGreaterThan(0);
    expect(compareStrings('\u{10000}', '\u{10001}')).toBeLessThan(0);
    expect(compareStrings('ab', 'a')).toBeGreaterThan(0);
    expect(compareStrings('a', 'ab')).toBeLessThan(0);
    expect(compareStrings('same', 'same')).toBe(0);
  });

  it('compares lone surrogates as their own code points', () => {
    // U+10000 against a lone high surrogate followed by U+E000: the first code points differ.
    expect(compareStrings('\u{10000}', '\ud800\ue000')).toBeGreaterThan(0);
    expect(compareStrings('\ud800\ue000', '\u{10000}')).toBeLessThan(0);
    // Both start with a lone high surrogate: the next code point decides, whole.
    expect(compareStrings('\ud800\u{10000}', '\ud800\ue000')).toBeGreaterThan(0);
    expect(compareStrings('\ud800a', '\ud800b')).toBeLessThan(0);
    // A lone low surrogate after an ordinary character pairs with nothing: U+DC00 < U+E000.
    expect(compareStrings('a\udc00', 'a\ue000')).toBeLessThan(0);
    // The same at the top of the surrogate range: U+10FFFF against a lone U+DBFF and U+E000.
    expect(compareStrings('\u{10ffff}', '\udbff\ue000')).toBeGreaterThan(0);
    expect(compareStrings('\u{10000}', '\ud800\udbff')).toBeGreaterThan(0);
  });

  it('agrees in sign with code point arrays, for any UTF-16', () => {
    fc.assert(
      fc.property(text, text, (a, b) => {
        expect(Math.sign(compareStrings(a, b))).toBe(Math.sign(codePointOrder(a, b)));
      }),
      { numRuns: 3000 },
    );
  });

  it('orders well-formed strings as their UTF-8 bytes', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme' }), fc.string({ unit: 'grapheme' }), (a, b) => {
        const bytes = Math.sign(Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8')));
        expect(Math.sign(compareStrings(a, b))).toBe(bytes);
      }),
    );
  });
});

describe('value checks', () => {
  it('names the column, the row and what was expected', () => {
    expect(refusal('int32', [1, 'x'])).toEqual({
      type: 'InvalidValue',
      column: 'c',
      row: 1,
      detail: 'expected a 32-bit integer',
    });
  });

  it.each<[ColumnType, CellValue, string]>([
    ['int64', 'x', 'expected a 64-bit integer'],
    ['int64', 2 ** 53, 'expected a 64-bit integer'],
    ['int64', 1.5, 'expected a 64-bit integer'],
    ['int64', 2n ** 63n, 'expected a 64-bit integer'],
    ['int64', -(2n ** 63n) - 1n, 'expected a 64-bit integer'],
    ['timestamp', 'x', 'expected integer milliseconds since the epoch'],
    ['timestamp', 1.5, 'expected integer milliseconds since the epoch'],
    ['timestamp', 5n, 'expected integer milliseconds since the epoch'],
    ['int32', 'x', 'expected a 32-bit integer'],
    ['int32', 2 ** 31, 'expected a 32-bit integer'],
    ['int32', -(2 ** 31) - 1, 'expected a 32-bit integer'],
    ['int32', 0.5, 'expected a 32-bit integer'],
    ['int32', 5n, 'expected a 32-bit integer'],
    ['double', 'x', 'expected a number'],
    ['double', 5n, 'expected a number'],
    ['float', true, 'expected a number'],
    ['boolean', 1, 'expected a boolean'],
    ['string', 1, 'expected a string'],
    ['string', 'a\ud800', 'expected text (a lone surrogate is not a character)'],
    ['string', '\udc00b', 'expected text (a lone surrogate is not a character)'],
    ['rowid', new Uint8Array(15), 'expected 16 bytes'],
    ['rowid', 'x', 'expected 16 bytes'],
  ])('refuses in a %s column: %s', (type, cell, detail) => {
    expect(refusal(type, [null, cell], true)).toEqual({ type: 'InvalidValue', column: 'c', row: 1, detail });
  });

  it('refuses a null, or a hole, in a required column', () => {
    expect(refusal('double', [1, null]).detail).toBe('null in a required column');
    expect(refusal('string', ['a', undefined as unknown as CellValue]).detail).toBe('null in a required column');
  });

  it('counts a hole in a nullable column as a null', () => {
    const column = prepared('int32', [1, undefined as unknown as CellValue, 2], true);
    expect([...column.levels]).toEqual([1, 0, 1]);
    expect(column.count).toBe(2);
    expect(column.stats.nulls).toBe(1);
  });

  it('accepts packed cells only for row ids, and only whole 16-byte ones', () => {
    const packed = { packed: new Uint8Array(32), width: 16 };
    expect(refusal('int32', packed)).toEqual({
      type: 'InvalidValue',
      column: 'c',
      row: 0,
      detail: 'packed cells are only for row ids',
    });
    expect(refusal('rowid', { packed: new Uint8Array(32), width: 8 }).detail).toBe('expected 16-byte row ids');
    expect(refusal('rowid', { packed: new Uint8Array(33), width: 16 }).detail).toBe('expected 16-byte row ids');
    expect(cellCount(packed)).toBe(2);
    expect(cellCount([1, 2, 3])).toBe(3);
  });

  it('accepts the bounds of each integer range', () => {
    const int32 = prepared('int32', [2 ** 31 - 1, -(2 ** 31)]);
    expect(hex(int32.values.kind === 'fixed' ? int32.values.bytes : undefined)).toBe('ffffff7f00000080');
    const int64 = prepared('int64', [2n ** 63n - 1n, -(2n ** 63n)]);
    expect(hex(int64.values.kind === 'fixed' ? int64.values.bytes : undefined)).toBe(
      'ffffffffffffff7f' + '0000000000000080',
    );
  });
});

describe('physical values', () => {
  const fixed = (column: PreparedColumn) => {
    if (column.values.kind !== 'fixed') throw new Error(`values are ${column.values.kind}`);
    return { width: column.values.width, hex: hex(column.values.bytes) };
  };

  it('writes only the present values, little-endian, at the width of the type', () => {
    expect(fixed(prepared('int32', [1, null, -1], true))).toEqual({ width: 4, hex: '01000000ffffffff' });
    expect(fixed(prepared('float', [1.5, -2]))).toEqual({ width: 4, hex: '0000c03f000000c0' });
    expect(fixed(prepared('double', [null, 1.5], true))).toEqual({ width: 8, hex: '000000000000f83f' });
  });

  it('writes int64 and timestamps from numbers and bigints as two’s complement', () => {
    expect(fixed(prepared('int64', [-1, 2 ** 40 + 5, 3n, -(2n ** 40n)]))).toEqual({
      width: 8,
      hex: 'ffffffffffffffff' + '0500000000010000' + '0300000000000000' + '0000000000ffffff',
    });
    // At the ends of the safe range the high word's arithmetic must stay exact.
    expect(fixed(prepared('int64', [Number.MAX_SAFE_INTEGER, Number.MIN_SAFE_INTEGER]))).toEqual({
      width: 8,
      hex: 'ffffffffffff1f00' + '010000000000e0ff',
    });
    expect(fixed(prepared('timestamp', [1_700_000_000_000, -1]))).toEqual({
      width: 8,
      hex: '0068e5cf8b010000' + 'ffffffffffffffff',
    });
  });

  it('keeps booleans one per byte, strings as they are, row ids packed', () => {
    expect(prepared('boolean', [true, null, false], true).values).toEqual({ kind: 'bool', data: Uint8Array.of(1, 0) });
    expect(prepared('string', ['x', null, 'y'], true).values).toEqual({ kind: 'strings', data: ['x', 'y'] });
    const a = new Uint8Array(16).fill(1);
    const b = new Uint8Array(16).fill(2);
    const ids = prepared('rowid', [a, null, b], true);
    expect(fixed(ids)).toEqual({ width: 16, hex: hex(a)! + hex(b)! });
    expect(ids.count).toBe(2);
    expect([...ids.levels]).toEqual([1, 0, 1]);
  });
});

describe('chunk statistics', () => {
  const bounds = (stats: ChunkStats) => [stats.min, stats.max];

  it('takes signed integer order, whichever row holds the extremes', () => {
    expect(bounds(prepared('int32', [5, 3, 9, -4, 9, 3]).stats)).toEqual([-4, 9]);
    expect(bounds(prepared('timestamp', [20, 10, 30]).stats)).toEqual([10, 30]);
    // int64 bounds are bigints, also when the cells were numbers.
    expect(bounds(prepared('int64', [7, -8, 2]).stats)).toEqual([-8n, 7n]);
    expect(bounds(prepared('int64', [2n ** 62n + 1n, 2n ** 62n]).stats)).toEqual([2n ** 62n, 2n ** 62n + 1n]);
    const stats = prepared('int32', [-4, 9]).stats;
    expect([hex(stats.minBytes), hex(stats.maxBytes)]).toEqual(['fcffffff', '09000000']);
  });

  it('leaves NaN out of float bounds', () => {
    expect(bounds(prepared('double', [NaN, 2, 1, NaN]).stats)).toEqual([1, 2]);
    expect(bounds(prepared('float', [NaN, 2.5, 1.5]).stats)).toEqual([1.5, 2.5]);
    const nan = prepared('double', [NaN]).stats;
    expect([nan.min, nan.max, nan.minBytes, nan.maxBytes]).toEqual([undefined, undefined, undefined, undefined]);
  });

  it('takes float bounds from the stored (rounded) value', () => {
    const stats = prepared('float', [0.1]).stats;
    expect(stats.min).toBe(Math.fround(0.1));
    expect(hex(stats.minBytes)).toBe('cdcccc3d');
  });

  it('widens a zero bound: min -0, max +0', () => {
    const up = prepared('double', [0, 1]).stats;
    expect(Object.is(up.min, -0)).toBe(true);
    expect(hex(up.minBytes)).toBe('0000000000000080');
    const down = prepared('double', [-1, -0]).stats;
    expect(Object.is(down.max, 0)).toBe(true);
    expect(hex(down.maxBytes)).toBe('0000000000000000');
  });

  it('bounds booleans false < true', () => {
    expect(bounds(prepared('boolean', [true, false]).stats)).toEqual([false, true]);
    expect(bounds(prepared('boolean', [true, true]).stats)).toEqual([true, true]);
    expect(bounds(prepared('boolean', [false]).stats)).toEqual([false, false]);
    expect(bounds(prepared('boolean', [null], true).stats)).toEqual([undefined, undefined]);
  });

  it('bounds strings in code point order', () => {
    const stats = prepared('string', ['b', '\u{10000}', 'a', '\uffff', 'b']).stats;
    expect(bounds(stats)).toEqual(['a', '\u{10000}']);
    expect([hex(stats.minBytes), hex(stats.maxBytes)]).toEqual(['61', 'f0908080']);
  });

  it('bounds row ids in unsigned byte order, listed or packed, as copies', () => {
    const id = (...head: number[]) => Uint8Array.from({ length: 16 }, (_, i) => head[i] ?? 0);
    const [low, mid, high] = [id(1, 0xff), id(0x80), id(0xff, 1)];
    // Neither extreme first nor last, so that no order of visiting finds them by accident.
    expect(bounds(prepared('rowid', [mid, high, low, mid]).stats)).toEqual([low, high]);
    expect(bounds(prepared('rowid', [mid, low, high, mid]).stats)).toEqual([low, high]);
    const packed = new Uint8Array([...mid, ...high, ...low, ...mid]);
    const column = prepared('rowid', { packed, width: 16 });
    expect(column.values).toEqual({ kind: 'fixed', width: 16, bytes: packed });
    expect([column.rows, column.count]).toEqual([4, 4]);
    const stats = column.stats;
    expect(bounds(stats)).toEqual([low, high]);
    expect(
      bounds(prepared('rowid', { packed: new Uint8Array([...mid, ...low, ...high, ...mid]), width: 16 }).stats),
    ).toEqual([low, high]);
    packed.fill(0);
    expect(bounds(stats)).toEqual([low, high]);
    expect(bounds(prepared('rowid', { packed: new Uint8Array(0), width: 16 }).stats)).toEqual([undefined, undefined]);
  });

  it('counts nulls, and has no bounds for an all-null chunk', () => {
    const stats = prepared('string', [null, null], true).stats;
    expect(stats).toEqual({ nulls: 2, min: undefined, max: undefined, minBytes: undefined, maxBytes: undefined });
  });
});

describe('string dictionaries', () => {
  it('uses one when the distinct strings take at most half the bytes of all', () => {
    const column = prepared('string', ['red', 'blue', 'red', 'red', 'blue', 'red'], false);
    expect(column.dictionary?.entries.map((e) => Buffer.from(e).toString())).toEqual(['red', 'blue']);
    expect([...column.dictionary!.indexes]).toEqual([0, 1, 0, 0, 1, 0]);
  });

  it('draws the line at exactly half', () => {
    // Each string counts its length + 4: "aa" twice is 12, its one distinct entry 6 (= half).
    expect(prepared('string', ['aa', 'aa']).dictionary).toBeDefined();
    // "a", "b": 10 in all, and the distinct ones as much.
    expect(prepared('string', ['a', 'b']).dictionary).toBeUndefined();
    // One more distinct string tips it: 3 × "ab" and "cd" is 24; "ab" + "cd" = 12 (half), + "ef" is over.
    expect(prepared('string', ['ab', 'ab', 'ab', 'cd']).dictionary).toBeDefined();
    expect(prepared('string', ['ab', 'ab', 'cd', 'ef']).dictionary).toBeUndefined();
  });

  it('has none for strings that do not repeat, nor for an all-null chunk', () => {
    expect(prepared('string', ['one', 'two', 'three']).dictionary).toBeUndefined();
    expect(prepared('string', [null, null], true).dictionary).toBeUndefined();
    expect('dictionary' in prepared('string', [null], true)).toBe(false);
  });
});

describe('comparing and merging bounds', () => {
  it('orders each kind of value as its statistics do', () => {
    expect(compareCells('\uffff', '\u{10000}')).toBeLessThan(0);
    expect(compareCells('\u{10000}', '\uffff')).toBeGreaterThan(0);
    expect(compareCells(Uint8Array.of(2), Uint8Array.of(10))).toBeLessThan(0);
    expect(compareCells(false, true)).toBeLessThan(0);
    expect(compareCells(true, false)).toBeGreaterThan(0);
    expect(compareCells(true, true)).toBe(0);
    expect(compareCells(1, 2)).toBe(-1);
    expect(compareCells(2, 1)).toBe(1);
    expect(compareCells(1.5, 1.5)).toBe(0);
    expect(compareCells(2n ** 62n + 1n, 2n ** 62n)).toBe(1);
    expect(compareCells(2n ** 62n, 2n ** 62n + 1n)).toBe(-1);
  });

  const chunk = (min: number, max: number, nulls = 0): ChunkStats => ({
    nulls,
    min,
    max,
    minBytes: Uint8Array.of(min),
    maxBytes: Uint8Array.of(max),
  });

  it('takes the lower min and the higher max, with their bytes, and adds nulls', () => {
    expect(mergeStats(chunk(3, 5, 1), chunk(1, 9, 2))).toEqual(chunk(1, 9, 3));
    expect(mergeStats(chunk(1, 9), chunk(3, 5))).toEqual(chunk(1, 9));
    expect(mergeStats(chunk(3, 9), chunk(1, 5))).toEqual({ ...chunk(1, 9), minBytes: Uint8Array.of(1) });
  });

  it('ignores a side without bounds', () => {
    const allNull = { ...EMPTY_STATS, nulls: 4 };
    expect(mergeStats(chunk(3, 5), allNull)).toEqual(chunk(3, 5, 4));
    expect(mergeStats(allNull, chunk(3, 5))).toEqual(chunk(3, 5, 4));
    expect(mergeStats(EMPTY_STATS, EMPTY_STATS)).toEqual(EMPTY_STATS);
  });
});
