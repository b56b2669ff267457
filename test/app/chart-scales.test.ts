/**
 * Which axis each series of a chart is drawn against.
 */
import { describe, expect, it } from 'vitest';
import { chartScales, SERIES_COLOURS } from '../../src/app/chart-scales.ts';

describe('chartScales', () => {
  it('puts a mean of about 10 and a count of about 1,000 on two axes', () => {
    expect(chartScales(['mean', 'n'], [12.5, 1020])).toEqual([
      { key: 'y0', series: [0] },
      { key: 'count', series: [1] },
    ]);
  });

  it('keeps values of like size on one axis, and counts together', () => {
    expect(chartScales(['lo', 'hi', 'count(*)', 'rows'], [8, 31, 600, 600])).toEqual([
      { key: 'y0', series: [0, 1] },
      { key: 'count', series: [2, 3] },
    ]);
  });

  it('gives values a hundred times apart an axis each, negative ones by their size', () => {
    expect(chartScales(['pressure', 'temperature', 'depth'], [101_325, -12, 0.004])).toEqual([
      { key: 'y0', series: [0] },
      { key: 'y1', series: [1] },
      { key: 'y2', series: [2] },
    ]);
  });

  it('draws a series with no value, or only zeros, with values near 1', () => {
    expect(chartScales(['a', 'b', 'c'], [undefined, 0, 3])).toEqual([{ key: 'y0', series: [0, 1, 2] }]);
    expect(chartScales(['a', 'b'], [Number.NaN, 40])).toEqual([{ key: 'y0', series: [0, 1] }]);
    expect(chartScales(['a', 'b'], [Number.NaN, 400])).toEqual([
      { key: 'y0', series: [0] },
      { key: 'y1', series: [1] },
    ]);
  });

  it('has a distinct colour for each of eight series', () => {
    expect(new Set(SERIES_COLOURS).size).toBe(8);
  });
});
