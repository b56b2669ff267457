/**
 * How many cases a property test runs: `n` normally, scaled by SOV_PROPERTY_SCALE where a
 * whole suite is rerun many times (mutation testing runs it per mutant, at 0.1), never below 10.
 */
export function runs(n: number): number {
  const scale = Number(process.env['SOV_PROPERTY_SCALE'] ?? 1);
  return Math.max(10, Math.round(n * (Number.isFinite(scale) && scale > 0 ? scale : 1)));
}
