/**
 * Strict canonical CBOR decoding (core/cbor.ts). The byte-level canonical scan
 * must accept exactly what the old rule accepted — "cborg decodes it and
 * re-encoding gives the same bytes" — which a differential property test checks
 * on encodings of random values and on random corruptions of them.
 */
import { decode, encode, rfc8949EncodeOptions } from 'cborg';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { bytesEqual, fromHex } from '../../src/core/bytes.js';
import { decodeCbor, decodeMapFields, encodeCbor, isRecord } from '../../src/core/cbor.js';
import { runs } from '../helpers/runs.js';

const LIMIT = 1 << 20;

/** The reference rule: a strict cborg decode whose re-encoding is byte-identical; its value, or undefined. */
function reference(bytes: Uint8Array): { value: unknown } | undefined {
  try {
    const value: unknown = decode(bytes, {
      strict: true,
      allowUndefined: false,
      allowIndefinite: false,
      allowInfinity: false,
      allowNaN: false,
      allowBigInt: false,
      rejectDuplicateMapKeys: true,
      useMaps: false,
    });
    return bytesEqual(encode(value, rfc8949EncodeOptions), bytes) ? { value } : undefined;
  } catch {
    return undefined;
  }
}

const referenceAccepts = (bytes: Uint8Array): boolean => reference(bytes) !== undefined;

const leaf = fc.oneof(
  fc.integer({ min: -(2 ** 40), max: 2 ** 40 }),
  fc.maxSafeInteger(),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.boolean(),
  fc.constant(null),
  fc.string({ unit: 'grapheme', maxLength: 12 }),
  fc.uint8Array({ maxLength: 40 }),
);
const value = fc.letrec((tie) => ({
  node: fc.oneof(
    { depthSize: 'small' },
    leaf,
    fc.array(tie('node'), { maxLength: 5 }),
    fc.dictionary(fc.string({ maxLength: 6 }), tie('node'), { maxKeys: 5 }),
  ),
})).node;

const corruption = fc.record({
  kind: fc.constantFrom('flip', 'insert', 'delete', 'truncate'),
  at: fc.nat(),
  byte: fc.integer({ min: 0, max: 255 }),
});

function corrupt(bytes: Uint8Array, c: { kind: string; at: number; byte: number }): Uint8Array {
  const at = bytes.length === 0 ? 0 : c.at % bytes.length;
  const out = [...bytes];
  if (c.kind === 'flip') out[at] = c.byte;
  else if (c.kind === 'insert') out.splice(at, 0, c.byte);
  else if (c.kind === 'delete') out.splice(at, 1);
  else out.length = at;
  return Uint8Array.from(out);
}

