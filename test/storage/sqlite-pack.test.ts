/**
 * The SQLite store's record encoder (sqlite-pack.ts) against what the store wrote
 * before it: cborg's deterministic CBOR of the value with its undefined fields left
 * out. Byte for byte, or files written before and after would not read alike.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { encodeCbor } from '../../src/core/cbor.js';
import type { EventBody } from '../../src/core/event.js';
import { pack } from '../../src/storage/sqlite-pack.js';
import { runs } from '../helpers/runs.js';

/** The store's encoding before sqlite-pack.ts, verbatim. */
function stripUndefined(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(stripUndefined);
  if (value === null || typeof value !== 'object' || value instanceof Uint8Array) return value;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) if (v !== undefined) out[k] = stripUndefined(v);
  return out;
}
const reference = (value: unknown): Uint8Array => encodeCbor(stripUndefined(value));

const hex = (bytes: Uint8Array): string => Buffer.from(bytes).toString('hex');

const leaf = fc.oneof(
  fc.integer({ min: -(2 ** 31), max: 2 ** 31 }),
  fc.oneof(fc.maxSafeInteger(), fc.constant(Number.MAX_SAFE_INTEGER), fc.constant(Number.MIN_SAFE_INTEGER)),
  fc.constantFrom(23, 24, 255, 256, 65_535, 65_536, 2 ** 32 - 1, 2 ** 32, -24, -25, -256, -257, -(2 ** 32) - 1),
  fc.double(),
  fc.constantFrom(-0, 2 ** 53, 2 ** 60, -(2 ** 60), 0.5, NaN, Infinity),
  fc.bigInt({ min: -(2n ** 63n), max: 2n ** 64n - 1n }),
  fc.boolean(),
  fc.constant(null),
  fc.constant(undefined),
  fc.string({ unit: 'grapheme', maxLength: 30 }),
  // Lone surrogates included: both sides write U+FFFD for them.
  fc.string({ unit: 'binary', maxLength: 30 }),
  fc.string({ minLength: 250, maxLength: 300 }),
  fc.uint8Array({ maxLength: 40 }),
  fc.uint8Array({ minLength: 250, maxLength: 300 }).map((b) => Buffer.from(b)),
);

const key = fc.oneof(
  fc.constantFrom('a', 'b', 'aa', 'op', 'seq', 'body', 'lane', 'rowKey', 'sealed', 'outerId', 'eventId', '', '0', '10'),
  fc.string({ maxLength: 8 }),
  fc.string({ unit: 'binary', maxLength: 6 }),
  fc.string({ minLength: 23, maxLength: 26 }),
  fc.string({ minLength: 60, maxLength: 70 }),
);

const value = fc.letrec((tie) => ({
  node: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    leaf,
    fc.array(tie('node'), { maxLength: 6 }),
    fc.dictionary(key, tie('node'), { maxKeys: 8 }),
  ),
})).node;

describe('sqlite-pack', () => {
  it('writes what cborg writes for the value without its undefined fields (3,000 runs)', () => {
    fc.assert(
      fc.property(value, (v) => {
        let expected: string;
        try {
          expected = hex(reference(v));
        } catch (e) {
          // What cborg refuses is refused here too, by cborg.
          expect(() => pack(v)).toThrow((e as Error).message);
          return;
        }
        expect(hex(pack(v))).toBe(expected);
      }),
      { numRuns: runs(3_000) },
    );
  });

  it('agrees on long items, integer and length heads at every width', () => {
    const samples: unknown[] = [
      'x'.repeat(23),
      'x'.repeat(24),
      'é'.repeat(200),
      'y'.repeat(70_000),
      new Uint8Array(65_536).fill(7),
      Array.from({ length: 300 }, (_, i) => i * 1_000_003),
      Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`k${(i * 7) % 40}`, i])),
      { ['z'.repeat(30)]: 1, ['a'.repeat(31)]: 2, é: 3, e: 4, f: 5, [`\u{1F600}`]: 6, '\uE000': 7 },
      new Uint16Array([1, 2, 3]),
      new Map([['a', 1]]),
      [undefined, 1],
      { a: undefined, b: [{ c: undefined, d: 1 }] },
      Number.MAX_SAFE_INTEGER,
      -Number.MAX_SAFE_INTEGER,
      2 ** 32 + 5,
      -(2 ** 40),
    ];
    for (const sample of samples) expect(hex(pack(sample))).toBe(hex(reference(sample)));
  });

  it('writes a known value as the bytes given for it, once met inside the record', () => {
    const body: EventBody = {
      v: 1,
      domain: 'GENERAL',
      signer: new Uint8Array(32).fill(1),
      seq: 3,
      prev: new Uint8Array(32).fill(2),
      table: 'device_profiles',
      row: 'r',
      op: 'put',
      cols: { name: 'x', active: true },
      hlc: { ms: 1_704_067_200_000, counter: 2 },
    };
    const entry = { outerId: 'o', domain: 'GENERAL', sealed: new Uint8Array([9]), body, lane: undefined };
    const bodyBytes = encodeCbor(body);
    expect(hex(pack(entry, { value: body, bytes: bodyBytes }))).toBe(hex(reference(entry)));
    // The bytes are taken as given: the caller vouches that they encode the value.
    const marker = new Uint8Array([0xf6]);
    expect(hex(pack(entry, { value: body, bytes: marker }))).toBe(hex(reference({ ...entry, body: null })));
  });
});
