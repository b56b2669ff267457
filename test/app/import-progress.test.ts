/**
 * What an import's progress line says, phase by phase, and when it dares an estimate.
 */
import { describe, expect, it } from 'vitest';
import { fraction, progressText, secondsLeft } from '../../src/app/import-progress.ts';

const file = (read: number, size = 26_000_000) => ({ read, size });

describe('import progress', () => {
  it('reading a file: bytes of its size, no rows yet, and an estimate once under way', () => {
    const p = { rows: 0, phase: 'reading', of: undefined, file: file(6_500_000), since: 0 };
    expect(fraction(p)).toBe(0.25);
    // A quarter in 4 s: 12 s left.
    expect(secondsLeft(p, 4000)).toBe(12);
    expect(progressText(p, 4000)).toBe('Reading the file to find its columns · 6.5 MB of 26 MB · about 12 s left');
  });

  it('writing a file: bytes and rows; minutes once the estimate passes a minute', () => {
    const p = { rows: 120_000, phase: 'writing', of: undefined, file: file(2_600_000), since: 0 };
    expect(secondsLeft(p, 10_000)).toBe(90);
    expect(progressText(p, 10_000)).toMatch(
      /^Writing · 2\.6 MB of 26 MB · 120[,.\u202f\u00a0]000 rows · about 2 min left$/,
    );
  });

  it('a sample: rows of the rows asked for', () => {
    const p = { rows: 5000, phase: 'writing', of: 20_000, file: undefined, since: 0 };
    expect(fraction(p)).toBe(0.25);
    expect(progressText(p, 500)).toMatch(/^Writing · 5[,.\u202f\u00a0]000 of 20[,.\u202f\u00a0]000 rows$/);
  });

  it('no estimate too early, at the very start, when done, or while storing', () => {
    expect(secondsLeft({ rows: 0, phase: 'reading', of: undefined, file: file(13_000_000), since: 0 }, 999)).toBe(
      undefined,
    );
    expect(secondsLeft({ rows: 0, phase: 'reading', of: undefined, file: file(100_000), since: 0 }, 60_000)).toBe(
      undefined,
    );
    expect(secondsLeft({ rows: 0, phase: 'reading', of: undefined, file: file(26_000_000), since: 0 }, 60_000)).toBe(
      undefined,
    );
    const storing = { rows: 500, phase: 'storing', of: undefined, file: file(26_000_000), since: 0 };
    expect(fraction(storing)).toBe(undefined);
    expect(progressText(storing, 60_000)).toBe('Storing · 500 rows');
  });

  it('an empty file or nothing to measure by: no fraction', () => {
    expect(fraction({ rows: 0, phase: 'reading', of: undefined, file: file(0, 0), since: 0 })).toBe(undefined);
    expect(fraction({ rows: 3, phase: 'writing', of: undefined, file: undefined, since: 0 })).toBe(undefined);
  });
});
