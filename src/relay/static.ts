/**
 * Static hosting of the built PWA (`dist/`) by the relay, plus the security headers every
 * relay HTTP response carries.
 *
 * Caching: index.html, sw.js and *.webmanifest are `no-cache` (a new deploy must reach the
 * service worker at once); /assets/* are content-hashed by Vite, so cached for a year
 * (`immutable`); anything else is `no-cache`. Weak ETags make revalidation cheap.
 * Unknown paths fall back to index.html (SPA routing), except under /assets/, where a
 * missing chunk is a plain 404 rather than HTML served as JavaScript.
 *
 * Compression: text, JavaScript, JSON, SVG and WebAssembly go out as Brotli or gzip when the
 * request accepts it (`Vary: Accept-Encoding`); each file is compressed once per version
 * (size and mtime) and kept in memory, a bounded cache — dist/ is a few MB.
 *
 * Threats: the request path is percent-decoded once, refused if it holds NUL, a `..`
 * segment, or a dot-file segment (other than .well-known), and the resolved file must lie
 * under the real path of the root, symlinks included — anything else is 403.
 */
import { createReadStream, realpathSync, type Stats } from 'node:fs';
import { readFile, realpath, stat } from 'node:fs/promises';
import { promisify } from 'node:util';
import { brotliCompress, constants as zlib, gzip } from 'node:zlib';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { extname, join, resolve, sep } from 'node:path';

export const CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  "script-src 'self' 'wasm-unsafe-eval'",
  "worker-src 'self' blob:",
  // Relays may live on other origins than the app (sov relay --no-app): any TLS one, and the loopback.
  "connect-src 'self' ws: wss: https: http://127.0.0.1:* http://localhost:*",
  "img-src 'self' data: blob:",
  "style-src 'self' 'unsafe-inline'",
  "manifest-src 'self'",
  "object-src 'none'",
  "base-uri 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'X-Content-Type-Options': 'nosniff',
  'Content-Security-Policy': CONTENT_SECURITY_POLICY,
  'Referrer-Policy': 'no-referrer',
  'X-Frame-Options': 'DENY',
  'Cross-Origin-Opener-Policy': 'same-origin',
};

export function applySecurityHeaders(res: ServerResponse): void {
  for (const [name, value] of Object.entries(SECURITY_HEADERS)) res.setHeader(name, value);
}

const MIME: Readonly<Record<string, string>> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.webmanifest': 'application/manifest+json; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.webp': 'image/webp',
  '.ico': 'image/x-icon',
  '.wasm': 'application/wasm',
  '.txt': 'text/plain; charset=utf-8',
  '.woff2': 'font/woff2',
};

const LONG_CACHE = 'public, max-age=31536000, immutable';
const MISSING_ROOT =
  'sov relay: no web app to serve here. Build it with `npm run build` (writes dist/) or start the relay with --static DIR.\n';

/** The real path of the static root, or undefined when it does not exist. */
export function resolveStaticRoot(dir: string | undefined): string | undefined {
  if (dir === undefined) return undefined;
  try {
    return realpathSync(dir);
  } catch {
    return undefined;
  }
}

export function sendText(
  res: ServerResponse,
  status: number,
  text: string,
  headers: Record<string, string> = {},
): void {
  res.writeHead(status, { 'Content-Type': 'text/plain; charset=utf-8', 'Cache-Control': 'no-store', ...headers });
  res.end(text);
}

type Resolved =
  { readonly kind: 'file'; readonly path: string } | { readonly kind: 'refused' } | { readonly kind: 'bad' };

function resolveRequestPath(root: string, pathname: string): Resolved {
  let decoded: string;
  try {
    decoded = decodeURIComponent(pathname);
  } catch {
    return { kind: 'bad' };
  }
  if (decoded.includes('\0')) return { kind: 'bad' };
  const segments = decoded.split(/[\\/]/);
  if (segments.some((s) => s === '..' || (s.startsWith('.') && s !== '.well-known'))) return { kind: 'refused' };
  const path = resolve(root, '.' + decoded);
  if (path !== root && !path.startsWith(root + sep)) return { kind: 'refused' };
  return { kind: 'file', path: decoded.endsWith('/') ? join(path, 'index.html') : path };
}

/** Stats a file that really lies under root; undefined if missing, 'refused' if it escapes. */
async function findFile(root: string, path: string): Promise<{ path: string; stats: Stats } | 'refused' | undefined> {
  try {
    let real = await realpath(path);
    let stats = await stat(real);
    if (stats.isDirectory()) {
      real = await realpath(join(real, 'index.html'));
      stats = await stat(real);
    }
    if (!real.startsWith(root + sep)) return 'refused';
    return stats.isFile() ? { path: real, stats } : undefined;
  } catch {
    return undefined;
  }
}

const cacheControl = (urlPath: string): string => (urlPath.startsWith('/assets/') ? LONG_CACHE : 'no-cache');

