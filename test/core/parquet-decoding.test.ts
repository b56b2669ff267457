/**
 * What the Parquet reader hands hyparquet and checks around it (core/parquet/decoding.ts):
 * value parsers exact to the millisecond and refusing what a Date cannot hold, the guards
 * that type a decoder's exceptions, the settling of assembled nested values, and the
 * joining of a column's pages. Expected values are worked out by hand here.
 */
import type { SchemaTree } from 'hyparquet/src/types.js';
import { describe, expect, it } from 'vitest';
import { concatValues, escapedAsMalformed, guarded, PARSERS, settled } from '../../src/core/parquet/decoding.js';
import { err, ok } from '../../src/core/result.js';

/** What a parser says when it refuses: the guard's typed error. */
const parsed = (fn: () => unknown) => guarded('v', fn);

describe('value parsers', () => {
  it('converts micro- and nanoseconds to milliseconds exactly, negative ones too', () => {
    expect(PARSERS.timestampFromMicroseconds(1_700_000_000_123_456n)).toBe(1_700_000_000_123.456);
    expect(PARSERS.timestampFromMicroseconds(-1_500n)).toBe(-1.5);
    expect(PARSERS.timestampFromNanoseconds(410_000_000n)).toBe(410);
    expect(PARSERS.timestampFromNanoseconds(1_250_000n)).toBe(1.25);
    expect(PARSERS.timestampFromMilliseconds(-5n)).toBe(-5);
  });

  it('refuses times and dates a Date cannot hold, at the exact edge', () => {
    expect(PARSERS.timestampFromMilliseconds(8_640_000_000_000_000n)).toBe(8.64e15);
    expect(parsed(() => PARSERS.timestampFromMilliseconds(8_640_000_000_000_001n))).toEqual(
      err({ type: 'Unsupported', detail: 'v: timestamp 8640000000000001 ms is outside the range of a date' }),
    );
    expect(parsed(() => PARSERS.timestampFromMicroseconds(-8_640_000_000_000_001_000n))).toEqual(
      err({ type: 'Unsupported', detail: 'v: timestamp -8640000000000001 ms is outside the range of a date' }),
    );
    expect(PARSERS.dateFromDays(100_000_000)).toEqual(new Date(8.64e15));
    expect(PARSERS.dateFromDays(-3)).toEqual(new Date(-3 * 86_400_000));
    expect(parsed(() => PARSERS.dateFromDays(-100_000_001))).toEqual(
      err({ type: 'Unsupported', detail: 'v: date -100000001 days is outside the range' }),
    );
  });

  it('refuses an INT96 whose negative nanoseconds swallowed its day, and only those', () => {
    const from = -2_440_589n * 86_400_000_000_000n + 2n ** 63n;
    const to = -2_440_589n * 86_400_000_000_000n + 2n ** 64n;
    const lost = err({
      type: 'Unsupported',
      detail: 'v: an INT96 time with a negative nanosecond-of-day field (its day cannot be read)',
    });
    expect(parsed(() => PARSERS.timestampFromNanoseconds(from))).toEqual(lost);
    expect(parsed(() => PARSERS.timestampFromNanoseconds(to - 1n))).toEqual(lost);
    // Just outside the band the time is an ordinary one (about 4420 BCE), read as milliseconds.
    for (const ns of [from - 1n, to]) {
      const ms = PARSERS.timestampFromNanoseconds(ns) as number;
      expect(Math.abs(ms - Number(ns) / 1e6)).toBeLessThan(1);
    }
  });

  it('keeps geometry as its bytes', () => {
    const wkb = Uint8Array.of(1, 2, 3);
    expect(PARSERS.geometryFromBytes(wkb)).toBe(wkb);
    expect(PARSERS.geographyFromBytes(wkb)).toBe(wkb);
  });
});

describe('guards', () => {
  it('types a decoder’s exception as malformed input, whatever was thrown', () => {
    expect(guarded('page', () => 7)).toEqual(ok(7));
    expect(
      guarded('page', () => {
        throw new RangeError('offset out of bounds');
      }),
    ).toEqual(err({ type: 'Malformed', detail: 'page: offset out of bounds' }));
    expect(
      guarded('page', () => {
        throw 'a string'; // eslint-disable-line @typescript-eslint/only-throw-error -- what a decoder might throw
      }),
    ).toEqual(err({ type: 'Malformed', detail: 'page: a string' }));
  });

  it('catches what escapes an asynchronous read, as malformed input', async () => {
    expect(await escapedAsMalformed('file', () => Promise.resolve(ok(1)))).toEqual(ok(1));
    expect(await escapedAsMalformed('file', () => Promise.reject(new TypeError('x is undefined')))).toEqual(
      err({ type: 'Malformed', detail: 'file: x is undefined' }),
    );
    expect(
      await escapedAsMalformed('file', () => {
        throw new Error('sync');
      }),
    ).toEqual(err({ type: 'Malformed', detail: 'file: sync' }));
  });
});

