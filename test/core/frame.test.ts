/**
 * Frames refused before a byte is decrypted (src/core/frame.ts): one table of malformed frames
 * and headers, each naming the reason a receiver shows; the header checks at the edges of their
 * windows; and the replay guard's memory, bounded by count and by age.
 */
import { describe, expect, it } from 'vitest';
import { concat, toHex } from '../../src/core/bytes.js';
import { encodeCbor } from '../../src/core/cbor.js';
import {
  decodeFrame,
  checkHeader,
  encodeFrame,
  encodeHeader,
  MAX_FRAME_BYTES,
  MAX_FRAME_SKEW_MS,
  ReplayGuard,
  type FrameHeader,
} from '../../src/core/frame.js';

const b = (n: number, fill: number) => new Uint8Array(n).fill(fill);
const HEADER: FrameHeader = {
  v: 1,
  topic: b(32, 1),
  from: b(32, 2),
  to: b(32, 3),
  kid: b(32, 4),
  enc: b(32, 5),
  rid: b(16, 6),
  ts: 1_700_000_000_000,
};
const CT = b(28, 7); // a nonce and a tag around an empty message: the shortest ciphertext there is

const headerWith = (changes: Record<string, unknown>, drop?: string) =>
  encodeCbor(Object.fromEntries(Object.entries({ ...HEADER, ...changes }).filter(([k]) => k !== drop)));

describe('decodeFrame', () => {
  it('splits a well-formed frame into its header, exact header bytes and ciphertext', () => {
    const headerBytes = encodeHeader(HEADER);
    const decoded = decodeFrame(encodeFrame(headerBytes, CT));
    expect(decoded.ok).toBe(true);
    if (!decoded.ok) return;
    const { header, headerBytes: exact, ct } = decoded.value;
    expect(Object.entries(header).map(([k, v]) => [k, v instanceof Uint8Array ? toHex(v) : v])).toEqual(
      Object.entries(HEADER).map(([k, v]) => [k, v instanceof Uint8Array ? toHex(v) : v]),
    );
    expect(toHex(exact)).toBe(toHex(headerBytes));
    expect(toHex(ct)).toBe(toHex(CT));
  });

  it('accepts a frame of exactly the largest size', () => {
    const headerBytes = encodeHeader(HEADER);
    const overhead = encodeFrame(headerBytes, b(70_000, 0)).length - 70_000;
    // The ciphertext's own length prefix is 5 bytes from 65,536 on, the same as for 70,000.
    const frame = encodeFrame(headerBytes, b(MAX_FRAME_BYTES - overhead, 0));
    expect(frame.length).toBe(MAX_FRAME_BYTES);
    expect(decodeFrame(frame).ok).toBe(true);
  });

  const frameRefusals: [string, Uint8Array, string | RegExp][] = [
    ['one byte over the limit', b(MAX_FRAME_BYTES + 1, 0), `${MAX_FRAME_BYTES + 1} bytes exceeds ${MAX_FRAME_BYTES}`],
    ['not CBOR', Uint8Array.of(0xff), /^cbor: /],
    ['a map, not a pair', encodeCbor({ h: encodeHeader(HEADER), ct: CT }), 'not a [header, ciphertext] pair'],
    ['a triple', encodeCbor([encodeHeader(HEADER), CT, CT]), 'not a [header, ciphertext] pair'],
    ['a single', encodeCbor([encodeHeader(HEADER)]), 'not a [header, ciphertext] pair'],
    ['a header that is not bytes', encodeCbor([HEADER, CT]), 'not a [header, ciphertext] pair'],
    ['a ciphertext that is not bytes', encodeCbor([encodeHeader(HEADER), 'ct']), 'not a [header, ciphertext] pair'],
    [
      'a ciphertext one byte short',
      encodeFrame(encodeHeader(HEADER), b(27, 7)),
      'ciphertext shorter than nonce and tag',
    ],
    ['a header that is not CBOR', encodeFrame(Uint8Array.of(0xff), CT), /^cbor: /],
    ['a header that is not a map', encodeFrame(encodeCbor([1, 2]), CT), 'header fields'],
    ['a header with an extra field', encodeFrame(headerWith({ x: 1 }), CT), 'header fields'],
    ['a header of version 3', encodeFrame(headerWith({ v: 3 }), CT), 'header version 3'],
    ['a header without a number for its version', encodeFrame(headerWith({ v: '2' }), CT), 'header version string'],
    ...(['topic', 'from', 'to', 'kid', 'enc', 'rid', 'ts', 'v'] as const).map((f): [string, Uint8Array, string] => [
      `a header without ${f}`,
      encodeFrame(headerWith({}, f), CT),
      'header fields',
    ]),
    ...(['topic', 'from', 'to', 'kid', 'enc'] as const).flatMap((f): [string, Uint8Array, string][] => [
      [`a ${f} of 31 bytes`, encodeFrame(headerWith({ [f]: b(31, 1) }), CT), 'header sizes'],
      [`a ${f} that is text`, encodeFrame(headerWith({ [f]: 'x'.repeat(32) }), CT), 'header sizes'],
    ]),
    ['a rid of 15 bytes', encodeFrame(headerWith({ rid: b(15, 6) }), CT), 'header rid or ts'],
    ['a ts that is text', encodeFrame(headerWith({ ts: '1' }), CT), 'header rid or ts'],
    ['a fractional ts', encodeFrame(headerWith({ ts: 1.5 }), CT), 'header rid or ts'],
    ['a ts beyond safe integers', encodeFrame(headerWith({ ts: 2 ** 53 }), CT), 'header rid or ts'],
    ['a negative ts', encodeFrame(headerWith({ ts: -1 }), CT), 'header rid or ts'],
  ];

  it.each(frameRefusals)('refuses %s as MalformedFrame with its reason', (_name, frame, reason) => {
    const decoded = decodeFrame(frame);
    expect(decoded.ok).toBe(false);
    if (decoded.ok) return;
    expect(decoded.error.type).toBe('MalformedFrame');
    if (decoded.error.type !== 'MalformedFrame') return;
    if (typeof reason === 'string') expect(decoded.error.reason).toBe(reason);
    else expect(decoded.error.reason).toMatch(reason);
  });

  it('accepts a ts of zero', () => {
    expect(decodeFrame(encodeFrame(headerWith({ ts: 0 }), CT)).ok).toBe(true);
  });
});

