/**
 * Writes `dist/release.json`, the release manifest of the build in `dist/` (core/release.ts):
 * the SHA-256 of every file served, so that a mesh's admins can sign this build and every
 * machine can check the code it was served against it. Run by `npm run build` after
 * `vite build`; prints the release's digest.
 *
 *   tsx scripts/release-manifest.ts [DIST_DIR]
 */
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { decodeRelease, encodeRelease, isReleased, RELEASE_FILE, RELEASE_FORMAT } from '../src/core/release.js';

const sha256 = (bytes: Uint8Array | string): string => createHash('sha256').update(bytes).digest('hex');

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile())
    .map((e) => join(e.parentPath, e.name));
}

const dist = process.argv[2] ?? 'dist';
const pkg = JSON.parse(readFileSync('package.json', 'utf8')) as { version: string };
const files: Record<string, string> = {};
for (const file of filesUnder(dist)) {
  const path = `/${relative(dist, file).split(sep).join('/')}`;
  if (isReleased(path)) files[path] = sha256(readFileSync(file));
}
const text = encodeRelease({ format: RELEASE_FORMAT, version: pkg.version, files });
// A file name or version the app's check would refuse fails the build, not every machine later.
const checked = decodeRelease(text);
if (!checked.ok) throw new Error(`release manifest: ${checked.error.reason}`);
writeFileSync(join(dist, RELEASE_FILE), text);
process.stdout.write(`release ${pkg.version}: ${Object.keys(files).length} files, digest ${sha256(text)}\n`);