describe('settled nested values', () => {
  const node = (
    name: string,
    repetition: 'REQUIRED' | 'OPTIONAL' | 'REPEATED',
    children: SchemaTree[] = [],
    annotation: Partial<SchemaTree['element']> = {},
  ): SchemaTree => ({
    element: { name, repetition_type: repetition, ...annotation },
    children,
    count: 1 + children.length,
    path: [name],
  });

  it('makes a missing REPEATED field an empty list and a missing group null', () => {
    const repeated = node('xs', 'REPEATED');
    expect(settled(null, repeated)).toEqual([]);
    expect(settled(undefined, repeated)).toEqual([]);
    expect(settled(undefined, node('g', 'OPTIONAL', [node('a', 'OPTIONAL')]))).toBeNull();
    expect(settled(0, node('n', 'OPTIONAL'))).toBe(0);
    expect(settled([1, 2], repeated)).toEqual([1, 2]);
  });

  it('settles the fields of a group, and of each group in a repeated one', () => {
    const group = node('g', 'OPTIONAL', [node('tags', 'REPEATED'), node('inner', 'OPTIONAL', [node('z', 'REPEATED')])]);
    expect(settled({ tags: null, inner: undefined }, group)).toEqual({ tags: [], inner: null });
    expect(settled({ tags: [1], inner: { z: undefined } }, group)).toEqual({ tags: [1], inner: { z: [] } });
    const items = node('items', 'REPEATED', [node('tags', 'REPEATED')]);
    expect(settled([{ tags: null }, { tags: [2] }], items)).toEqual([{ tags: [] }, { tags: [2] }]);
    // Items that are not records (bytes, lists, nulls, scalars) pass unchanged.
    const bytes = Uint8Array.of(1);
    expect(settled([null, 3, bytes, [4]], items)).toEqual([null, 3, bytes, [4]]);
  });

  it('leaves LIST and MAP values as hyparquet shapes them, but a MAP of keys alone is its keys', () => {
    const list = node('l', 'OPTIONAL', [node('list', 'REPEATED', [node('element', 'OPTIONAL')])], {
      converted_type: 'LIST',
    });
    expect(settled([1, null], list)).toEqual([1, null]);
    const logicalList = node('l', 'OPTIONAL', [node('list', 'REPEATED', [node('element', 'OPTIONAL')])], {
      logical_type: { type: 'LIST' },
    });
    expect(settled([1], logicalList)).toEqual([1]);
    for (const annotation of [
      { converted_type: 'MAP' as const },
      { converted_type: 'MAP_KEY_VALUE' as const },
      { logical_type: { type: 'MAP' as const } },
    ]) {
      const keysOnly = node('m', 'OPTIONAL', [node('key_value', 'REPEATED', [node('key', 'REQUIRED')])], annotation);
      expect(settled({ key_value: [{ key: 'a' }, null, { key: 'b' }] }, keysOnly), JSON.stringify(annotation)).toEqual([
        'a',
        null,
        'b',
      ]);
      const full = node(
        'm',
        'OPTIONAL',
        [node('key_value', 'REPEATED', [node('key', 'REQUIRED'), node('value', 'OPTIONAL')])],
        annotation,
      );
      expect(settled({ a: 1 }, full)).toEqual({ a: 1 });
      // A map keyed by its entries' own name keeps that key: it is a map of keys and values.
      expect(settled({ key_value: [1, 2] }, full)).toEqual({ key_value: [1, 2] });
    }
    // An annotated node without children (a malformed schema) gives its value back as it is.
    expect(settled({ x: 1 }, node('m', 'OPTIONAL', [], { converted_type: 'MAP' }))).toEqual({ x: 1 });
  });
});

describe('concatValues', () => {
  it('joins pages of one typed-array kind into one typed array, in order', () => {
    const joined = concatValues([Int32Array.of(1, 2), Int32Array.of(3), Int32Array.of()]);
    expect(joined).toEqual(Int32Array.of(1, 2, 3));
    expect(joined).toBeInstanceOf(Int32Array);
  });

  it('joins pages of different kinds, or plain ones, into a plain array', () => {
    const mixed = concatValues([Int32Array.of(1), Float64Array.of(2.5), [null, 'x']]);
    expect(mixed).toEqual([1, 2.5, null, 'x']);
    expect(Array.isArray(mixed)).toBe(true);
    expect(concatValues([[1], [2, 3]])).toEqual([1, 2, 3]);
    expect(concatValues([])).toEqual([]);
  });

  it('returns a single page as it is', () => {
    const only = BigInt64Array.of(5n);
    expect(concatValues([only])).toBe(only);
  });
});
