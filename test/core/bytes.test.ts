/**
 * Byte helpers (core/bytes.ts): hex (`hexThen` builds an id with its suffix in one string,
 * `internedHex` hands back one string object per recently seen value), UTF-8, concatenation,
 * comparison and base64url — each checked against Node's Buffer, an implementation of its own.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  bytesEqual,
  compareBytes,
  concat,
  concatAll,
  fromBase64Url,
  fromHex,
  fromUtf8,
  hexEqualsBytes,
  hexThen,
  internedHex,
  isBytes,
  toBase64Url,
  toHex,
  utf8,
} from '../../src/core/bytes.js';

const bytesOf = (n: number, fill: number): Uint8Array => new Uint8Array(n).fill(fill);

describe('hex', () => {
  it('toHex round-trips through fromHex, at every length up to past the scratch buffer', () => {
    for (const n of [0, 1, 32, 127, 128, 129, 300]) {
      const bytes = Uint8Array.from({ length: n }, (_, i) => (i * 37) & 255);
      expect(fromHex(toHex(bytes))).toEqual(bytes);
    }
  });

  it('hexThen equals toHex followed by the suffix, ASCII or not', () => {
    const id = Uint8Array.from({ length: 32 }, (_, i) => i);
    for (const suffix of ['', '.GENERAL.1', '.RESTRICTED.12.trusted', '.ümlaut', '😀']) {
      expect(hexThen(id, suffix)).toBe(toHex(id) + suffix);
    }
  });

  it('internedHex returns the same string object for equal bytes, and the right hex after eviction', () => {
    const a = internedHex(bytesOf(32, 1));
    expect(internedHex(bytesOf(32, 1))).toBe(a);
    expect(a).toBe(toHex(bytesOf(32, 1)));
    // Twenty more distinct values push the first out of the ring; its hex is still right.
    for (let v = 2; v < 22; v++) expect(internedHex(bytesOf(32, v))).toBe(toHex(bytesOf(32, v)));
    expect(internedHex(bytesOf(32, 1))).toBe(a);
  });

  it("internedHex keeps its own copy: changing the caller's bytes afterwards changes no answer", () => {
    const key = bytesOf(32, 200);
    const hex = internedHex(key);
    key.fill(201);
    expect(internedHex(bytesOf(32, 200))).toBe(hex);
    expect(internedHex(key)).toBe(toHex(bytesOf(32, 201)));
  });
});

describe('parsing and matching hex', () => {
  it('reads either case and refuses odd lengths and anything but hex digits', () => {
    expect(fromHex('00ffAB7f')).toEqual(Uint8Array.of(0, 255, 0xab, 0x7f));
    expect(fromHex('')).toEqual(new Uint8Array(0));
    for (const bad of ['abc', 'zz', '0g', 'g0', ' 0', '\u00e90', '0\u0080', '\u0130\u0130', '0x']) {
      expect(fromHex(bad)).toBeUndefined();
    }
  });

  it('hexEqualsBytes says whether the hex spells exactly those bytes', () => {
    const bytes = Uint8Array.of(0x01, 0xab, 0xff);
    expect(hexEqualsBytes('01abff', bytes)).toBe(true);
    expect(hexEqualsBytes('01ABFF', bytes)).toBe(true);
    expect(hexEqualsBytes('', new Uint8Array(0))).toBe(true);
    for (const other of ['01abfe', '00abff', '01abf', '01abff00', 'zzabff', '01abzz', '01\u00e9ff']) {
      expect(hexEqualsBytes(other, bytes)).toBe(false);
    }
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 8 }), fc.uint8Array({ maxLength: 8 }), (a, b) => {
        expect(hexEqualsBytes(Buffer.from(a).toString('hex'), b)).toBe(Buffer.from(a).equals(b));
      }),
    );
  });
});

describe('UTF-8 and concatenation', () => {
  it('encodes and strictly decodes UTF-8', () => {
    expect(utf8('aé😀')).toEqual(Uint8Array.from(Buffer.from('aé😀', 'utf8')));
    expect(fromUtf8(Uint8Array.of(0x61, 0xc3, 0xa9))).toBe('aé');
    expect(() => fromUtf8(Uint8Array.of(0xc3))).toThrow(TypeError);
  });

  it('concat and concatAll join parts in order', () => {
    const parts = [Uint8Array.of(1, 2), new Uint8Array(0), Uint8Array.of(3), Uint8Array.of(4, 5, 6)];
    expect(concat(...parts)).toEqual(Uint8Array.of(1, 2, 3, 4, 5, 6));
    expect(concatAll(parts)).toEqual(Uint8Array.of(1, 2, 3, 4, 5, 6));
    expect(concat()).toEqual(new Uint8Array(0));
    expect(concatAll([])).toEqual(new Uint8Array(0));
  });
});

describe('comparing bytes', () => {
  it('bytesEqual needs the same length and every byte', () => {
    expect(bytesEqual(Uint8Array.of(1, 2), Uint8Array.of(1, 2))).toBe(true);
    expect(bytesEqual(Uint8Array.of(1), Uint8Array.of(1, 2))).toBe(false);
    expect(bytesEqual(Uint8Array.of(1, 2), Uint8Array.of(1))).toBe(false);
    expect(bytesEqual(Uint8Array.of(1, 2), Uint8Array.of(1, 3))).toBe(false);
    expect(bytesEqual(new Uint8Array(0), new Uint8Array(0))).toBe(true);
  });

  it('compareBytes orders as Buffer.compare does (a prefix first)', () => {
    expect(compareBytes(Uint8Array.of(1, 2), Uint8Array.of(1, 2))).toBe(0);
    expect(compareBytes(Uint8Array.of(1), Uint8Array.of(1, 0))).toBeLessThan(0);
    expect(compareBytes(Uint8Array.of(2), Uint8Array.of(1, 9))).toBeGreaterThan(0);
    expect(compareBytes(Uint8Array.of(0x7f), Uint8Array.of(0x80))).toBeLessThan(0);
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 6 }), fc.uint8Array({ maxLength: 6 }), (a, b) => {
        expect(Math.sign(compareBytes(a, b))).toBe(Buffer.compare(a, b));
      }),
    );
  });

  it('isBytes checks the type and, when given, the length', () => {
    expect(isBytes(new Uint8Array(3))).toBe(true);
    expect(isBytes(new Uint8Array(3), 3)).toBe(true);
    expect(isBytes(new Uint8Array(3), 4)).toBe(false);
    expect(isBytes(new Uint8Array(0), 0)).toBe(true);
    for (const other of [[1, 2, 3], 'abc', null, undefined, new Uint16Array(3)]) expect(isBytes(other)).toBe(false);
    expect(isBytes([1, 2, 3], 3)).toBe(false);
  });
});

describe('base64url', () => {
  it('matches Buffer at every length, both ways', () => {
    for (let n = 0; n < 10; n++) {
      const bytes = Uint8Array.from({ length: n }, (_, i) => (i * 97 + 251) & 255);
      const text = Buffer.from(bytes).toString('base64url');
      expect(toBase64Url(bytes)).toBe(text);
      expect(fromBase64Url(text)).toEqual(bytes);
    }
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 40 }), (bytes) => {
        const text = Buffer.from(bytes).toString('base64url');
        expect(toBase64Url(bytes)).toBe(text);
        expect(fromBase64Url(text)).toEqual(bytes);
      }),
    );
  });

  it('refuses other alphabets, padding and impossible lengths', () => {
    for (const bad of ['a', 'abcde', 'ab+/', 'ab==', 'a b', 'ab\n', '-_-_.'])
      expect(fromBase64Url(bad)).toBeUndefined();
    expect(fromBase64Url('')).toEqual(new Uint8Array(0));
    expect(fromBase64Url('-_8')).toEqual(Uint8Array.of(0xfb, 0xff));
  });
});
