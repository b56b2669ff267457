/**
 * Which y-axis each series of a chart goes on. Series of the same kind of number share
 * one: counts together, and other values together when their sizes are within a factor
 * of about ten of each other. A mean of ≈10 is not drawn flat against counts of ≈1,000.
 */

/** Distinct colours (Okabe–Ito, without its yellow, which is too light on white), then grey. */
export const SERIES_COLOURS = ['#0072b2', '#d55e00', '#009e73', '#cc79a7', '#e69f00', '#56b4e9', '#000000', '#777777'];

/** Series whose name says it counts rows. */
const COUNTING = /^(n|count|rows)$|^count[_(]/i;

export type Scale = {
  /** The scale's key (uPlot's `scale`). */
  readonly key: string;
  /** The series drawn against it, by index. */
  readonly series: readonly number[];
};

/**
 * The scales for series named `names` whose largest absolute values are `largest`
 * (NaN or undefined for a series with no value), in order of first use.
 */
export function chartScales(names: readonly string[], largest: readonly (number | undefined)[]): Scale[] {
  const scales: { key: string; series: number[]; magnitude: number | undefined }[] = [];
  names.forEach((name, i) => {
    if (COUNTING.test(name)) {
      const counts = scales.find((s) => s.key === 'count');
      if (counts) counts.series.push(i);
      else scales.push({ key: 'count', series: [i], magnitude: undefined });
      return;
    }
    const max = largest[i];
    const magnitude =
      max === undefined || !Number.isFinite(max) || max === 0 ? 0 : Math.floor(Math.log10(Math.abs(max)));
    const near = scales.find((s) => s.magnitude !== undefined && Math.abs(s.magnitude - magnitude) <= 1);
    if (near) near.series.push(i);
    else scales.push({ key: `y${scales.length}`, series: [i], magnitude });
  });
  return scales.map(({ key, series }) => ({ key, series }));
}