describe('canonical CBOR decoding', () => {
  it('round-trips every encodable value', () => {
    fc.assert(
      fc.property(value, (v) => {
        const bytes = encodeCbor(v);
        const decoded = decodeCbor(bytes, LIMIT);
        expect(decoded.ok).toBe(true);
        if (decoded.ok) expect(bytesEqual(encodeCbor(decoded.value), bytes)).toBe(true);
      }),
      { numRuns: runs(500) },
    );
  });

  it('accepts exactly what the re-encoding rule accepts, with the same values, on corrupted encodings', () => {
    fc.assert(
      fc.property(value, fc.array(corruption, { minLength: 0, maxLength: 3 }), (v, cs) => {
        const bytes = cs.reduce(corrupt, encodeCbor(v));
        const ours = decodeCbor(bytes, LIMIT);
        const theirs = reference(bytes);
        expect(ours.ok).toBe(theirs !== undefined);
        if (ours.ok) expect(ours.value).toStrictEqual(theirs!.value);
      }),
      { numRuns: runs(3000) },
    );
  });

  const refused: ReadonlyArray<readonly [string, string, RegExp]> = [
    ['non-minimal integer head', '1817', /non-minimal/],
    ['non-minimal length head', '5801ff', /non-minimal/],
    ['unsorted map keys', 'a2616201616101', /out of order/],
    ['duplicate map keys', 'a2616101616102', /out of order or repeated/],
    ['indefinite-length array', '9f01ff', /indefinite/],
    ['undefined', 'f7', /simple value/],
    ['a tag', 'c11a514b67b0', /tags/],
    ['invalid UTF-8 text', '62c328', /UTF-8/],
    ['trailing bytes', '0101', /trailing/],
    ['a truncated string', '6461', /truncated/],
    ['float64 where float16 is exact', 'fb3ff8000000000000', /canonical/],
    ['an integral float', 'f93c00', /canonical/],
    ['an integer beyond 2^53', '1b0020000000000000', /2\^53/],
  ];
  for (const [name, hex, reason] of refused) {
    it(`refuses ${name} with a typed reason`, () => {
      const bytes = fromHex(hex)!;
      const result = decodeCbor(bytes, LIMIT);
      expect(result.ok).toBe(false);
      if (!result.ok) {
        expect(result.error.type).toBe('MalformedCbor');
        expect(result.error.reason).toMatch(reason);
      }
      expect(referenceAccepts(bytes)).toBe(false);
    });
  }

  it('returns fresh Uint8Arrays for byte strings, also from a Node Buffer', () => {
    const input = Buffer.from(encodeCbor({ b: Uint8Array.of(1, 2, 3) }));
    const result = decodeCbor(input, LIMIT);
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    const b = (result.value as { b: Uint8Array }).b;
    expect(Object.getPrototypeOf(b)).toBe(Uint8Array.prototype);
    expect(b.buffer.byteLength).toBe(3);
  });

  it('with { views: true }, returns byte strings as views of the input, copying nothing', () => {
    const input = encodeCbor({ a: new Uint8Array(200).fill(7), b: Uint8Array.of(1, 2) });
    const result = decodeCbor(input, LIMIT, { views: true });
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    const { a, b } = result.value as { a: Uint8Array; b: Uint8Array };
    expect(a.buffer).toBe(input.buffer);
    expect(b.buffer).toBe(input.buffer);
    expect(a).toEqual(new Uint8Array(200).fill(7));
    expect(b).toEqual(Uint8Array.of(1, 2));
    // The default copies: changing the input afterwards changes nothing decoded.
    const copied = decodeCbor(input, LIMIT);
    input.fill(0);
    expect(copied.ok && (copied.value as { a: Uint8Array }).a).toEqual(new Uint8Array(200).fill(7));
  });

  it('decodes text on both sides of the short-text path, and refuses invalid UTF-8 on both', () => {
    const texts = ['', 'a', 'x'.repeat(64), 'y'.repeat(65), `${'z'.repeat(63)}é`, 'ünïcode', `${'w'.repeat(70)}😀`];
    for (const text of texts) {
      const result = decodeCbor(encodeCbor(text), LIMIT);
      expect(result.ok && result.value).toBe(text);
    }
    // Text heads (major 3) over a lone continuation byte, short and long.
    for (const length of [3, 80]) {
      const body = new Uint8Array(length).fill(0x61);
      body[length - 1] = 0x80;
      const head = length < 24 ? [0x60 + length] : [0x78, length];
      const result = decodeCbor(Uint8Array.from([...head, ...body]), LIMIT);
      expect(result.ok).toBe(false);
      if (!result.ok) expect(result.error.reason).toMatch(/invalid UTF-8/);
    }
  });

  it('keeps a "__proto__" key as data, never as a prototype', () => {
    const result = decodeCbor(encodeCbor(JSON.parse('{"__proto__": {"polluted": 1}}')), LIMIT);
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    expect(Object.getPrototypeOf(result.value)).toBe(Object.prototype);
    expect(Object.keys(result.value as object)).toEqual(['__proto__']);
  });

  it('refuses input over the size bound before decoding', () => {
    const result = decodeCbor(new Uint8Array(65), 64);
    expect(result.ok).toBe(false);
  });

  it('refuses nesting deeper than any message needs', () => {
    const deep = new Uint8Array(40).fill(0x81);
    const result = decodeCbor(Uint8Array.from([...deep, 0x01]), LIMIT);
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.error.reason).toMatch(/too deep/);
  });

  describe('decodeMapFields', () => {
    const record = fc.dictionary(fc.string({ maxLength: 6 }), value, { maxKeys: 6 });

    it('gives the fields asked for exactly as decoding the whole map does, and steps over the rest', () => {
      fc.assert(
        fc.property(record, fc.array(fc.string({ maxLength: 6 }), { maxLength: 4 }), (map, extra) => {
          const bytes = encodeCbor(map);
          const whole = decodeCbor(bytes, LIMIT);
          expect(whole.ok).toBe(true);
          if (!whole.ok) return;
          const keys = new Set([...Object.keys(map).filter((_, i) => i % 2 === 0), ...extra]);
          const picked = decodeMapFields(bytes, keys);
          expect(picked.ok).toBe(true);
          if (!picked.ok) return;
          const expected = Object.fromEntries(
            Object.entries(whole.value as Record<string, unknown>).filter(([k]) => keys.has(k) && k !== '__proto__'),
          );
          expect(picked.value).toStrictEqual(expected);
        }),
        { numRuns: runs(500) },
      );
    });

    it('refuses what is not one whole map, typed: another item, a truncated value, trailing bytes', () => {
      const keys = new Set(['a']);
      for (const hex of ['01', 'a1616258', 'a161620101', 'a16162c101', 'a1616281', 'a16162fc']) {
        const result = decodeMapFields(fromHex(hex)!, keys);
        expect(result.ok, hex).toBe(false);
        if (!result.ok) expect(result.error.type).toBe('MalformedCbor');
      }
    });

    it('never throws on corrupted records', () => {
      fc.assert(
        fc.property(record, fc.array(corruption, { minLength: 1, maxLength: 3 }), (map, cs) => {
          const bytes = cs.reduce(corrupt, encodeCbor(map));
          const result = decodeMapFields(bytes, new Set(Object.keys(map)));
          expect(typeof result.ok).toBe('boolean');
        }),
        { numRuns: runs(1000) },
      );
    });
  });
});

