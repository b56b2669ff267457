/**
 * The `sov` command. Subcommands live in SUBCOMMANDS: each maps a name to a loader that
 * imports its module on demand (so `sov help` stays fast and one subcommand's
 * dependencies never load for another) and returns a `main(argv)` resolving to an exit code.
 *
 *   sov relay [--port N] [--host ADDR] [--data DIR] [--static DIR | --no-app] [--origin URL]… [--tls-cert FILE --tls-key FILE]
 *             [--tap FILE] [--heartbeat S] [--founding open|closed]
 *   sov node --role server|archive --data DIR [--name NAME] [--join | --restore KIT | --found --relay URL]
 *            [--api 127.0.0.1:PORT]   (cli/node.ts)
 *   sov object write --csv FILE --out DIR [...]   (cli/objects.ts)
 *   sov parquet read FILE --footer-key KEY [...]  (cli/objects.ts)
 *   sov bench ...            (bench/run.ts, maintained with the benchmarks)
 *   sov help | --help, sov COMMAND --help (help.ts), sov --version
 *
 * Exit codes: 0 success (help and version too), 1 runtime failure, 2 usage error.
 */
import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { basename, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { MCP_HELP, NODE_HELP, OBJECT_HELP, OVERVIEW, PARQUET_HELP, RELAY_HELP } from './help.js';
import { parseOrigin } from '../relay/origins.js';

/** Resolves to the exit code; anything that is not a number counts as 0. */
type SubcommandMain = (argv: readonly string[]) => unknown;

interface Subcommand {
  readonly usage: string;
  /** What `sov COMMAND --help` prints (help.ts); absent when the command answers --help itself. */
  readonly help?: string;
  readonly load: () => Promise<SubcommandMain>;
}

const OBJECT_USAGE =
  'object write --csv FILE --out DIR [--row-group-size N] [--domain D] [--table T] [--time-column C] [--print-dek] [--print-secret]';
const PARQUET_USAGE =
  'parquet read FILE --footer-key KEY [--column-key PATH=KEY]… [--aad-prefix TEXT] [--duckdb-no-aad] [--csv OUT]';

// ---- subcommands: add new ones here -------------------------------------------------

const SUBCOMMANDS: Readonly<Record<string, Subcommand>> = {
  relay: {
    usage:
      'relay [--port N] [--host ADDR] [--data DIR] [--static DIR | --no-app] [--origin URL]… [--tls-cert FILE --tls-key FILE] [--tap FILE] [--heartbeat S] [--founding open|closed]',
    help: RELAY_HELP,
    load: () => Promise.resolve(relayMain),
  },
  node: {
    usage:
      'node --role server|archive --data DIR [--name NAME] [--join | --restore KIT | --found --relay URL] [--api 127.0.0.1:PORT] [--serve-app ADDR:PORT [--static DIR] [--tls-cert FILE --tls-key FILE]]',
    help: NODE_HELP,
    load: async () => (await import('./node.js')).nodeMain,
  },
  mcp: {
    usage: 'mcp --data DIR [--mcp-tools NAME,…] [--mcp-domains DOMAIN,…]   (a running node’s API over MCP, stdio)',
    help: MCP_HELP,
    load: async () => (await import('../node-api/mcp.js')).mcpMain,
  },
  object: {
    usage: OBJECT_USAGE,
    help: OBJECT_HELP,
    load: async () => {
      const { objectMain, withUsage } = await import('./objects.js');
      return withUsage(objectMain, OBJECT_USAGE);
    },
  },
  parquet: {
    usage: PARQUET_USAGE,
    help: PARQUET_HELP,
    load: async () => {
      const { parquetMain, withUsage } = await import('./objects.js');
      return withUsage(parquetMain, PARQUET_USAGE);
    },
  },
  bench: {
    usage: 'bench [options]      run the benchmarks (see bench/)',
    load: () => loadMain(new URL('../../bench/run.ts', import.meta.url).href),
  },
};

// --------------------------------------------------------------------------------------

async function loadMain(specifier: string): Promise<SubcommandMain> {
  const mod: unknown = await import(specifier);
  const main = typeof mod === 'object' && mod !== null ? (mod as { main?: unknown }).main : undefined;
  if (typeof main !== 'function') throw new Error(`sov: ${specifier} does not export main(argv)`);
  return main as SubcommandMain;
}

function usage(): string {
  const lines = Object.values(SUBCOMMANDS).map((c) => `  sov ${c.usage}`);
  return ['usage:', ...lines, '  sov help', '  sov COMMAND --help', '  sov --version'].join('\n') + '\n';
}

/**
 * A reader that stops early (`sov parquet read … | head -1`) closes the pipe: what was
 * asked for has been read, so the command ends quietly instead of dying on EPIPE.
 */
function quietOnClosedPipe(): void {
  process.stdout.on('error', (e: NodeJS.ErrnoException) => {
    if (e.code !== 'EPIPE') throw e;
    process.exit(process.exitCode ?? 0);
  });
}

const asksHelp = (arg: string | undefined): boolean => arg === '--help' || arg === '-h' || arg === 'help';

/** The package's version, from package.json beside src/. */
function version(): string {
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version?: string };
  return pkg.version ?? 'unknown';
}

