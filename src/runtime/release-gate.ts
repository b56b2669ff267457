/**
 * What the service worker may cache (issue 25, code integrity): only files whose SHA-256 the
 * release manifest served beside the app names (core/release.ts). A precached response that
 * differs, or that the manifest does not name, is refused — workbox then fails the install, so
 * the service worker that would have served it never takes over and the one before stays (or,
 * on a first visit, the page runs from the network and says what it found: code-check.ts). No
 * manifest, or a malformed one, caches nothing: fail closed.
 *
 * The gate is the manifest, not the mesh's signatures: a service worker installs before any
 * page of the mesh runs and holds no keys to read the signed releases; the page checks the
 * manifest's digest against them (docs/operations.md, "Code integrity").
 */
import { toHex } from '../core/bytes.js';
import { decodeRelease, RELEASE_FILE } from '../core/release.js';

/** The hook of a workbox plugin this gate fills (workbox-core's `cacheWillUpdate`). */
export type ReleaseGate = {
  cacheWillUpdate(param: { request: Request; response: Response }): Promise<Response | null>;
};

/** Reads the manifest at `base` once per service worker, on the first response to check. */
export function releaseGate(base: string, fetchImpl: typeof fetch = fetch): ReleaseGate {
  let files: Promise<Readonly<Record<string, string>> | undefined> | undefined;
  const released = () =>
    (files ??= fetchImpl(new URL(RELEASE_FILE, base), { cache: 'no-store' })
      .then(async (r) => (r.ok ? decodeRelease(await r.text()) : undefined))
      .then((d) => (d?.ok ? d.value.files : undefined))
      .catch(() => undefined));
  return {
    async cacheWillUpdate({ request, response }) {
      const hash = (await released())?.[new URL(request.url).pathname];
      if (hash === undefined || !response.ok) return null;
      const bytes = await response.clone().arrayBuffer();
      const digest = toHex(new Uint8Array(await crypto.subtle.digest('SHA-256', bytes)));
      return digest === hash ? response : null;
    },
  };
}
