/**
 * What the service worker may cache (runtime/release-gate.ts): only a file the release
 * manifest names with its exact SHA-256; nothing when the manifest is missing or malformed.
 */
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { encodeRelease, RELEASE_FORMAT } from '../../src/core/release.js';
import { releaseGate } from '../../src/runtime/release-gate.js';

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');
const BASE = 'https://app.example/';
const MANIFEST = encodeRelease({
  format: RELEASE_FORMAT,
  version: '1.0.0',
  files: { '/index.html': sha256('<!doctype html>'), '/assets/app-1.js': sha256('run()') },
});

/** A host answering only its manifest (`manifest` undefined: 404); counts the manifest's fetches. */
function host(manifest: string | undefined) {
  const asked = { n: 0 };
  const fetchImpl: typeof fetch = () => {
    asked.n++;
    return Promise.resolve(manifest === undefined ? new Response('', { status: 404 }) : new Response(manifest));
  };
  return { fetchImpl, asked };
}

const cache = (gate: ReturnType<typeof releaseGate>, path: string, body: string, status = 200) =>
  gate.cacheWillUpdate({
    request: new Request(`${BASE}${path.slice(1)}?__WB_REVISION__=abc`),
    response: new Response(body, { status }),
  });

describe('the release gate of the service worker', () => {
  it('caches a file whose bytes the manifest names, and reads the manifest once', async () => {
    const { fetchImpl, asked } = host(MANIFEST);
    const gate = releaseGate(BASE, fetchImpl);
    expect(await (await cache(gate, '/index.html', '<!doctype html>'))?.text()).toBe('<!doctype html>');
    expect(await cache(gate, '/assets/app-1.js', 'run()')).not.toBeNull();
    expect(asked.n).toBe(1);
  });

  it('refuses a file that differs, one the manifest does not name, and an error answer', async () => {
    const gate = releaseGate(BASE, host(MANIFEST).fetchImpl);
    expect(await cache(gate, '/assets/app-1.js', 'steal(keys)')).toBeNull();
    expect(await cache(gate, '/assets/extra.js', 'run()')).toBeNull();
    expect(await cache(gate, '/index.html', '<!doctype html>', 500)).toBeNull();
  });

  it('caches nothing without a manifest, or with a malformed one', async () => {
    for (const manifest of [undefined, `${MANIFEST}\n`, '{}']) {
      expect(await cache(releaseGate(BASE, host(manifest).fetchImpl), '/index.html', '<!doctype html>')).toBeNull();
    }
    const down: typeof fetch = () => Promise.reject(new TypeError('Failed to fetch'));
    expect(await cache(releaseGate(BASE, down), '/index.html', '<!doctype html>')).toBeNull();
  });
});