export async function main(argv: readonly string[]): Promise<number> {
  quietOnClosedPipe();
  const [name, ...rest] = argv;
  if (asksHelp(name)) {
    process.stdout.write(OVERVIEW);
    return 0;
  }
  if (name === '--version' || name === '-V' || name === 'version') {
    process.stdout.write(`sov ${version()}\n`);
    return 0;
  }
  const command = name === undefined ? undefined : SUBCOMMANDS[name];
  if (command === undefined) {
    if (name !== undefined) process.stderr.write(`sov: unknown command '${name}'\n`);
    process.stderr.write(usage());
    return 2;
  }
  // `sov object --help` and `sov object write --help` alike; bench answers it itself.
  if (command.help && rest.some((arg) => arg === '--help' || arg === '-h')) {
    process.stdout.write(command.help);
    return 0;
  }
  try {
    const run = await command.load();
    const code = await run(rest);
    return typeof code === 'number' ? code : 0;
  } catch (e) {
    process.stderr.write(`sov ${name}: ${(e as Error).message}\n`);
    return 1;
  }
}

// ---- sov relay ----------------------------------------------------------------------

const RELAY_OPTIONS = {
  port: { type: 'string' },
  host: { type: 'string' },
  data: { type: 'string' },
  static: { type: 'string' },
  'no-app': { type: 'boolean' },
  origin: { type: 'string', multiple: true },
  'tls-cert': { type: 'string' },
  'tls-key': { type: 'string' },
  tap: { type: 'string' },
  heartbeat: { type: 'string' },
  founding: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

const isLoopbackHost = (host: string): boolean => host === 'localhost' || host === '::1' || /^127\./.test(host);

function defaultDataDir(): string {
  const env = process.env['SOV_DATA_DIR'];
  if (env) return env;
  const xdg = process.env['XDG_DATA_HOME'] || join(homedir(), '.local', 'share');
  return join(xdg, 'sovereign-mesh');
}

function parsePort(text: string | undefined): number | undefined {
  if (text === undefined || text === '') return undefined;
  const port = Number(text);
  if (!/^\d+$/.test(text) || port > 65535) throw new Error(`bad port '${text}'`);
  return port;
}

interface RelayArgs {
  readonly port: number;
  readonly host: string;
  readonly dataDir: string;
  /** The built app to serve; undefined with --no-app. */
  readonly staticDir: string | undefined;
  /** Origins whose pages may use the relay besides its own (relay/origins.ts). */
  readonly origins: readonly string[];
  readonly tls: { readonly cert: Buffer; readonly key: Buffer } | undefined;
  readonly tap: string | undefined;
  /** Seconds between WebSocket pings; a socket that misses one is cut (default 30). */
  readonly heartbeatSeconds: number;
  /** Whether anyone may found a mesh here (see RELAY_HELP). */
  readonly founding: boolean;
}

function parseRelayArgs(argv: readonly string[]): RelayArgs | 'help' {
  const { values } = parseArgs({ args: [...argv], options: RELAY_OPTIONS, allowPositionals: false, strict: true });
  if (values.help) return 'help';
  const certFile = values['tls-cert'];
  const keyFile = values['tls-key'];
  if ((certFile === undefined) !== (keyFile === undefined)) throw new Error('--tls-cert and --tls-key go together');
  const host = values.host ?? '127.0.0.1';
  const founding = values.founding;
  const noApp = values['no-app'] ?? false;
  if (noApp && values.static !== undefined) throw new Error('--no-app serves no app: it excludes --static');
  const origins = (values.origin ?? []).map((o) => {
    try {
      return parseOrigin(o);
    } catch (e) {
      throw new Error(`--origin ${(e as Error).message}`, { cause: e });
    }
  });
  if (founding !== undefined && founding !== 'open' && founding !== 'closed')
    throw new Error(`--founding is open or closed, not '${founding}'`);
  return {
    port: parsePort(values.port) ?? parsePort(process.env['SOV_PORT']) ?? 8787,
    host,
    founding: founding === undefined ? isLoopbackHost(host) : founding === 'open',
    dataDir: resolve(values.data ?? defaultDataDir()),
    staticDir: noApp ? undefined : resolve(values.static ?? fileURLToPath(new URL('../../dist', import.meta.url))),
    origins,
    tls: certFile && keyFile ? { cert: readFileSync(certFile), key: readFileSync(keyFile) } : undefined,
    tap: values.tap === undefined ? undefined : resolve(values.tap),
    heartbeatSeconds: parseHeartbeat(values.heartbeat),
  };
}

function parseHeartbeat(text: string | undefined): number {
  if (text === undefined) return 30;
  const seconds = Number(text);
  if (!/^\d+$/.test(text) || seconds < 1 || seconds > 3600) throw new Error(`bad heartbeat '${text}' (1-3600 s)`);
  return seconds;
}

/** Resolves on the first SIGINT/SIGTERM; a second one exits at once. */
function untilSignal(): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    const onSignal = (signal: NodeJS.Signals): void => {
      process.once('SIGINT', () => process.exit(130));
      process.once('SIGTERM', () => process.exit(143));
      resolve(signal);
    };
    process.once('SIGINT', onSignal);
    process.once('SIGTERM', onSignal);
  });
}

