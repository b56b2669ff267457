/**
 * `sov object write` and `sov parquet read`: the object plane from a shell,
 * for people and for tests (issue 6).
 *
 *   sov object write --csv FILE --out DIR [--row-group-size N] [--domain D] [--table T]
 *                    [--time-column C] [--print-dek] [--print-secret]
 *       Streams FILE twice — once to infer column types, once to write — into one
 *       encrypted object DIR/<storage_id>.parquet and its sealed, signed manifest
 *       DIR/<storage_id>.manifest; prints the storage_id. --print-dek adds the DEK
 *       in hex (for handing to another tool, such as DuckDB), --print-secret the
 *       object secret (from which the DEK and the manifest key derive). Neither
 *       is ever written to a file. The manifest is signed by a signing key made
 *       for this one run: a machine publishes objects under its own identity
 *       through the app, not through this command.
 *
 *   sov parquet read FILE --footer-key KEY [--column-key PATH=KEY]… [--aad-prefix TEXT] [--csv OUT]
 *       Reads any Parquet file, encrypted (PME) or not, and writes CSV with a
 *       header row to OUT (stdout by default). KEY is hex or `ascii:` followed by
 *       the key's characters.
 *
 * Errors go to stderr with exit code 1; usage errors exit 2.
 */
import { createReadStream } from 'node:fs';
import { mkdir, open, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { fromHex, toHex, utf8 } from '../core/bytes.js';
import { csvObject, parquetCsv, tableName } from '../core/object/csv-import.js';
import { objectKeys } from '../core/object/keys.js';
import { openParquet, type ReadKeys } from '../core/parquet/read.js';
import { webPmeCipher } from '../runtime/pme-cipher.js';
import { generateSigningIdentity, webRandom, webSigner } from '../runtime/webcrypto.js';
import { zstdCompression, zstdDecompressors } from '../runtime/zstd.js';

class UsageError extends Error {}

function fail(message: string): number {
  process.stderr.write(`sov: ${message}\n`);
  return 1;
}

const describe = (e: { type: string } & Record<string, unknown>): string =>
  `${e.type}${Object.entries(e)
    .filter(([k]) => k !== 'type')
    .map(([k, v]) => ` ${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`)
    .join('')}`;

/** A pass over a CSV file's text. */
const fileSource = (path: string) => () =>
  createReadStream(path, { encoding: 'utf8', highWaterMark: 1 << 20 }) as AsyncIterable<string>;

export async function objectMain(argv: readonly string[]): Promise<number> {
  const [sub, ...rest] = argv;
  if (sub !== 'write') throw new UsageError('object: expected `write`');
  const { values } = parseArgs({
    args: rest,
    strict: true,
    options: {
      csv: { type: 'string' },
      out: { type: 'string' },
      'row-group-size': { type: 'string' },
      domain: { type: 'string' },
      table: { type: 'string' },
      'time-column': { type: 'string' },
      'print-dek': { type: 'boolean' },
      'print-secret': { type: 'boolean' },
    },
  });
  if (!values.csv || !values.out) throw new UsageError('object write: --csv FILE and --out DIR are required');
  const groupRows = values['row-group-size'] === undefined ? 100_000 : Number(values['row-group-size']);
  if (!Number.isInteger(groupRows) || groupRows < 1 || groupRows > 10_000_000) {
    throw new UsageError('object write: --row-group-size must be a whole number from 1 to 10000000');
  }
  await mkdir(values.out, { recursive: true });
  const partial = join(values.out, `.writing-${toHex(webRandom.bytes(8))}`);
  const partialManifest = `${partial}.manifest`;
  const file = await open(partial, 'w');
  try {
    const formed = await csvObject(fileSource(values.csv), {
      domain: values.domain ?? 'GENERAL',
      table: values.table ?? tableName(values.csv),
      ...(values['time-column'] !== undefined ? { timeColumn: values['time-column'] } : {}),
      rowGroupRows: groupRows,
      signer: webSigner(await generateSigningIdentity()),
      random: webRandom,
      cipher: webPmeCipher,
      compression: await zstdCompression(),
      hlc: { ms: Date.now(), counter: 0 },
      sink: async (bytes) => {
        await file.write(bytes);
      },
    });
    if (!formed.ok) return fail(`object write: ${values.csv}: ${describe(formed.error)}`);
    await file.sync();
    await file.close();
    const { storageId, secret, sealedManifest } = formed.value;
    // Both files are whole on disk before either takes its name; the manifest, which names
    // the object to every reader, is renamed last. A crash leaves nothing, or at most a
    // .parquet without its .manifest, which no reader lists.
    const manifest = await open(partialManifest, 'w');
    try {
      await manifest.writeFile(sealedManifest);
      await manifest.sync();
    } finally {
      await manifest.close();
    }
    await rename(partial, join(values.out, `${storageId}.parquet`));
    await rename(partialManifest, join(values.out, `${storageId}.manifest`));
    await syncDirectory(values.out);
    const lines: string[] = [storageId];
    if (values['print-dek']) lines.push(`dek ${toHex(objectKeys(secret).dek)}`);
    if (values['print-secret']) lines.push(`secret ${toHex(secret)}`);
    process.stdout.write(lines.join('\n') + '\n');
    return 0;
  } finally {
    await file.close().catch(() => undefined);
    await rm(partial, { force: true });
    await rm(partialManifest, { force: true });
  }
}

/** Makes the renames in `dir` durable (POSIX: a directory's entries are synced through the directory). */
async function syncDirectory(dir: string): Promise<void> {
  const handle = await open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** A key given on the command line: hex, or `ascii:` and its characters. */
export function parseKey(text: string, what: string): Uint8Array {
  const key = text.startsWith('ascii:') ? utf8(text.slice(6)) : fromHex(text);
  if (!key || ![16, 24, 32].includes(key.length)) {
    throw new UsageError(`parquet read: ${what} must be 16, 24 or 32 bytes, as hex or ascii:TEXT`);
  }
  return key;
}

export async function parquetMain(argv: readonly string[]): Promise<number> {
  const [sub, ...rest] = argv;
  if (sub !== 'read') throw new UsageError('parquet: expected `read`');
  const { values, positionals } = parseArgs({
    args: rest,
    strict: true,
    allowPositionals: true,
    options: {
      'footer-key': { type: 'string' },
      'column-key': { type: 'string', multiple: true },
      'aad-prefix': { type: 'string' },
      'duckdb-no-aad': { type: 'boolean' },
      csv: { type: 'string' },
    },
  });
  if (positionals.length !== 1) throw new UsageError('parquet read: expected one FILE');
  const keys: ReadKeys = {
    ...(values['footer-key'] !== undefined ? { footerKey: parseKey(values['footer-key'], '--footer-key') } : {}),
    columnKeys: new Map(
      (values['column-key'] ?? []).map((spec) => {
        const at = spec.indexOf('=');
        if (at < 1) throw new UsageError('parquet read: --column-key takes PATH=KEY');
        return [spec.slice(0, at), parseKey(spec.slice(at + 1), `--column-key ${spec.slice(0, at)}`)] as const;
      }),
    ),
    ...(values['aad-prefix'] !== undefined ? { aadPrefix: utf8(values['aad-prefix']) } : {}),
    // DuckDB's own encrypted files bind no module to its place (read.ts `duckdbNoAad`): asked for by name only.
    ...(values['duckdb-no-aad'] ? { duckdbNoAad: true } : {}),
  };
  const bytes = await readFile(positionals[0]!).catch((e: unknown) => e as Error);
  if (bytes instanceof Error) return fail(`parquet read: ${bytes.message}`);
  const file = await openParquet(new Uint8Array(bytes), keys, webPmeCipher, {
    decompressors: await zstdDecompressors(),
  });
  if (!file.ok) return fail(`parquet read: ${positionals[0]}: ${describe(file.error)}`);
  const out = await parquetCsv(file.value);
  if (!out.ok) return fail(`parquet read: ${positionals[0]}: ${describe(out.error)}`);
  if (values.csv) await writeFile(values.csv, out.value);
  else process.stdout.write(out.value);
  return 0;
}

/** Runs a subcommand main, turning usage errors into exit code 2. */
export function withUsage(main: (argv: readonly string[]) => Promise<number>, usage: string) {
  return async (argv: readonly string[]): Promise<number> => {
    try {
      return await main(argv);
    } catch (e) {
      if (
        e instanceof UsageError ||
        (e instanceof Error && 'code' in e && String(e.code).startsWith('ERR_PARSE_ARGS'))
      ) {
        process.stderr.write(`sov: ${e.message}\nusage: sov ${usage}\n`);
        return 2;
      }
      throw e;
    }
  };
}
