/**
 * Padmé size classes and the 0x80-then-zeros marker (src/core/padding.ts): the bounds the
 * PURBs paper gives, exact values worked by hand, and round trips of every awkward plaintext.
 */
import { describe, expect, it } from 'vitest';
import { pad, padme, sizeClass, unpad } from '../../src/core/padding.js';

describe('Padmé size classes', () => {
  it('matches values worked by hand from the definition', () => {
    // L = 100: E = ⌊log2 100⌋ = 6, S = ⌊log2 6⌋ + 1 = 3, so E − S = 3 low bits are cleared (rounding up) → 104.
    const worked: [number, number][] = [
      [0, 0],
      [3, 3],
      [5, 5], // E = 2, S = 2: nothing cleared
      [9, 10], // E = 3, S = 2: one bit
      [100, 104],
      [129, 144], // E = 7, S = 3: four bits — the worst case, 11.6%
      [1000, 1024],
      [1024, 1024],
      [1025, 1088],
      [65_537, 67_584], // E = 16, S = 5: eleven bits
    ];
    for (const [length, size] of worked) expect([length, padme(length)]).toEqual([length, size]);
  });

  it('never shrinks, costs at most 12%, and leaves few classes: O(log log L) bits of length', () => {
    const classes = new Set<number>();
    let worst = 1;
    let shrunk = 0;
    for (let length = 1; length <= 1 << 20; length++) {
      const size = padme(length);
      if (size < length) shrunk++;
      worst = Math.max(worst, size / length);
      classes.add(size);
    }
    expect(shrunk).toBe(0);
    expect(worst).toBeLessThanOrEqual(1.12);
    // A million lengths fall into a few hundred classes (exact lengths would be a million).
    expect(classes.size).toBeLessThan(700);
    // A class's size is its own class: padding twice changes nothing.
    for (const size of classes) expect(padme(size)).toBe(size);
  });

  it('refuses lengths it cannot represent', () => {
    expect(() => padme(-1)).toThrow(RangeError);
    expect(() => padme(1.5)).toThrow(RangeError);
    expect(() => padme(2 ** 31)).toThrow(RangeError);
  });
});

describe('frame size classes: Padmé two bits coarser', () => {
  it('matches values worked by hand', () => {
    const worked: [number, number][] = [
      [0, 32], // the floor: every message under 32 bytes looks alike
      [31, 32],
      [33, 48], // E = 5, S = 3: four bits cleared (steps of 16)
      [100, 128], // E = 6, S = 3: five bits cleared
      [420, 448], // E = 8, S = 4: six bits (steps of 64)
      [1025, 1280], // E = 10, S = 4: eight bits (steps of 256)
      [65_537, 73_728], // E = 16, S = 5: thirteen bits (steps of 8,192)
    ];
    for (const [length, size] of worked) expect([length, sizeClass(length)]).toEqual([length, size]);
  });

  it('leaves four classes per doubling under 64 KiB and eight above, at the overheads the header gives', () => {
    const worst = (from: number, to: number) => {
      let w = 1;
      for (let length = from; length < to; length++) w = Math.max(w, sizeClass(length) / length);
      return w;
    };
    expect(worst(256, 1 << 16)).toBeLessThanOrEqual(1.25);
    expect(worst(1 << 16, 1 << 21)).toBeLessThanOrEqual(1.125);
    expect(worst(32, 256)).toBeLessThanOrEqual(1.5);
    const classes = (from: number, to: number) => {
      const seen = new Set<number>();
      for (let length = from + 1; length <= to; length++) seen.add(sizeClass(length));
      return seen.size;
    };
    expect(classes(1024, 2048)).toBe(4);
    expect(classes(1 << 17, 1 << 18)).toBe(8);
    for (let length = 1; length < 1 << 20; length += 97) {
      expect(sizeClass(length)).toBeGreaterThanOrEqual(padme(length));
      expect(sizeClass(sizeClass(length))).toBe(sizeClass(length));
    }
  });

  it('gives edits of 1 to 2,000 characters at most 12 sizes, for at most 12% more bytes', () => {
    // A frame's message for one edit: a few hundred bytes of sealed event around the text.
    for (const base of [420, 600, 800]) {
      const sizes = new Set<number>();
      let plain = 0;
      let padded = 0;
      for (let chars = 1; chars <= 2000; chars++) {
        const length = pad(new Uint8Array(base + chars)).length;
        sizes.add(length);
        plain += base + chars;
        padded += length;
      }
      expect(sizes.size).toBeLessThanOrEqual(12);
      expect(padded / plain).toBeLessThanOrEqual(1.12);
    }
  });
});

describe('padding and unpadding', () => {
  it('round-trips empty plaintexts, ones ending in zeros or in the marker byte', () => {
    for (const plain of [[], [0], [0, 0, 0], [0x80], [1, 0x80, 0], Array.from({ length: 1000 }, (_, i) => i % 7)]) {
      const bytes = Uint8Array.from(plain);
      const padded = pad(bytes);
      expect(padded.length).toBe(Math.max(bytes.length + 1, sizeClass(bytes.length + 1)));
      const back = unpad(padded);
      expect(back.ok && [...back.value]).toEqual(plain);
    }
  });

  it('notes of 10, 300 and 1,200 characters (the issue’s measurement) no longer differ by their length', () => {
    const note = (n: number, extra: number) => new Uint8Array(n + extra);
    // Lengths within a class give the same size; the size says only which class.
    expect(pad(note(1200, 0)).length).toBe(pad(note(1200, 10)).length);
    expect(pad(note(300, 0)).length).toBe(pad(note(300, 3)).length);
    expect(pad(note(10, 0)).length).toBe(pad(note(10, 1)).length);
  });

  it('stops at the cap, never below the plaintext and its marker', () => {
    expect(pad(new Uint8Array(1000), 1010).length).toBe(1010);
    expect(pad(new Uint8Array(1000), 10).length).toBe(1001);
  });

  it('refuses bytes without the marker', () => {
    expect(unpad(new Uint8Array(0))).toEqual({ ok: false, error: { type: 'BadPadding' } });
    expect(unpad(new Uint8Array(8))).toEqual({ ok: false, error: { type: 'BadPadding' } });
    expect(unpad(Uint8Array.from([1, 2, 3]))).toEqual({ ok: false, error: { type: 'BadPadding' } });
  });
});
