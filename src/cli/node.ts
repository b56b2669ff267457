/**
 * `sov node`: a headless machine of the mesh, for the storage roles (DESIGN §4
 * "Placement"): a server that stores domains it may not read, an archive that stores
 * every object of the mesh. It is the browser machine's code — MeshNode, the crypto,
 * MLS and object services — in one Node process, on SQLite: `<data>/replica.sqlite`,
 * `<data>/keys.sqlite` under the machine key file `<data>/machine.key` (0600), and
 * `<data>/objects.sqlite` (headless.ts wires them).
 *
 *   sov node --role server|archive --data DIR [--name NAME] [--join | --restore KIT | --found --relay URL]
 *            [--api 127.0.0.1:PORT]
 *
 * First run with `--join`: the pairing ticket is read from the first line of standard
 * input (never from the command line, where other users could see it, and never
 * logged). The node prints the pairing code and asks, on standard input, whether the
 * inviting machine shows the same; only a `y` confirms. Afterwards it runs until SIGINT
 * or SIGTERM, printing its state: relay session, machines, objects held and readable.
 *
 * First run with `--restore KIT`: the machine restores a mesh from a recovery kit's file
 * (runtime/mesh-recovery.ts), its recovery code read from the first line of standard input
 * (never from the command line). It prints how the restore goes and, if a checkpoint, key
 * history or ciphertext is missing, which; it keeps trying while it runs.
 *
 * First run with `--found --relay URL`: the machine founds a new mesh on that relay and is
 * its first admin (a server can start a mesh without a browser).
 *
 * `--api 127.0.0.1:PORT` serves the loopback API (src/node-api/server.ts) with the bearer token
 * in `<data>/api.token` (0600, made on first start; its path is printed, never the token), and
 * MCP over streamable HTTP at `/mcp` behind the same token, scoped by `--mcp-tools` and
 * `--mcp-domains` as `sov mcp` is (node-api/mcp.ts). With `--api-tls` (and `--tls-cert`,
 * `--tls-key`) it serves HTTPS, on any address.
 *
 * Roles: both store what the admins' placement records name for them; an archive with
 * no record stores everything. What it may read is the admins' choice (domain
 * membership), not the role's.
 */
