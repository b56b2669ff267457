import { describe, expect, it } from 'vitest';
import { concat, toHex, utf8 } from '../../src/core/bytes.js';
import { decodeCbor, encodeCbor } from '../../src/core/cbor.js';
import {
  decodeEvent,
  MAX_VALUE_CHARS,
  signEvent,
  signingPayload,
  verifyEvent,
  ZERO_HASH,
  type EventBody,
} from '../../src/core/event.js';
import { blake3 } from '../../src/core/hash.js';
import type { Signer } from '../../src/core/ports.js';
import { webVerifier } from '../../src/runtime/webcrypto.js';
import { nobleVerifier, seededRandom, unsafeTestingSigner } from '../helpers/deterministic.js';

const alice = unsafeTestingSigner('alice');
const mallory = unsafeTestingSigner('mallory');

const body = (overrides: Partial<Record<keyof EventBody, unknown>> = {}): EventBody =>
  ({
    v: 1,
    domain: 'GENERAL',
    signer: alice.publicKey,
    seq: 1,
    prev: ZERO_HASH,
    table: 'device_profiles',
    row: 'pump-7',
    op: 'put',
    cols: { name: 'Pump 7', active: true },
    hlc: { ms: 1_704_067_200_000, counter: 0 },
    ...overrides,
  }) as EventBody;

/** A SignedEvent byte string around arbitrary body bytes, honestly signed by `signer`. */
async function signedBytes(bodyBytes: Uint8Array, signer: Signer = alice): Promise<Uint8Array> {
  return encodeCbor([bodyBytes, await signer.sign(signingPayload(bodyBytes))]);
}

/** Signs whatever value is given, bypassing the body checks of `signEvent`. */
const signedValue = (value: unknown, signer?: Signer) => signedBytes(encodeCbor(value), signer);

// ---- a minimal CBOR writer that keeps key order and allows long-form heads -------------

type Raw = number | string | Uint8Array | boolean | null | Raw[] | { map: [string, Raw][] } | { nonMinimal: number };

function head(major: number, n: number, long = false): number[] {
  if (n < 24 && !long) return [(major << 5) | n];
  if (n < 256) return [(major << 5) | 24, n];
  if (n < 65536) return [(major << 5) | 25, n >> 8, n & 255];
  if (n < 2 ** 32) return [(major << 5) | 26, (n >>> 24) & 255, (n >> 16) & 255, (n >> 8) & 255, n & 255];
  const b = new Uint8Array(8);
  new DataView(b.buffer).setBigUint64(0, BigInt(n));
  return [(major << 5) | 27, ...b];
}

function raw(value: Raw): Uint8Array {
  if (value === null) return Uint8Array.of(0xf6);
  if (typeof value === 'boolean') return Uint8Array.of(value ? 0xf5 : 0xf4);
  if (typeof value === 'number') return Uint8Array.from(head(0, value));
  if (typeof value === 'string') return concat(Uint8Array.from(head(3, utf8(value).length)), utf8(value));
  if (value instanceof Uint8Array) return concat(Uint8Array.from(head(2, value.length)), value);
  if (Array.isArray(value)) return concat(Uint8Array.from(head(4, value.length)), ...value.map(raw));
  if ('nonMinimal' in value) return Uint8Array.from(head(0, value.nonMinimal, true));
  return concat(Uint8Array.from(head(5, value.map.length)), ...value.map.flatMap(([k, v]) => [raw(k), raw(v)]));
}

/** The body as ordered raw pairs, canonical order unless changed by the caller. */
function rawBody(order?: string[], replace: Record<string, Raw> = {}): Uint8Array {
  const b = body();
  const fields: Record<string, Raw> = {
    v: 1,
    op: 'put',
    row: b.row,
    seq: b.seq,
    hlc: {
      map: [
        ['ms', b.hlc.ms],
        ['counter', b.hlc.counter],
      ],
    },
    cols: {
      map: [
        ['name', 'Pump 7'],
        ['active', true],
      ],
    },
    prev: b.prev,
    table: b.table,
    domain: b.domain,
    signer: b.signer,
    ...replace,
  };
  const keys = order ?? ['v', 'op', 'hlc', 'row', 'seq', 'cols', 'prev', 'table', 'domain', 'signer'];
  return raw({ map: keys.map((k) => [k, fields[k]!]) });
}

