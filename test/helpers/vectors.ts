/**
 * Conformance vectors live beside the repository (`../shared/vectors/`, or
 * `SOV_VECTORS_DIR`) and are never copied into it. A suite that needs a vector
 * file runs only where it exists and otherwise reports itself skipped, by name.
 */
import { existsSync, readFileSync } from 'node:fs';
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
