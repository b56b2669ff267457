/**
 * Which web pages may use this relay (issue 25: code apart from ciphertext). The relay need
 * not serve the app: the app may come from any static host, or from a machine of the mesh,
 * and reach the relay across origins. Browsers say where a page came from in the `Origin`
 * header of every WebSocket upgrade and every cross-origin request; the relay takes:
 *
 *   - requests without `Origin`: not from a web page (a headless node, a script) or a
 *     same-origin navigation — every session and every API call proves its endpoint key by
 *     signature anyway, nothing rides on cookies;
 *   - the page it served itself (the `Origin` names the host the request was sent to);
 *   - the origins its operator lists (`sov relay --origin URL`, repeatable), which also get
 *     the CORS answers a browser needs before it sends the signed API's requests;
 *
 * and refuses any other page with 403: a page on some other site cannot use the relay from a
 * visitor's browser, and the operator's list says which app deployments are theirs.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { AUTH_HEADER } from '../core/relay-http.js';

/** How long a browser may keep a preflight's answer. */
const PREFLIGHT_MAX_AGE_S = 600;

/**
 * `URL` as a browser writes it in `Origin`: scheme, host and a port other than the scheme's
 * default, lower case, no path. Throws on anything else (an operator's typo must not pass).
 */
export function parseOrigin(text: string): string {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new Error(`'${text}' is not an origin (scheme://host[:port])`);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new Error(`'${text}': an origin is http(s)`);
  if (url.username || url.password || url.search || url.hash || (url.pathname !== '/' && url.pathname !== '')) {
    throw new Error(`'${text}' is not an origin: no path, query or credentials`);
  }
  return url.origin;
}

export type OriginVerdict = 'none' | 'same' | 'listed' | 'refused';

/** What to make of a request's `Origin` (see the header). */
export function judgeOrigin(req: IncomingMessage, listed: ReadonlySet<string>): OriginVerdict {
  const origin = req.headers.origin;
  if (origin === undefined) return 'none';
  if (listed.has(origin)) return 'listed';
  let host: string;
  try {
    host = new URL(origin).host;
  } catch {
    return 'refused'; // `null` (a sandboxed or file page) and anything malformed
  }
  return host !== '' && host === req.headers.host?.toLowerCase() ? 'same' : 'refused';
}

/**
 * Applies the verdict to an HTTP request: true when the request was answered here (refused,
 * or a preflight), false when it goes on to its route — with the CORS headers a listed page
 * needs to read the answer.
 */
export function answerOrigin(req: IncomingMessage, res: ServerResponse, listed: ReadonlySet<string>): boolean {
  res.setHeader('Vary', 'Origin');
  const verdict = judgeOrigin(req, listed);
  if (verdict === 'refused') {
    res.writeHead(403, { 'Content-Type': 'text/plain; charset=utf-8', 'Cache-Control': 'no-store' });
    res.end('sov relay: pages from this origin may not use this relay (its operator lists them with --origin)\n');
    return true;
  }
  if (verdict !== 'listed') return false;
  res.setHeader('Access-Control-Allow-Origin', req.headers.origin!);
  if (req.method !== 'OPTIONS') return false;
  res.writeHead(204, {
    'Access-Control-Allow-Methods': 'GET, POST',
    'Access-Control-Allow-Headers': `content-type, ${AUTH_HEADER}`,
    'Access-Control-Max-Age': String(PREFLIGHT_MAX_AGE_S),
    'Cache-Control': 'no-store',
  });
  res.end();
  return true;
}