describe('signed events', () => {
  it('round-trips: sign, encode, decode, verify', async () => {
    const event = await signEvent(body(), alice);
    const decoded = decodeEvent(event.bytes);
    expect(decoded.ok).toBe(true);
    if (!decoded.ok) return;
    expect(decoded.value.body).toEqual(body());
    expect(toHex(decoded.value.id)).toBe(toHex(blake3(event.bytes)));
    expect(toHex(decoded.value.bodyBytes)).toBe(toHex(event.bodyBytes));
    expect((await verifyEvent(decoded.value, nobleVerifier)).ok).toBe(true);
    // WebCrypto verifies what noble signed: the two Ed25519 implementations agree.
    expect((await verifyEvent(decoded.value, webVerifier())).ok).toBe(true);
  });

  it('the hand-written CBOR writer agrees with the canonical encoder', () => {
    expect(toHex(rawBody())).toBe(toHex(encodeCbor(body())));
  });

  it('is deterministic: the same key and body give the same bytes and id', async () => {
    const a = await signEvent(body(), alice);
    const b = await signEvent(body(), unsafeTestingSigner('alice'));
    expect(toHex(b.bytes)).toBe(toHex(a.bytes));
    expect(toHex(a.id)).toBe(toHex(blake3(encodeCbor([encodeCbor(body()), a.sig]))));
  });

  it('carries a privacy lane outside the public one, and never on a control record', async () => {
    for (const lane of ['trusted', 'local'] as const) {
      const event = await signEvent({ ...body(), lane }, alice);
      const decoded = decodeEvent(event.bytes);
      expect(decoded.ok && decoded.value.body.lane).toBe(lane);
    }
    const control = {
      ...body(),
      domain: 'CONTROL' as const,
      table: 'settings',
      cols: { value: 1 },
      lane: 'trusted' as const,
    };
    await expect(signEvent(control, alice)).rejects.toThrow(/control records travel in the public lane/);
    await expect(signEvent({ ...body(), lane: 'public' as 'trusted' }, alice)).rejects.toThrow(/bad lane/);
  });

  it('refuses to sign an invalid body (a bug in the caller, so it throws)', async () => {
    await expect(signEvent(body({ table: 'nope' }), alice)).rejects.toThrow(
      /refusing to sign invalid body: table nope/,
    );
  });
});

type Vector = {
  readonly name: string;
  readonly bytes: () => Promise<Uint8Array>;
  readonly type: 'MalformedEvent' | 'SignatureInvalid';
  readonly reason?: RegExp;
};

const valid = () => signEvent(body(), alice);

