/**
 * The API's bearer token: `<data>/api.token`, 32 random bytes (base64url), made on first start
 * with mode 0600 and read afterwards. A token file other users can read is refused, as ssh
 * refuses a readable private key: whoever holds the token acts as this machine.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export const TOKEN_FILE = 'api.token';
/** Where a node with `--api` writes the API's URL, for `sov mcp --data DIR` (mcp.ts). */
export const URL_FILE = 'api.url';

export type TokenProblem = { readonly type: 'TokenExposed' | 'TokenMalformed'; readonly reason: string };

export function apiToken(dataDir: string): { token: string; path: string } | TokenProblem {
  const path = join(dataDir, TOKEN_FILE);
  try {
    writeFileSync(path, `${randomBytes(32).toString('base64url')}\n`, { mode: 0o600, flag: 'wx' });
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
  }
  if ((statSync(path).mode & 0o077) !== 0) {
    return {
      type: 'TokenExposed',
      reason: `${path} is readable by other users: chmod 600 it, or delete it for a new one`,
    };
  }
  const token = readFileSync(path, 'utf8').trim();
  if (!/^[A-Za-z0-9_-]{32,128}$/.test(token)) {
    return { type: 'TokenMalformed', reason: `${path} holds no token: delete it for a new one` };
  }
  return { token, path };
}