import { parseArgs } from 'node:util';
import type { NodeSnapshot } from '../runtime/mesh-node.js';
import { readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { RecoveryStatus } from '../runtime/mesh-recovery.js';
import { openHeadless, type Headless } from './headless.js';
import { appServerProblem, parseListen, startAppServer, type AppServerOptions } from './app-server.js';
import { apiAddressProblem, startNodeApi } from '../node-api/server.js';
import { apiToken, URL_FILE } from '../node-api/token.js';
import { mcpHttp, mcpScope, type McpScope } from '../node-api/mcp.js';
import { NodeApiClient } from '../sdk/client.js';
import { INVITE_USAGE, inviteMain } from './invite.js';
import { stdinLines } from './stdin.js';

export const NODE_USAGE =
  'node --role server|archive --data DIR [--name NAME] [--join | --restore KIT | --found --relay URL] [--api 127.0.0.1:PORT [--api-tls] [--mcp-tools NAME,…] [--mcp-domains DOMAIN,…]] [--serve-app ADDR:PORT [--static DIR] [--tls-cert FILE --tls-key FILE]]   (ticket or recovery code on stdin)';

type Role = 'server' | 'archive';

class UsageError extends Error {}

type Args = {
  role: Role;
  data: string;
  name: string;
  join: boolean;
  restore: string | undefined;
  /** Found a new mesh on this relay (first run). */
  found: string | undefined;
  /** Serve the loopback API (node-api/server.ts). */
  api: { host: string; port: number; tls: Tls | undefined } | undefined;
  /** What MCP clients of `/mcp` may do. */
  mcp: McpScope;
  /** Serve the built app too (app-server.ts). */
  serveApp: AppServerOptions | undefined;
};

function parse(argv: readonly string[]): Args {
  const { values } = parseArgs({
    args: [...argv],
    strict: true,
    options: {
      role: { type: 'string' },
      data: { type: 'string' },
      name: { type: 'string' },
      join: { type: 'boolean' },
      restore: { type: 'string' },
      found: { type: 'boolean' },
      relay: { type: 'string' },
      api: { type: 'string' },
      'api-tls': { type: 'boolean' },
      'mcp-tools': { type: 'string' },
      'mcp-domains': { type: 'string' },
      'serve-app': { type: 'string' },
      static: { type: 'string' },
      'tls-cert': { type: 'string' },
      'tls-key': { type: 'string' },
    },
  });
  if (values.role !== 'server' && values.role !== 'archive') throw new UsageError('--role must be server or archive');
  if (!values.data) throw new UsageError('--data DIR is required');
  if ([values.join, values.restore !== undefined, values.found].filter(Boolean).length > 1) {
    throw new UsageError('--join, --restore and --found exclude each other');
  }
  if (values.found && !values.relay) throw new UsageError('--found needs --relay URL (ws:// or wss://)');
  if (values.relay !== undefined && !values.found) throw new UsageError('--relay goes with --found');
  if (values.relay !== undefined && !/^wss?:\/\/[^\s]+$/.test(values.relay)) {
    throw new UsageError(`--relay '${values.relay}' is not a ws:// or wss:// URL`);
  }
  if ((values['mcp-tools'] ?? values['mcp-domains']) !== undefined && values.api === undefined) {
    throw new UsageError('--mcp-tools and --mcp-domains go with --api');
  }
  const mcp = mcpScope(values['mcp-tools'], values['mcp-domains']);
  if (!mcp.ok) throw new UsageError(`--mcp-tools: ${mcp.problem}`);
  return {
    role: values.role,
    data: values.data,
    name: values.name ?? values.role,
    join: values.join ?? false,
    restore: values.restore,
    found: values.found ? values.relay : undefined,
    api: apiArgs(values.api, values['api-tls'] ? tlsArgs(values) : undefined),
    mcp: mcp.scope,
    serveApp: serveAppArgs(values),
  };
}

type Tls = { readonly cert: Buffer; readonly key: Buffer };

/** The certificate and key `--tls-cert` and `--tls-key` name, read (both or neither). */
function tlsArgs(values: { 'tls-cert'?: string | undefined; 'tls-key'?: string | undefined }): Tls | undefined {
  const [cert, key] = [values['tls-cert'], values['tls-key']];
  if ((cert === undefined) !== (key === undefined)) throw new UsageError('--tls-cert and --tls-key go together');
  return cert && key ? { cert: readFileSync(cert), key: readFileSync(key) } : undefined;
}

function apiArgs(listen: string | undefined, tls: Tls | undefined): NonNullable<Args['api']> | undefined {
  if (listen === undefined) {
    if (tls) throw new UsageError('--api-tls goes with --api');
    return undefined;
  }
  let where: { host: string; port: number };
  try {
    where = parseListen(listen);
  } catch (e) {
    throw new UsageError(`--api ${(e as Error).message}`, { cause: e });
  }
  const problem = apiAddressProblem(where.host, tls !== undefined);
  if (problem) throw new UsageError(`--api: ${problem}`);
  return { ...where, tls };
}

function serveAppArgs(values: {
  'serve-app'?: string | undefined;
  static?: string | undefined;
  'tls-cert'?: string | undefined;
  'tls-key'?: string | undefined;
  'api-tls'?: boolean | undefined;
}): AppServerOptions | undefined {
  const listen = values['serve-app'];
  const tls = values['api-tls'] || listen !== undefined ? tlsArgs(values) : undefined;
  if (listen === undefined) {
    if (
      values.static !== undefined ||
      (!values['api-tls'] && (values['tls-cert'] ?? values['tls-key']) !== undefined)
    ) {
      throw new UsageError('--static, --tls-cert and --tls-key go with --serve-app (the last two also with --api-tls)');
    }
    return undefined;
  }
  let where: { host: string; port: number };
  try {
    where = parseListen(listen);
  } catch (e) {
    throw new UsageError(`--serve-app ${(e as Error).message}`, { cause: e });
  }
  const options: AppServerOptions = {
    ...where,
    staticDir: resolve(values.static ?? fileURLToPath(new URL('../../dist', import.meta.url))),
    tls,
  };
  const problem = appServerProblem(options);
  if (problem) throw new UsageError(`--serve-app: ${problem}`);
  return options;
}

const say = (line: string): void => void process.stdout.write(`sov node: ${line}\n`);

/** One line of state whenever it changes: nothing secret, ids shortened. */
function stateLine(s: NodeSnapshot): string {
  const held = s.objects.filter((o) => o.held);
  const readable = held.filter((o) => o.manifest);
  const live = s.machines.filter((m) => !m.removed).length;
  const line = `status=${s.status} relay=${s.relay} machines=${live} objects_held=${held.length} objects_readable=${readable.length}`;
  return s.status === 'recovering' && s.recovery ? `${line} ${recoveryLine(s.recovery)}` : line;
}

/** How a restore from a recovery kit goes, and what is missing. */
function recoveryLine(r: RecoveryStatus): string {
  if (r.state === 'restoring') return `recovery=restoring (${r.step})`;
  if (r.state === 'restored') return `recovery=restored objects=${r.objects}`;
  return `recovery=incomplete ${r.missing.map((m) => `missing ${m.part}: ${m.reason}`).join('; ')}`;
}

/**
 * A fresh machine takes the kit (its code on standard input) and opens again as the kit's
 * machine, whose restore then starts; undefined, said why, when the kit was refused.
 */
async function restoreFrom(
  machine: Headless,
  args: Args & { restore: string },
  readLine: () => Promise<string | undefined>,
): Promise<Headless | undefined> {
  const code = (await readLine())?.trim() ?? '';
  let file: Uint8Array;
  try {
    file = new Uint8Array(readFileSync(args.restore));
  } catch (e) {
    say(`restore refused: cannot read ${args.restore} (${(e as Error).message})`);
    return undefined;
  }
  const imported = await machine.node.recovery.importKit(file, code);
  if (!imported.ok) {
    say(`restore refused: ${imported.error.reason}`);
    return undefined;
  }
  say('kit opened: starting again as its machine to restore the mesh');
  await machine.close();
  return openHeadless(args.data, { role: args.role, restart: () => undefined });
}

/** Options of `sov node` that take a value: `--name invite` names a machine, it asks for nothing. */
const VALUED = new Set(['--role', '--data', '--name', '--restore', '--relay', '--api', '--mcp-tools', '--mcp-domains']);

/** `sov node --data DIR invite` (or `sov node invite --data DIR`): the data directory, else undefined. */
function inviteArgs(argv: readonly string[]): string | undefined {
  const last = argv.length - 1;
  const at = argv[0] === 'invite' ? 0 : argv[last] === 'invite' && !VALUED.has(argv[last - 1] ?? '') ? last : -1;
  if (at < 0) return undefined;
  const { values } = parseArgs({
    args: argv.filter((_, i) => i !== at),
    strict: true,
    options: { data: { type: 'string' } },
  });
  if (!values.data) throw new UsageError('invite: --data DIR is required');
  return values.data;
}

export async function nodeMain(argv: readonly string[]): Promise<number> {
  let args: ReturnType<typeof parse>;
  let invite: string | undefined;
  try {
    invite = inviteArgs(argv);
  } catch (e) {
    process.stderr.write(`sov node: ${(e as Error).message}\nusage: sov ${INVITE_USAGE}\n`);
    return 2;
  }
  if (invite !== undefined) return inviteMain(invite);
  try {
    args = parse(argv);
  } catch (e) {
    if (e instanceof UsageError || (e instanceof Error && 'code' in e && String(e.code).startsWith('ERR_PARSE_ARGS'))) {
      process.stderr.write(`sov node: ${e.message}\nusage: sov ${NODE_USAGE}\n`);
      return 2;
    }
    throw e;
  }
  let exitCode: number | undefined;
  let wake: () => void = () => undefined;
  const stopped = new Promise<void>((resolve) => (wake = resolve));
  const stop = (code: number, why: string): void => {
    if (exitCode !== undefined) return;
    exitCode = code;
    say(why);
    wake();
  };
  process.once('SIGINT', () => stop(0, 'SIGINT, closing'));
  process.once('SIGTERM', () => stop(0, 'SIGTERM, closing'));

  const input = stdinLines();
  const readLine = input.next;
  let machine = await openHeadless(args.data, {
    role: args.role,
    restart: () => stop(1, 'the join was abandoned; start again with --join and a new ticket'),
  });
  if (args.restore !== undefined && machine.node.status === 'new') {
    const restored = await restoreFrom(machine, { ...args, restore: args.restore }, readLine);
    if (!restored) {
      input.close();
      process.stdin.destroy();
      await machine.close();
      return 1;
    }
    machine = restored;
  }
  const { node } = machine;
  say(`role ${args.role}, machine ${machine.fingerprint}, data ${args.data}`);
  const app = args.serveApp && (await startAppServer(args.serveApp));
  if (app) say(`serving the app at ${app.url}`);
  let api: Awaited<ReturnType<typeof startNodeApi>> | undefined;
  if (args.api) {
    const token = apiToken(args.data);
    if ('type' in token) {
      say(`api refused: ${token.reason}`);
      await app?.close();
      await machine.close();
      setTimeout(() => process.exit(1), 1000).unref();
      return 1;
    }
    const m = machine;
    // MCP's tools are clients of this API (the same checks as any client), made once it listens.
    let self: NodeApiClient | undefined;
    const mcp = mcpHttp(
      () => self!,
      args.mcp,
      (line) => say(`mcp: ${line}`),
    );
    try {
      api = await startNodeApi({
        ...args.api,
        token: token.token,
        node,
        fingerprint: () => m.fingerprint,
        log: say,
        mcp,
      });
      self = new NodeApiClient({ url: api.url, token: token.token });
    } catch (e) {
      say(`api not started: ${(e as Error).message}`);
      await app?.close();
      await machine.close();
      setTimeout(() => process.exit(1), 1000).unref();
      return 1;
    }
    // Where `sov mcp --data DIR` finds this API (node-api/mcp.ts).
    writeFileSync(join(args.data, URL_FILE), `${api.url}\n`, { mode: 0o600 });
    say(`api listening at ${api.url} (bearer token in ${token.path})`);
  }

  let asked = false;
  let last = '';
  let lastNotice = 0;
  const unsubscribe = node.subscribe((s) => {
    const line = stateLine(s);
    if (line !== last) say((last = line));
    if (s.status === 'joining' && s.join.sas && !s.join.answered && !asked) {
      asked = true;
      say(`pairing code ${s.join.sas}`);
      process.stdout.write('Does the inviting machine show the same code? [y/N] ');
      void readLine().then(async (answer) => {
        const yes = answer?.trim().toLowerCase() === 'y';
        say(yes ? 'code confirmed here; waiting for the inviting machine' : 'code declined');
        await node.pairing.answerJoin(yes);
      });
    }
    for (const n of [...s.notices].reverse()) {
      if (n.id <= lastNotice) continue;
      lastNotice = n.id;
      // Standing notices were printed when they happened, before this start.
      if (!n.standing) say(`${n.kind}: ${n.text}`);
    }
  });

  if (node.status === 'new') {
    if (args.found !== undefined) {
      await node.pairing.found(args.name, args.found);
      say(`founded a mesh on ${args.found}: this machine is its first admin`);
    } else if (args.join) {
      const ticket = (await readLine())?.trim();
      const joined = ticket ? await node.pairing.join(ticket, args.name) : undefined;
      if (!joined?.ok) stop(1, `join refused: ${joined ? joined.error.type : 'no ticket on standard input'}`);
    } else if (app) {
      say('this machine is in no mesh yet: it serves the app; start it with --join to pair it');
    } else {
      stop(2, 'this machine is in no mesh yet: run with --join (ticket on standard input), --restore KIT or --found');
    }
  }
  await stopped;
  input.close();
  process.stdin.destroy();
  unsubscribe();
  await api?.close();
  await app?.close();
  await machine.close();
  // Nothing of the session may keep the process alive (reconnect timers, sockets closing).
  setTimeout(() => process.exit(exitCode ?? 0), 1000).unref();
  return exitCode ?? 0;
}