const VECTORS: readonly Vector[] = [
  {
    name: 'forged signature: body names alice, signed by mallory',
    bytes: () => signedValue(body(), mallory),
    type: 'SignatureInvalid',
  },
  {
    name: 'signature of another body',
    bytes: async () => encodeCbor([encodeCbor(body()), (await signEvent(body({ row: 'other' }), alice)).sig]),
    type: 'SignatureInvalid',
  },
  {
    name: 'tampered field: column changed, old signature kept',
    bytes: async () => {
      const event = await valid();
      return encodeCbor([encodeCbor(body({ cols: { name: 'Pump 8', active: true } })), event.sig]);
    },
    type: 'SignatureInvalid',
  },
  {
    name: 'flipped signature bit',
    bytes: async () => {
      const event = await valid();
      const sig = event.sig.slice();
      sig[10]! ^= 1;
      return encodeCbor([event.bodyBytes, sig]);
    },
    type: 'SignatureInvalid',
  },
  {
    name: 'non-canonical body: unsorted map keys (honestly signed)',
    bytes: () => signedBytes(rawBody(['signer', 'v', 'op', 'hlc', 'row', 'seq', 'cols', 'prev', 'table', 'domain'])),
    type: 'MalformedEvent',
    reason: /map keys out of order/,
  },
  {
    name: 'non-canonical body: non-minimal integer for seq (honestly signed)',
    bytes: () => signedBytes(rawBody(undefined, { seq: { nonMinimal: 1 } })),
    type: 'MalformedEvent',
    reason: /non-minimal head/,
  },
  {
    name: 'non-canonical outer pair: long-form byte string header',
    bytes: async () => {
      const event = await valid();
      const n = event.bodyBytes.length; // < 256, so a two-byte length is one byte too long
      return concat(Uint8Array.of(0x82, 0x59, n >> 8, n & 255), event.bodyBytes, Uint8Array.of(0x58, 64), event.sig);
    },
    type: 'MalformedEvent',
    reason: /non-minimal head/,
  },
  { name: 'seq is a string', bytes: () => signedValue(body({ seq: '1' })), type: 'MalformedEvent', reason: /bad seq/ },
  { name: 'seq is zero', bytes: () => signedValue(body({ seq: 0 })), type: 'MalformedEvent', reason: /bad seq/ },
  {
    name: 'seq is fractional',
    bytes: () => signedValue(body({ seq: 1.5 })),
    type: 'MalformedEvent',
    reason: /bad seq/,
  },
  {
    name: 'signer is 31 bytes',
    bytes: () => signedValue(body({ signer: alice.publicKey.subarray(0, 31) })),
    type: 'MalformedEvent',
    reason: /signer/,
  },
  {
    name: 'prev is a string',
    bytes: () => signedValue(body({ prev: 'zero' })),
    type: 'MalformedEvent',
    reason: /prev/,
  },
  { name: 'hlc is an array', bytes: () => signedValue(body({ hlc: [1, 0] })), type: 'MalformedEvent', reason: /hlc/ },
  { name: 'unsupported version', bytes: () => signedValue(body({ v: 2 })), type: 'MalformedEvent', reason: /version/ },
  { name: 'unsupported op', bytes: () => signedValue(body({ op: 'delete' })), type: 'MalformedEvent', reason: /op/ },
  {
    name: 'unknown domain',
    bytes: () => signedValue(body({ domain: 'SECRET' })),
    type: 'MalformedEvent',
    reason: /domain/,
  },
  {
    name: 'column of the wrong type',
    bytes: () => signedValue(body({ cols: { name: 42 } })),
    type: 'MalformedEvent',
    reason: /expects string/,
  },
  {
    name: 'boolean column given a string',
    bytes: () => signedValue(body({ cols: { active: 'yes' } })),
    type: 'MalformedEvent',
    reason: /expects boolean/,
  },
  { name: 'no columns', bytes: () => signedValue(body({ cols: {} })), type: 'MalformedEvent', reason: /cols count/ },
  {
    name: 'cols is a list',
    bytes: () => signedValue(body({ cols: ['x'] })),
    type: 'MalformedEvent',
    reason: /not a map/,
  },
  {
    name: 'unknown table',
    bytes: () => signedValue(body({ table: 'secrets' })),
    type: 'MalformedEvent',
    reason: /table secrets is not in domain/,
  },
  {
    name: 'unknown column',
    bytes: () => signedValue(body({ cols: { owner: 'eve' } })),
    type: 'MalformedEvent',
    reason: /unknown column device_profiles.owner/,
  },
  {
    name: 'table in the wrong domain: keyring under GENERAL',
    bytes: () => signedValue(body({ table: 'keyring', cols: { role: 'admin' } })),
    type: 'MalformedEvent',
    reason: /table keyring is not in domain GENERAL/,
  },
  {
    name: 'row name with forbidden characters',
    bytes: () => signedValue(body({ row: 'a/b' })),
    type: 'MalformedEvent',
    reason: /row name/,
  },
  {
    name: 'oversize value',
    bytes: () => signedValue(body({ cols: { notes: 'x'.repeat(MAX_VALUE_CHARS + 1) } })),
    type: 'MalformedEvent',
    reason: /too long/,
  },
  {
    name: 'oversize event: every column at the value limit',
    bytes: () => {
      const big = 'y'.repeat(MAX_VALUE_CHARS);
      return signedValue(body({ cols: { name: big, location: big, schedule: big, notes: big, active: true } }));
    },
    type: 'MalformedEvent',
    reason: /exceeds/,
  },
  {
    name: 'extra field in the body',
    bytes: () => signedValue({ ...body(), extra: 1 }),
    type: 'MalformedEvent',
    reason: /unexpected fields/,
  },
  {
    name: 'missing field in the body',
    bytes: () => {
      const rest: Record<string, unknown> = { ...body() };
      delete rest['hlc'];
      return signedValue(rest);
    },
    type: 'MalformedEvent',
    reason: /unexpected fields/,
  },
  {
    name: 'signature of 63 bytes',
    bytes: async () => {
      const event = await valid();
      return encodeCbor([event.bodyBytes, event.sig.subarray(0, 63)]);
    },
    type: 'MalformedEvent',
    reason: /\[body, sig\]/,
  },
  {
    name: 'pair with a third element',
    bytes: async () => {
      const event = await valid();
      return encodeCbor([event.bodyBytes, event.sig, 0]);
    },
    type: 'MalformedEvent',
    reason: /\[body, sig\]/,
  },
  {
    name: 'body is not a map',
    bytes: () => signedValue(['v', 1]),
    type: 'MalformedEvent',
    reason: /not a map/,
  },
  {
    name: 'truncated bytes',
    bytes: async () => (await valid()).bytes.subarray(0, -10),
    type: 'MalformedEvent',
  },
  {
    name: 'trailing byte',
    bytes: async () => concat((await valid()).bytes, Uint8Array.of(0)),
    type: 'MalformedEvent',
  },
  {
    name: 'garbage bytes',
    bytes: () => Promise.resolve(seededRandom('garbage').bytes(300)),
    type: 'MalformedEvent',
  },
  { name: 'empty input', bytes: () => Promise.resolve(new Uint8Array(0)), type: 'MalformedEvent' },
  {
    name: 'indefinite-length array',
    bytes: async () => {
      const event = await valid();
      return concat(Uint8Array.of(0x9f), raw(event.bodyBytes), raw(event.sig), Uint8Array.of(0xff));
    },
    type: 'MalformedEvent',
  },
];