describe('checkHeader', () => {
  const ctx = {
    topic: HEADER.topic,
    self: HEADER.to,
    relayFrom: HEADER.from,
    now: HEADER.ts,
    maxAgeMs: 10_000,
  };
  const refusal = (header: FrameHeader, over: Partial<typeof ctx> = {}) => {
    const r = checkHeader(header, { ...ctx, ...over });
    return r.ok ? 'accepted' : r.error;
  };

  it('accepts a header for our group, to us, from the sender the relay authenticated', () => {
    expect(refusal(HEADER)).toBe('accepted');
  });

  it('names each addressing fault, checked in the order group, recipient, sender', () => {
    expect(refusal({ ...HEADER, topic: b(32, 9) })).toEqual({ type: 'WrongGroup' });
    expect(refusal({ ...HEADER, to: b(32, 9) })).toEqual({ type: 'Misaddressed' });
    expect(refusal({ ...HEADER, from: b(32, 9) })).toEqual({ type: 'SenderMismatch' });
    expect(refusal({ ...HEADER, topic: b(32, 9), to: b(32, 9), from: b(32, 9) })).toEqual({ type: 'WrongGroup' });
    expect(refusal({ ...HEADER, to: b(32, 9), from: b(32, 9) })).toEqual({ type: 'Misaddressed' });
  });

  it('accepts exactly the oldest age and the largest skew, and refuses one millisecond beyond either', () => {
    expect(refusal(HEADER, { now: HEADER.ts + 10_000 })).toBe('accepted');
    expect(refusal(HEADER, { now: HEADER.ts + 10_001 })).toEqual({ type: 'StaleRequest', ageMs: 10_001 });
    expect(refusal(HEADER, { now: HEADER.ts - MAX_FRAME_SKEW_MS })).toBe('accepted');
    expect(refusal(HEADER, { now: HEADER.ts - MAX_FRAME_SKEW_MS - 1 })).toEqual({
      type: 'StaleRequest',
      ageMs: -MAX_FRAME_SKEW_MS - 1,
    });
  });
});

describe('ReplayGuard (frames)', () => {
  const rid = (n: number) => concat(b(15, 0), Uint8Array.of(n));

  it('remembers each accepted request id once', () => {
    const g = new ReplayGuard(10, 1000);
    expect(g.has(rid(1))).toBe(false);
    expect(g.remember(rid(1), 0, 0)).toBe(true);
    expect(g.has(rid(1))).toBe(true);
    expect(g.remember(rid(1), 0, 0)).toBe(false);
    expect(g.size).toBe(1);
  });

  it('keeps an id exactly as long as its retention, then forgets it, oldest first', () => {
    const g = new ReplayGuard(10, 1000);
    g.remember(rid(1), 0, 0);
    g.remember(rid(2), 500, 500);
    g.remember(rid(3), 1000, 1000);
    expect(g.entries().map(([, ts]) => ts)).toEqual([0, 500, 1000]);
    g.remember(rid(4), 1001, 1001);
    expect(g.has(rid(1))).toBe(false);
    expect(g.has(rid(2))).toBe(true);
    expect(g.size).toBe(3);
  });

  it('holds at most its capacity, forgetting the oldest ids first', () => {
    const g = new ReplayGuard(3, 1_000_000);
    for (let i = 1; i <= 3; i++) g.remember(rid(i), i, i);
    expect(g.size).toBe(3);
    g.remember(rid(4), 4, 4);
    expect(g.size).toBe(3);
    expect(g.has(rid(1))).toBe(false);
    expect(g.has(rid(4))).toBe(true);
  });

  it('restores remembered ids from storage, dropping those already past retention', () => {
    const g = new ReplayGuard(10, 1000);
    const kept = new ReplayGuard(10, 1000);
    kept.remember(rid(1), 0, 0);
    kept.remember(rid(2), 900, 900);
    g.load(kept.entries(), 1500);
    expect(g.has(rid(1))).toBe(false);
    expect(g.has(rid(2))).toBe(true);
    expect(g.remember(rid(2), 900, 1500)).toBe(false);
  });

  it('by default keeps an id for the widest window a frame can be accepted in', () => {
    const g = new ReplayGuard();
    g.remember(rid(1), 0, 0);
    const widest = 14 * 24 * 60 * 60 * 1000 + MAX_FRAME_SKEW_MS;
    g.remember(rid(2), widest, widest);
    expect(g.has(rid(1))).toBe(true);
    g.remember(rid(3), widest + 1, widest + 1);
    expect(g.has(rid(1))).toBe(false);
  });
});