/**
 * Known answers, byte for byte (RFC 8949 appendix A where it has the case): each boundary of
 * the heads, integers, floats, depth and map keys, and the exact reason of each refusal.
 */
describe('canonical CBOR known answers', () => {
  const decoded = (hex: string) => decodeCbor(fromHex(hex)!, LIMIT);
  const reason = (hex: string) => {
    const result = decoded(hex);
    return result.ok ? 'accepted' : result.error.reason;
  };

  it.each<[string, unknown]>([
    ['17', 23],
    ['1818', 24],
    ['190100', 256],
    ['1a00010000', 65536],
    ['1b0000000100000000', 2 ** 32],
    ['1b001fffffffffffff', Number.MAX_SAFE_INTEGER],
    ['20', -1],
    ['3b001ffffffffffffe', Number.MIN_SAFE_INTEGER],
    ['f93e00', 1.5],
    ['f9c100', -2.5],
    ['f93555', 0.333251953125],
    ['f90400', 2 ** -14],
    ['f90001', 2 ** -24],
    ['f98001', -(2 ** -24)],
    ['f90002', 2 ** -23],
    ['f98200', -(2 ** -15)],
    ['fa3dcccccd', Math.fround(0.1)],
    ['fb3fb999999999999a', 0.1],
    ['f4', false],
    ['f5', true],
    ['f6', null],
    ['a2616201626161' + '02', { b: 1, aa: 2 }],
  ])('decodes %s', (hex, value) => {
    expect(decoded(hex)).toEqual({ ok: true, value });
    // The same bytes are what the encoder writes for that value.
    expect(Buffer.from(encodeCbor(value)).toString('hex')).toBe(hex);
  });

  it.each<[string, string]>([
    ['1817', 'cbor: non-minimal head at byte 2'],
    ['1900ff', 'cbor: non-minimal head at byte 3'],
    ['1b0020000000000000', 'cbor: integer beyond 2^53 at byte 9'],
    ['3b001fffffffffffff', 'cbor: integer beyond 2^53 at byte 9'],
    ['1c', 'cbor: reserved additional info 28 at byte 1'],
    ['9f01ff', 'cbor: indefinite length at byte 1'],
    ['fc', 'cbor: simple value outside false/true/null at byte 1'],
    ['f820', 'cbor: simple value outside false/true/null at byte 1'],
    ['f97e00', 'cbor: NaN or infinite float at byte 3'],
    ['f97c00', 'cbor: NaN or infinite float at byte 3'],
    ['f9fc00', 'cbor: NaN or infinite float at byte 3'],
    ['f93c00', 'cbor: float not in its shortest form (input is not in canonical form) at byte 3'],
    ['0101', 'cbor: 1 trailing bytes at byte 1'],
    ['000000', 'cbor: 2 trailing bytes at byte 1'],
    ['a1', 'cbor: truncated item at byte 1'],
    ['a10101', 'cbor: map key is not text at byte 1'],
    ['c101', 'cbor: tags are not accepted at byte 1'],
    // An array claiming 2^32 items, not there: refused as truncated, nothing allocated for them.
    ['9b0000000100000000', 'cbor: truncated item at byte 9'],
  ])('refuses %s: %s', (hex, why) => {
    expect(reason(hex)).toBe(why);
  });

  it('bounds the input before decoding it, at exactly maxBytes', () => {
    const bytes = encodeCbor('x'.repeat(62));
    expect(bytes.length).toBe(64);
    expect(decodeCbor(bytes, 64)).toEqual({ ok: true, value: 'x'.repeat(62) });
    expect(decodeCbor(bytes, 63)).toEqual({
      ok: false,
      error: { type: 'MalformedCbor', reason: 'cbor: 64 bytes exceeds 63' },
    });
  });

  /** `levels` arrays (or one-key maps) around 0, as the value of key "a" of a map. */
  const nested = (levels: number, head: number[]) =>
    Uint8Array.from([0xa1, 0x61, 0x61, ...Array.from({ length: levels }, () => head).flat(), 0x00]);
  const inArrays = (levels: number) => nested(levels, [0x81]);
  const inMaps = (levels: number) => nested(levels, [0xa1, 0x61, 0x61]);

  it('allows 32 levels of nesting and refuses 33, decoded or stepped over', () => {
    for (const wrap of [inArrays, inMaps]) {
      expect(decodeCbor(wrap(31), LIMIT).ok).toBe(true);
      expect(decodeMapFields(wrap(31), new Set(['a'])).ok).toBe(true);
      expect(decodeMapFields(wrap(31), new Set(['b']))).toEqual({ ok: true, value: {} });
      for (const result of [
        decodeCbor(wrap(32), LIMIT),
        decodeMapFields(wrap(32), new Set(['a'])),
        decodeMapFields(wrap(32), new Set(['b'])),
      ]) {
        expect(result.ok).toBe(false);
        if (!result.ok) expect(result.error.reason).toMatch(/^cbor: nesting too deep at byte \d+$/);
      }
    }
  });

  it('defines a "__proto__" key as an ordinary own property', () => {
    const result = decodeCbor(encodeCbor(JSON.parse('{"__proto__": 1, "a": 2}')), LIMIT);
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    expect(Object.getOwnPropertyDescriptor(result.value, '__proto__')).toEqual({
      value: 1,
      enumerable: true,
      writable: true,
      configurable: true,
    });
  });

  describe('decodeMapFields', () => {
    const fields = (hex: string, keys: string[]) => decodeMapFields(fromHex(hex)!, new Set(keys));

    it('steps over what it does not build by its heads alone, one-byte simple values too', () => {
      // {"a": simple(32), "b": 1}: simple(32) is no value of ours, but a skipped field is not checked.
      expect(fields('a26161f8206162' + '01', ['b'])).toEqual({ ok: true, value: { b: 1 } });
      // {"a": 1.5 as float64, "b": 1}: eight bytes stepped over.
      expect(fields('a26161fb3ff80000000000006162' + '01', ['b'])).toEqual({ ok: true, value: { b: 1 } });
    });

    it.each<[string, string]>([
      ['8101', 'cbor: not a map at byte 1'],
      ['a1', 'cbor: truncated item at byte 1'],
      ['a10101', 'cbor: map key is not text at byte 1'],
      ['a16161fc', 'cbor: reserved additional info 28 at byte 4'],
      ['a16161c101', 'cbor: tags are not accepted at byte 4'],
      ['a1616101' + '00', 'cbor: 1 trailing bytes at byte 4'],
    ])('refuses %s: %s', (hex, why) => {
      expect(fields(hex, ['b'])).toEqual({ ok: false, error: { type: 'MalformedCbor', reason: why } });
    });

    it('never sets a prototype, even when asked for "__proto__"', () => {
      const result = decodeMapFields(encodeCbor(JSON.parse('{"__proto__": {"polluted": 1}}')), new Set(['__proto__']));
      expect(result.ok).toBe(true);
      if (!result.ok) return;
      expect(Object.getPrototypeOf(result.value)).toBe(Object.prototype);
      expect((result.value as { polluted?: number }).polluted).toBeUndefined();
    });

    it('copies byte strings unless asked for views', () => {
      const input = encodeCbor({ a: Uint8Array.of(1, 2, 3) });
      const copied = decodeMapFields(input, new Set(['a']));
      const viewed = decodeMapFields(input, new Set(['a']), { views: true });
      expect(copied.ok && (copied.value['a'] as Uint8Array).buffer).not.toBe(input.buffer);
      expect(viewed.ok && (viewed.value['a'] as Uint8Array).buffer).toBe(input.buffer);
    });
  });

  it('tells plain records from arrays, bytes and null', () => {
    expect(isRecord({})).toBe(true);
    expect(isRecord({ a: 1 })).toBe(true);
    for (const other of [null, undefined, [], new Uint8Array(1), 'x', 1, true]) expect(isRecord(other)).toBe(false);
  });
});