describe('event rejection vectors', () => {
  it.each(VECTORS)('$name → $type', async ({ bytes, type, reason }) => {
    const decoded = decodeEvent(await bytes());
    const result = decoded.ok ? await verifyEvent(decoded.value, nobleVerifier) : decoded;
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.error.type).toBe(type);
    if (reason && result.error.type === 'MalformedEvent') expect(result.error.reason).toMatch(reason);
  });

  it('the valid event these vectors start from is accepted', async () => {
    const decoded = decodeEvent((await valid()).bytes);
    expect(decoded.ok && (await verifyEvent(decoded.value, nobleVerifier)).ok).toBe(true);
  });

  it('non-minimal and unsorted encodings really are rejected by the CBOR layer', () => {
    expect(decodeCbor(Uint8Array.of(0x18, 0x01), 10)).toMatchObject({ ok: false, error: { type: 'MalformedCbor' } });
    expect(
      decodeCbor(
        raw({
          map: [
            ['b', 1],
            ['a', 2],
          ],
        }),
        10,
      ),
    ).toMatchObject({ ok: false });
    expect(
      decodeCbor(
        raw({
          map: [
            ['a', 1],
            ['a', 2],
          ],
        }),
        10,
      ),
    ).toMatchObject({ ok: false });
    expect(
      decodeCbor(
        raw({
          map: [
            ['a', 2],
            ['b', 1],
          ],
        }),
        10,
      ),
    ).toEqual({ ok: true, value: { a: 2, b: 1 } });
    expect(decodeCbor(new Uint8Array(11), 10)).toMatchObject({ ok: false, error: { reason: /exceeds/ } });
  });
});

describe('known gaps', () => {
  // isHlc checks ms and counter but not the key set, so a signed body may carry
  // unknown data inside `hlc`. Fix: in src/core/hlc.ts isHlc, also require
  // Object.keys(value).length === 2. Flip to `it` once fixed.
  it('an hlc with an extra field is refused', async () => {
    const decoded = decodeEvent(await signedValue(body({ hlc: { ms: 1, counter: 0, extra: 'x' } })));
    expect(decoded).toMatchObject({ ok: false, error: { type: 'MalformedEvent', reason: 'bad hlc' } });
  });
});
