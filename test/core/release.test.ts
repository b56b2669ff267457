/**
 * Release manifests (core/release.ts): one byte form per build, and anything a build would not
 * have written refused with a typed error.
 */
import { describe, expect, it } from 'vitest';
import {
  decodeRelease,
  encodeRelease,
  isReleased,
  RELEASE_FORMAT,
  type ReleaseManifest,
} from '../../src/core/release.js';

const H = 'ab'.repeat(32);
const manifest: ReleaseManifest = {
  format: RELEASE_FORMAT,
  version: '0.1.0',
  files: { '/sw.js': H, '/assets/a-1.js': H, '/index.html': H },
};

describe('release manifests', () => {
  it('are written with sorted keys and no whitespace, and read back', () => {
    const text = encodeRelease(manifest);
    expect(text).toBe(
      `{"files":{"/assets/a-1.js":"${H}","/index.html":"${H}","/sw.js":"${H}"},"format":"sov-release/1","version":"0.1.0"}`,
    );
    expect(decodeRelease(text)).toEqual({ ok: true, value: manifest });
  });

  it('leave out source maps and the manifest itself', () => {
    expect(isReleased('/assets/a-1.js')).toBe(true);
    expect(isReleased('/assets/a-1.js.map')).toBe(false);
    expect(isReleased('/release.json')).toBe(false);
  });

  it('refuse anything a build would not have written', () => {
    const good = encodeRelease(manifest);
    const cases: [string, string][] = [
      ['not JSON', good.slice(0, -1)],
      ['not an object', '"release"'],
      ['format', good.replace(RELEASE_FORMAT, 'sov-release/2')],
      ['version', good.replace('0.1.0', '0.1.0 beta')],
      ['no files', encodeRelease({ ...manifest, files: {} })],
      ['path', encodeRelease({ ...manifest, files: { '/../etc/passwd': H } })],
      ['path', encodeRelease({ ...manifest, files: { 'index.html': H } })],
      ['path', encodeRelease({ ...manifest, files: { '/a.js.map': H } })],
      ['hash', encodeRelease({ ...manifest, files: { '/index.html': H.toUpperCase() } })],
      ['hash', encodeRelease({ ...manifest, files: { '/index.html': H.slice(2) } })],
      ['sorted keys', JSON.stringify({ format: RELEASE_FORMAT, version: '0.1.0', files: manifest.files })],
      ['sorted keys', JSON.stringify(JSON.parse(good), null, 1)],
    ];
    for (const [what, text] of cases) {
      const decoded = decodeRelease(text);
      expect(decoded.ok, what).toBe(false);
      if (!decoded.ok) expect(decoded.error.type).toBe('MalformedRelease');
    }
  });
});
