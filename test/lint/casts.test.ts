/**
 * No double casts in src/ (issue: MeshNode as a composition root): `as unknown as` hides a
 * type that does not fit, which is how the headless node once reached MeshNode.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';

const SRC = resolve(fileURLToPath(new URL('../../src', import.meta.url)));
const sources = (dir: string): string[] =>
  readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? sources(path) : /\.(ts|svelte)$/.test(name) ? [path] : [];
  });

it('src/ has no `as unknown as`', () => {
  const found = sources(SRC).flatMap((file) =>
    readFileSync(file, 'utf8')
      .split('\n')
      .flatMap((line, i) => (/\bas unknown as\b/.test(line) ? [`${relative(SRC, file)}:${i + 1}`] : [])),
  );
  expect(found).toEqual([]);
});
