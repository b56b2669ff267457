/**
 * Checking the code a page was served (runtime/code-check.ts) against its release manifest and
 * the mesh's signed releases, over a stand-in host: every file matches, a file differs or is
 * missing, no manifest, a malformed one, the host unreachable.
 */
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { encodeRelease, RELEASE_FORMAT } from '../../src/core/release.js';
import { checkServedCode, codeStatus } from '../../src/runtime/code-check.js';

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');
const FILES: Record<string, string> = { '/index.html': '<!doctype html>', '/assets/app-1.js': 'console.log(1)' };
const MANIFEST = encodeRelease({
  format: RELEASE_FORMAT,
  version: '1.2.3',
  files: Object.fromEntries(Object.entries(FILES).map(([p, t]) => [p, sha256(t)])),
});
const DIGEST = sha256(MANIFEST);

/** A host at https://app.example/ serving `files` (path → text); `down` fails every request. */
function host(files: Record<string, string>, down = false): typeof fetch {
  return (input) => {
    if (down) return Promise.reject(new TypeError('Failed to fetch'));
    const { pathname } = new URL(input instanceof Request ? input.url : input);
    const body = files[pathname];
    return Promise.resolve(body === undefined ? new Response('', { status: 404 }) : new Response(body));
  };
}

const BASE = 'https://app.example/';

describe('the code a page was served', () => {
  it('matches its release when every file does, and is signed once the mesh signed that digest', async () => {
    const served = await checkServedCode(BASE, host({ ...FILES, '/release.json': MANIFEST }));
    expect(served).toEqual({ state: 'matches', version: '1.2.3', digest: DIGEST });
    expect(codeStatus(served, [])).toMatchObject({ state: 'unsigned', digest: DIGEST });
    expect(codeStatus(served, [{ digest: 'cd'.repeat(32), version: '1.2.3', by: 'admin' }]).state).toBe('unsigned');
    expect(codeStatus(served, [{ digest: DIGEST, version: '1.2.3', by: 'admin' }])).toEqual({
      state: 'signed',
      version: '1.2.3',
      digest: DIGEST,
      signedBy: 'admin',
    });
  });

  it('names the files that differ from the manifest or are missing, and is never signed then', async () => {
    const altered = { ...FILES, '/assets/app-1.js': 'steal(keys)', '/release.json': MANIFEST };
    const served = await checkServedCode(BASE, host(altered));
    expect(served).toEqual({ state: 'differs', version: '1.2.3', digest: DIGEST, files: ['/assets/app-1.js'] });
    expect(codeStatus(served, [{ digest: DIGEST, version: '1.2.3', by: 'admin' }]).state).toBe('differs');
    const missing = await checkServedCode(
      BASE,
      host({ '/index.html': FILES['/index.html']!, '/release.json': MANIFEST }),
    );
    expect(missing).toMatchObject({ state: 'differs', files: ['/assets/app-1.js'] });
  });

  it('says when there is no manifest, a malformed one, or no answer at all', async () => {
    expect(await checkServedCode(BASE, host(FILES))).toEqual({ state: 'no-release' });
    expect(await checkServedCode(BASE, host({ ...FILES, '/release.json': `${MANIFEST} ` }))).toMatchObject({
      state: 'malformed',
    });
    expect(await checkServedCode(BASE, host({}, true))).toEqual({ state: 'unreachable' });
  });
});
