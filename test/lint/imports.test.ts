/**
 * Import structure of src/, checked on every test run (STYLE §14: no import cycles; §1: a
 * pure core). An import cycle — type-only imports included, since they still tie modules'
 * meanings together — is reported with its path. ESLint's core-purity rule forbids platform
 * imports in src/core; this also holds for every nested folder of the core and for the
 * storage layer, which may not import the runtime or the relay.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const SRC = resolve(fileURLToPath(new URL('../../src', import.meta.url)));

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sources(path);
    return path.endsWith('.ts') ? [path] : [];
  });
}

/** Relative imports and re-exports of a module, as paths of .ts files under src/. */
function importsOf(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const out: string[] = [];
  for (const match of text.matchAll(/^(?:import|export)\b[^;]*?\bfrom\s+'(\.{1,2}\/[^']+)'/gms)) {
    out.push(resolve(dirname(file), match[1]!.replace(/\.js$/, '.ts')));
  }
  return out;
}

const files = sources(SRC);
const graph = new Map(files.map((f) => [f, importsOf(f).filter((t) => files.includes(t))]));
const name = (f: string): string => relative(SRC, f);

function cycles(): string[] {
  const found = new Set<string>();
  const done = new Set<string>();
  const stack: string[] = [];
  const visit = (node: string): void => {
    stack.push(node);
    for (const next of graph.get(node) ?? []) {
      const at = stack.indexOf(next);
      if (at >= 0) found.add([...stack.slice(at), next].map(name).join(' → '));
      else if (!done.has(next)) visit(next);
    }
    stack.pop();
    done.add(node);
  };
  for (const file of files) if (!done.has(file)) visit(file);
  return [...found];
}

/** Imports from files under `from` into files under any of `into`, as `a → b` lines. */
function crossing(from: string, into: readonly string[]): string[] {
  const layers = into.map((layer) => join(SRC, layer) + '/');
  return files
    .filter((f) => f.startsWith(join(SRC, from) + '/'))
    .flatMap((f) =>
      graph
        .get(f)!
        .filter((t) => layers.some((l) => t.startsWith(l)))
        .map((t) => `${name(f)} → ${name(t)}`),
    );
}

describe('import structure of src/', () => {
  it('reads the imports it checks', () => {
    expect(graph.get(join(SRC, 'core/local-writes.ts'))).toContain(join(SRC, 'core/chains.ts'));
  });

  it('has no import cycles', () => {
    expect(cycles()).toEqual([]);
  });

  it('keeps the core, at any depth, free of storage, runtime, app, relay and cli modules', () => {
    expect(crossing('core', ['storage', 'runtime', 'app', 'relay', 'cli'])).toEqual([]);
  });

  it('keeps storage free of the runtime, app, relay and cli', () => {
    expect(crossing('storage', ['runtime', 'app', 'relay', 'cli'])).toEqual([]);
  });
});
