/**
 * Whether the code this page was served is a release the mesh signed (issue 25, code
 * integrity). The page fetches the release manifest beside it (core/release.ts) and every
 * file it names, through the same path its code came by (the service worker's cache when it
 * serves the app, else the network), hashes them with WebCrypto and compares; the manifest's
 * digest is then looked up among the mesh's signed releases (the CONTROL `releases` rows, each
 * written, and so signed, by an admin).
 *
 * What this cannot prove: that the code running now is the code fetched again here — a
 * hostile server can serve one thing to the page and another to this check, and the very
 * first load runs before any check. It detects a host that serves an unsigned build or files
 * that differ from the manifest, which is what a compromised static host or relay that
 * serves the app would do to every visitor (docs/operations.md, "Code integrity").
 */
import { toHex } from '../core/bytes.js';
import { decodeRelease, RELEASE_FILE } from '../core/release.js';

export type ServedCode =
  /** No release manifest where the app is served: a development server, or a host that dropped it. */
  | { readonly state: 'no-release' }
  /** The manifest or a file could not be fetched (offline): checked at the next start. */
  | { readonly state: 'unreachable' }
  | { readonly state: 'malformed'; readonly reason: string }
  /** Files served differ from the manifest (or are missing): not the build the manifest describes. */
  | { readonly state: 'differs'; readonly version: string; readonly digest: string; readonly files: readonly string[] }
  | { readonly state: 'matches'; readonly version: string; readonly digest: string };

export const RELEASES_TABLE = 'releases';

export type SignedRelease = { readonly digest: string; readonly version: string; readonly by: string };

/** What the page shows: the served code's check joined with the mesh's signed releases. */
export type CodeStatus =
  | ServedCode
  | (Omit<Extract<ServedCode, { state: 'matches' }>, 'state'> & {
      readonly state: 'signed' | 'unsigned';
      readonly signedBy?: string;
    });

async function sha256Hex(bytes: ArrayBuffer): Promise<string> {
  return toHex(new Uint8Array(await crypto.subtle.digest('SHA-256', bytes)));
}

/** Checks the files served at `base` (the app's root URL, ending in `/`) against their manifest. */
export async function checkServedCode(base: string, fetchImpl: typeof fetch = fetch): Promise<ServedCode> {
  const response = await fetchImpl(new URL(RELEASE_FILE, base), { cache: 'no-cache' }).catch(() => undefined);
  if (!response) return { state: 'unreachable' };
  if (!response.ok) return { state: 'no-release' };
  const bytes = await response.arrayBuffer();
  const manifest = decodeRelease(new TextDecoder().decode(bytes));
  if (!manifest.ok) return { state: 'malformed', reason: manifest.error.reason };
  const { version, files } = manifest.value;
  const digest = await sha256Hex(bytes);
  const differ: string[] = [];
  for (const [path, hash] of Object.entries(files)) {
    const file = await fetchImpl(new URL(path.slice(1), base)).catch(() => undefined);
    if (!file) return { state: 'unreachable' };
    if (!file.ok || (await sha256Hex(await file.arrayBuffer())) !== hash) differ.push(path);
  }
  return differ.length > 0
    ? { state: 'differs', version, digest, files: differ }
    : { state: 'matches', version, digest };
}

/** The served code's status given the mesh's signed releases. */
export function codeStatus(served: ServedCode, signed: readonly SignedRelease[]): CodeStatus {
  if (served.state !== 'matches') return served;
  const release = signed.find((r) => r.digest === served.digest);
  return release
    ? { state: 'signed', version: served.version, digest: served.digest, signedBy: release.by }
    : { state: 'unsigned', version: served.version, digest: served.digest };
}
