/**
 * What an import's progress says: the bytes of the file read of its size in this phase (a
 * CSV file is read once to infer its columns and once to write them), the rows written, and
 * an estimate of the time left in the phase once there is enough to go on.
 */
import { formatNumber } from './locale.ts';

type Progress = {
  readonly rows: number;
  readonly phase: string;
  readonly of: number | undefined;
  readonly file: { readonly read: number; readonly size: number } | undefined;
  readonly since: number;
};

const PHASE: Readonly<Record<string, string>> = {
  reading: 'Reading the file to find its columns',
  writing: 'Writing',
  storing: 'Storing',
};

/** Below this much done, or this soon, an estimate would only be noise. */
const MIN_FRACTION = 0.02;
const MIN_ELAPSED_MS = 1000;

export function megabytes(bytes: number): string {
  return `${(bytes / 1e6).toFixed(bytes < 10e6 ? 1 : 0)} MB`;
}

/** How far the phase is, 0 to 1, or undefined when not known. */
export function fraction(p: Progress): number | undefined {
  if (p.phase === 'storing') return undefined;
  if (p.file && p.file.size > 0) return Math.min(1, p.file.read / p.file.size);
  if (p.of) return Math.min(1, p.rows / p.of);
  return undefined;
}

/** Seconds left in the phase, at the pace so far, or undefined while too early to say. */
export function secondsLeft(p: Progress, now: number): number | undefined {
  const done = fraction(p);
  const elapsed = now - p.since;
  if (done === undefined || done < MIN_FRACTION || done >= 1 || elapsed < MIN_ELAPSED_MS) return undefined;
  return Math.ceil(((elapsed / done) * (1 - done)) / 1000);
}

export function progressText(p: Progress, now: number): string {
  const parts = [PHASE[p.phase] ?? p.phase];
  if (p.file && p.phase !== 'storing') parts.push(`${megabytes(p.file.read)} of ${megabytes(p.file.size)}`);
  if (p.phase !== 'reading') parts.push(`${formatNumber(p.rows)}${p.of ? ` of ${formatNumber(p.of)}` : ''} rows`);
  const left = secondsLeft(p, now);
  if (left !== undefined) parts.push(left < 60 ? `about ${left} s left` : `about ${Math.ceil(left / 60)} min left`);
  return parts.join(' · ');
}