/** Types worth compressing (images other than SVG and fonts are compressed already). */
const COMPRESSIBLE = new Set([
  '.html',
  '.js',
  '.mjs',
  '.css',
  '.json',
  '.map',
  '.webmanifest',
  '.svg',
  '.wasm',
  '.txt',
]);
/** Files larger than this go out as they are (none of the app's are). */
const MAX_COMPRESSED_SOURCE = 16 * 1024 * 1024;
/** Compressed bytes kept at most; the oldest entries go first. */
const MAX_CACHE_BYTES = 64 * 1024 * 1024;

type Encoding = 'br' | 'gzip';
const brotli = promisify(brotliCompress);
const gzipped = promisify(gzip);

/** The encoding to send: Brotli over gzip, neither when the client refuses both (`q=0`). */
export function chooseEncoding(accept: string | undefined): Encoding | undefined {
  const offered = new Map<string, number>();
  for (const part of (accept ?? '').split(',')) {
    const [name = '', ...params] = part.trim().toLowerCase().split(';');
    const q = params.map((p) => p.trim()).find((p) => p.startsWith('q='));
    const weight = q === undefined ? 1 : Number(q.slice(2));
    if (name) offered.set(name, Number.isFinite(weight) ? weight : 0);
  }
  const weight = (name: Encoding) => offered.get(name) ?? (offered.has('*') ? offered.get('*')! : 0);
  if (weight('br') > 0 && weight('br') >= weight('gzip')) return 'br';
  return weight('gzip') > 0 ? 'gzip' : undefined;
}

/** Compressed files by path, encoding and version; a Map keeps insertion order for eviction. */
const compressed = new Map<string, Promise<Buffer>>();
let cachedBytes = 0;

function compress(path: string, version: string, encoding: Encoding): Promise<Buffer> {
  const key = `${encoding} ${version} ${path}`;
  const hit = compressed.get(key);
  if (hit) return hit;
  const made = readFile(path).then((bytes) =>
    encoding === 'br'
      ? brotli(bytes, {
          params: { [zlib.BROTLI_PARAM_QUALITY]: zlib.BROTLI_MAX_QUALITY, [zlib.BROTLI_PARAM_SIZE_HINT]: bytes.length },
        })
      : gzipped(bytes, { level: zlib.Z_BEST_COMPRESSION }),
  );
  compressed.set(key, made);
  made.then(
    (out) => {
      cachedBytes += out.length;
      for (const [old, entry] of compressed) {
        if (cachedBytes <= MAX_CACHE_BYTES || old === key) break;
        compressed.delete(old);
        void entry.then((b) => (cachedBytes -= b.length));
      }
    },
    () => compressed.delete(key),
  );
  return made;
}

async function sendFile(
  req: IncomingMessage,
  res: ServerResponse,
  urlPath: string,
  file: { path: string; stats: Stats },
): Promise<void> {
  const version = `${file.stats.size.toString(16)}-${Math.floor(file.stats.mtimeMs).toString(16)}`;
  const type = extname(file.path).toLowerCase();
  const encoding =
    COMPRESSIBLE.has(type) && file.stats.size <= MAX_COMPRESSED_SOURCE
      ? chooseEncoding(req.headers['accept-encoding'])
      : undefined;
  // Each encoding is a representation of its own: its own validator.
  const etag = `W/"${version}${encoding ? `-${encoding}` : ''}"`;
  const headers: Record<string, string> = {
    'Content-Type': MIME[type] ?? 'application/octet-stream',
    'Cache-Control': cacheControl(urlPath),
    ETag: etag,
    ...(COMPRESSIBLE.has(type) ? { Vary: 'Accept-Encoding' } : {}),
  };
  if (req.headers['if-none-match'] === etag) {
    res.writeHead(304, headers);
    res.end();
    return;
  }
  if (encoding) {
    const body = await compress(file.path, version, encoding).catch(() => undefined);
    if (body) {
      res.writeHead(200, { ...headers, 'Content-Encoding': encoding, 'Content-Length': String(body.length) });
      res.end(req.method === 'HEAD' ? undefined : body);
      return;
    }
  }
  res.writeHead(200, { ...headers, 'Content-Length': String(file.stats.size) });
  if (req.method === 'HEAD') {
    res.end();
    return;
  }
  const stream = createReadStream(file.path);
  stream.on('error', () => res.destroy());
  stream.pipe(res);
}

/** Serves GET/HEAD `pathname` (already URL-normalised, still percent-encoded) from `root`. */
export async function serveStatic(
  root: string | undefined,
  pathname: string,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  if (root === undefined) return sendText(res, 404, MISSING_ROOT);
  const target = resolveRequestPath(root, pathname);
  if (target.kind === 'bad') return sendText(res, 400, 'sov relay: bad path\n');
  if (target.kind === 'refused') return sendText(res, 403, 'sov relay: forbidden\n');
  const found = await findFile(root, target.path);
  if (found === 'refused') return sendText(res, 403, 'sov relay: forbidden\n');
  if (found) return sendFile(req, res, pathname, found);
  if (pathname.startsWith('/assets/')) return sendText(res, 404, 'sov relay: not found\n');
  const index = await findFile(root, join(root, 'index.html'));
  if (index === undefined || index === 'refused') return sendText(res, 404, MISSING_ROOT);
  await sendFile(req, res, '/index.html', index);
}
