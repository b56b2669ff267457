/**
 * Conformance vectors live beside the repository (`../shared/vectors/`, or
 * `SOV_VECTORS_DIR`) and are never copied into it. A suite that needs a vector
 * file runs only where it exists. Where it does not, the suite reports itself
 * skipped, by name — except under CI (`CI=true`), which has the vectors: there a
 * missing vector file is a failing test, never a quiet pass.
 */
import { existsSync, readFileSync } from 'node:fs';
import { describe, it } from 'vitest';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const REPO = resolve(fileURLToPath(new URL('../..', import.meta.url)));

export const VECTORS_DIR = process.env['SOV_VECTORS_DIR'] ?? join(REPO, '..', 'shared', 'vectors');

export function vectorPath(relative: string): string {
  return join(VECTORS_DIR, relative);
}

export function hasVector(relative: string): boolean {
  return existsSync(vectorPath(relative));
}

export function readJsonVector(relative: string): unknown {
  return JSON.parse(readFileSync(vectorPath(relative), 'utf8'));
}

/** The suite title, marked so a skipped run says which vector file was missing. */
export function vectorSuite(title: string, relative: string): string {
  return hasVector(relative) ? title : `${title} [skipped: ${relative} not found in ${VECTORS_DIR}]`;
}

const inCi = (): boolean => process.env['CI'] === 'true';

/**
 * `describe(title, suite)` when the vector file or folder exists; otherwise a skipped
 * suite saying what is missing, or under CI one failing test saying so.
 */
export function describeVectors(title: string, relative: string, suite: () => void): void {
  if (hasVector(relative)) {
    describe(title, suite);
  } else if (inCi()) {
    describe(title, () => {
      it(`needs ${relative}`, () => {
        throw new Error(`vectors: ${relative} is missing from ${VECTORS_DIR}; CI must run every vector test`);
      });
    });
  } else {
    describe.skip(vectorSuite(title, relative), suite);
  }
}