async function relayMain(argv: readonly string[]): Promise<number> {
  let args: RelayArgs | 'help';
  try {
    args = parseRelayArgs(argv);
  } catch (e) {
    process.stderr.write(`sov relay: ${(e as Error).message}\n${usage()}`);
    return 2;
  }
  if (args === 'help') {
    process.stdout.write(RELAY_HELP);
    return 0;
  }
  const { startRelay } = await import('../relay/server.js');
  const { fileTap } = await import('../relay/tap.js');
  const relay = await startRelay({
    host: args.host,
    port: args.port,
    dataDir: args.dataDir,
    staticDir: args.staticDir,
    noApp: args.staticDir === undefined,
    origins: args.origins,
    tls: args.tls,
    tap: args.tap === undefined ? undefined : fileTap(args.tap),
    heartbeatMs: args.heartbeatSeconds * 1000,
    founding: args.founding,
  });
  process.stdout.write(`sov relay listening on ${relay.url} (data: ${args.dataDir})\n`);
  process.stdout.write(`sov relay: founding a new mesh here is ${args.founding ? 'open' : 'closed'}\n`);
  if (args.staticDir === undefined) process.stdout.write('sov relay: serving no app (--no-app)\n');
  else if (!existsSync(args.staticDir))
    process.stdout.write(`sov relay: no web app at ${args.staticDir} (npm run build)\n`);
  for (const origin of args.origins) process.stdout.write(`sov relay: pages from ${origin} may use it\n`);
  const signal = await untilSignal();
  process.stdout.write(`sov relay: ${signal}, closing\n`);
  await relay.close();
  return 0;
}

// ---- entry point ----------------------------------------------------------------------

/** True when run directly (`tsx src/cli/sov.ts`); the sov.mjs shim calls main itself. */
function isDirectRun(): boolean {
  const script = process.argv[1];
  return script !== undefined && basename(script) === 'sov.ts';
}

if (isDirectRun()) process.exitCode = await main(process.argv.slice(2));
