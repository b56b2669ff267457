/**
 * Release manifests (issue 25, code integrity): what a build of the app consists of, so that a
 * mesh's admins can sign a build and every machine can say whether the code it was served is
 * one the mesh signed.
 *
 * `npm run build` writes `dist/release.json` (scripts/release-manifest.ts):
 *
 *   {"files":{"/assets/index-….js":"<sha-256 hex>",…},"format":"sov-release/1","version":"0.1.0"}
 *
 * — every file the app is served from (paths from the site root, source maps left out: they
 * never run), keys sorted, no whitespace, so the same build always gives the same bytes. The
 * release's digest is the SHA-256 of those bytes, in hex; an admin signs it by writing the
 * CONTROL row `releases/<digest>` (schema.ts), which carries the admin's event signature.
 */
import { err, ok, type Result } from './result.js';

export const RELEASE_FORMAT = 'sov-release/1';
export const RELEASE_FILE = 'release.json';

export type ReleaseManifest = {
  readonly format: typeof RELEASE_FORMAT;
  readonly version: string;
  /** Path from the site root (`/index.html`) → SHA-256 of the file, lower-case hex. */
  readonly files: Readonly<Record<string, string>>;
};

export type ReleaseError = { readonly type: 'MalformedRelease'; readonly reason: string };

const HEX64 = /^[0-9a-f]{64}$/;
const PATH = /^\/[A-Za-z0-9._\-/]{1,255}$/;
const VERSION = /^[0-9A-Za-z.+-]{1,64}$/;
const MAX_FILES = 10_000;

/** Whether a path belongs in a release: everything served, except source maps and the manifest itself. */
export const isReleased = (path: string): boolean => !path.endsWith('.map') && path !== `/${RELEASE_FILE}`;

/** The manifest's bytes as the build writes them: keys sorted, no whitespace. */
export function encodeRelease(m: ReleaseManifest): string {
  const files = Object.fromEntries(Object.entries(m.files).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
  return JSON.stringify({ files, format: m.format, version: m.version });
}

/** A manifest from its bytes; refuses anything the build would not have written. */
export function decodeRelease(text: string): Result<ReleaseManifest, ReleaseError> {
  const bad = (reason: string) => err({ type: 'MalformedRelease' as const, reason });
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return bad('not JSON');
  }
  if (typeof value !== 'object' || value === null) return bad('not an object');
  const { format, version, files } = value as Record<string, unknown>;
  if (format !== RELEASE_FORMAT) return bad(`format is not ${RELEASE_FORMAT}`);
  if (typeof version !== 'string' || !VERSION.test(version)) return bad('version malformed');
  if (typeof files !== 'object' || files === null || Array.isArray(files)) return bad('files malformed');
  const entries = Object.entries(files as Record<string, unknown>);
  if (entries.length === 0 || entries.length > MAX_FILES) return bad('no files, or too many');
  for (const [path, hash] of entries) {
    if (!PATH.test(path) || path.includes('..') || !isReleased(path)) return bad(`path ${path.slice(0, 64)} malformed`);
    if (typeof hash !== 'string' || !HEX64.test(hash)) return bad(`hash of ${path} malformed`);
  }
  const manifest: ReleaseManifest = { format, version, files: files as Record<string, string> };
  if (encodeRelease(manifest) !== text) return bad('not written as a build writes it (sorted keys, no whitespace)');
  return ok(manifest);
}
