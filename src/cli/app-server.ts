/**
 * `sov node --serve-app ADDR:PORT`: a machine of the mesh serves the built app itself (issue 25,
 * code apart from ciphertext), so that the code comes from a machine its owners run rather than
 * from a relay. Only the app: no WebSocket, no API (`/ws` and `/api/…` are 404). Over HTTPS with
 * `--tls-cert`/`--tls-key` (browsers give keys, offline mode and the camera only to https pages,
 * and to the loopback); plain HTTP only on a loopback address. Files, caching, compression and
 * security headers are the relay's (relay/static.ts), so the app behaves the same from either.
 */
import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { applySecurityHeaders, resolveStaticRoot, sendText, serveStatic } from '../relay/static.js';

export type AppServerOptions = {
  readonly host: string;
  readonly port: number;
  readonly staticDir: string;
  /** PEM contents. */
  readonly tls?: { readonly cert: Buffer; readonly key: Buffer } | undefined;
};

export type AppServer = { readonly url: string; close(): Promise<void> };

const isLoopback = (host: string): boolean => host === 'localhost' || host === '::1' || /^127\./.test(host);

/** `ADDR:PORT` (`[v6]:PORT` for IPv6) → its parts; throws on anything else. */
export function parseListen(text: string): { host: string; port: number } {
  const match = /^(?:\[([0-9a-fA-F:]+)\]|([^:[\]]+)):(\d{1,5})$/.exec(text);
  const port = Number(match?.[3]);
  if (!match || port < 1 || port > 65535) throw new Error(`'${text}' is not ADDR:PORT`);
  return { host: (match[1] ?? match[2])!, port };
}

/** Why these options may not serve the app, if they may not. */
export function appServerProblem(o: Pick<AppServerOptions, 'host' | 'tls'>): string | undefined {
  return o.tls || isLoopback(o.host)
    ? undefined
    : `serving the app on ${o.host} needs --tls-cert and --tls-key: browsers give keys and offline mode only to https pages`;
}

export async function startAppServer(o: AppServerOptions): Promise<AppServer> {
  const problem = appServerProblem(o);
  if (problem) throw new Error(problem);
  const root = resolveStaticRoot(o.staticDir);
  const onRequest = (req: IncomingMessage, res: ServerResponse): void => {
    applySecurityHeaders(res);
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      return sendText(res, 405, 'sov node: method not allowed\n', { Allow: 'GET, HEAD' });
    }
    const path = new URL(req.url ?? '/', 'http://app.invalid').pathname;
    if (path === '/ws' || path === '/api' || path.startsWith('/api/')) {
      return sendText(res, 404, 'sov node: this machine serves the app only; its relays serve the rest\n');
    }
    serveStatic(root, path, req, res).catch(() => {
      if (!res.headersSent) sendText(res, 500, 'sov node: internal error\n');
      else res.destroy();
    });
  };
  const server: Server = o.tls
    ? createHttpsServer({ cert: o.tls.cert, key: o.tls.key }, onRequest)
    : createHttpServer(onRequest);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(o.port, o.host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const host = o.host.includes(':') ? `[${o.host}]` : o.host;
  return {
    url: `${o.tls ? 'https' : 'http'}://${host}:${port}/`,
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
