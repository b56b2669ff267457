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
import { basename, join } from 'node:path';
import { parseArgs } from 'node:util';
import { fromHex, toHex, utf8 } from '../core/bytes.js';
import { CsvParser, SchemaInference, checkHeader, checkWidth, csvRecord, toCell, type CsvError } from '../core/csv.js';
import { objectKeys } from '../core/object/keys.js';
import { ObjectWriter } from '../core/object/form.js';
import { openParquet, type ReadKeys } from '../core/parquet/read.js';
import type { CellValue, ColumnSpec } from '../core/parquet/schema.js';
import type { Result } from '../core/result.js';
import { webPmeCipher } from '../runtime/pme-cipher.js';
import { generateSigningIdentity, webRandom, webSigner } from '../runtime/webcrypto.js';

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

/** Streams a CSV file's records in batches of `batch`. */
async function* csvBatches(path: string, batch: number): AsyncGenerator<Result<string[][], CsvError>> {
  const parser = new CsvParser();
  let pending: string[][] = [];
  for await (const chunk of createReadStream(path, { encoding: 'utf8', highWaterMark: 1 << 20 })) {
    const records = parser.push(chunk as string);
    if (!records.ok) {
      yield records;
      return;
    }
    for (const r of records.value) pending.push(r);
    while (pending.length >= batch) {
      yield { ok: true, value: pending.slice(0, batch) };
      pending = pending.slice(batch);
    }
  }
  const last = parser.end();
  if (!last.ok) {
    yield last;
    return;
  }
  pending.push(...last.value.filter((r) => !(r.length === 1 && r[0] === '')));
  if (pending.length) yield { ok: true, value: pending };
}

/** Pass 1: the header and every column's type. */
async function inferCsv(path: string): Promise<Result<{ header: string[]; columns: ColumnSpec[] }, CsvError>> {
  let inference: SchemaInference | undefined;
  let header: string[] = [];
  let line = 0;
  for await (const batch of csvBatches(path, 10_000)) {
    if (!batch.ok) return batch;
    for (const record of batch.value) {
      line++;
      if (record.length === 1 && record[0] === '') continue;
      if (!inference) {
        const checked = checkHeader(record);
        if (!checked.ok) return checked;
        header = checked.value;
        inference = new SchemaInference(header);
        continue;
      }
      const width = checkWidth(record, header.length, line);
      if (!width.ok) return width;
      inference.observe(record);
    }
  }
  if (!inference) return { ok: false, error: { type: 'CsvHeader', detail: 'no header row' } };
  const columns = inference.schema();
  return columns.ok ? { ok: true, value: { header, columns: columns.value } } : columns;
}

function tableName(path: string): string {
  const name = basename(path)
    .replace(/\.[^.]*$/, '')
    .toLowerCase()
    .replace(/[^a-z0-9_]+/g, '_')
    .replace(/^[^a-z]+/, '');
  return name.slice(0, 64) || 'imported';
}

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
  const inferred = await inferCsv(values.csv).catch((e: unknown) => ({
    ok: false as const,
    error: { type: 'CsvUnreadable', detail: String(e) },
  }));
  if (!inferred.ok) return fail(`object write: ${values.csv}: ${describe(inferred.error)}`);
  const { columns } = inferred.value;
  const timeColumn = values['time-column'] ?? columns.find((c) => c.type === 'timestamp')?.name;

  await mkdir(values.out, { recursive: true });
  const partial = join(values.out, `.writing-${toHex(webRandom.bytes(8))}`);
  const file = await open(partial, 'w');
  try {
    const signer = webSigner(await generateSigningIdentity());
    const started = await ObjectWriter.start({
      domain: values.domain ?? 'GENERAL',
      table: values.table ?? tableName(values.csv),
      columns,
      ...(timeColumn !== undefined ? { timeColumn } : {}),
      signer,
      random: webRandom,
      cipher: webPmeCipher,
      hlc: { ms: Date.now(), counter: 0 },
      sink: async (bytes) => {
        await file.write(bytes);
      },
    });
    if (!started.ok) return fail(`object write: ${describe(started.error)}`);
    let first = true;
    let line = 0;
    for await (const batch of csvBatches(values.csv, groupRows)) {
      if (!batch.ok) return fail(`object write: ${describe(batch.error)}`);
      const records = first ? batch.value.slice(1) : batch.value;
      line += batch.value.length;
      first = false;
      if (records.length === 0) continue;
      const cells: Record<string, CellValue[]> = {};
      columns.forEach((c, i) => (cells[c.name] = records.map((r) => toCell(c.type, r[i] ?? ''))));
      const added = await started.value.add(cells);
      if (!added.ok) return fail(`object write: near line ${line}: ${describe(added.error)}`);
    }
    const formed = await started.value.finish();
    if (!formed.ok) return fail(`object write: ${describe(formed.error)}`);
    await file.close();
    const { storageId, secret, sealedManifest } = formed.value;
    await rename(partial, join(values.out, `${storageId}.parquet`));
    await writeFile(join(values.out, `${storageId}.manifest`), sealedManifest);
    const lines: string[] = [storageId];
    if (values['print-dek']) lines.push(`dek ${toHex(objectKeys(secret).dek)}`);
    if (values['print-secret']) lines.push(`secret ${toHex(secret)}`);
    process.stdout.write(lines.join('\n') + '\n');
    return 0;
  } finally {
    await file.close().catch(() => undefined);
    await rm(partial, { force: true });
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

function cellText(value: unknown, timestamp: boolean): string {
  if (value === null || value === undefined) return '';
  if (timestamp && typeof value === 'number') return new Date(value).toISOString();
  if (value instanceof Uint8Array) return toHex(value);
  if (value instanceof Date) return value.toISOString();
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'bigint' || typeof value === 'boolean') return value.toString();
  return JSON.stringify(value, (_, v: unknown) =>
    typeof v === 'bigint' ? v.toString() : v instanceof Uint8Array ? toHex(v) : v,
  );
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
  };
  const bytes = await readFile(positionals[0]!).catch((e: unknown) => e as Error);
  if (bytes instanceof Error) return fail(`parquet read: ${bytes.message}`);
  const file = await openParquet(new Uint8Array(bytes), keys, webPmeCipher);
  if (!file.ok) return fail(`parquet read: ${positionals[0]}: ${describe(file.error)}`);
  const rows = await file.value.readRows();
  if (!rows.ok) return fail(`parquet read: ${positionals[0]}: ${describe(rows.error)}`);
  const names = [...new Set(file.value.columns.map((c) => c.name))];
  const timestamps = new Set(
    file.value.metadata.schema
      .filter(
        (e) => e.logical_type?.type === 'TIMESTAMP' || e.converted_type?.startsWith('TIMESTAMP') || e.type === 'INT96',
      )
      .map((e) => e.name),
  );
  const out = [
    csvRecord(names),
    ...rows.value.map((row) => csvRecord(names.map((n) => cellText(row[n], timestamps.has(n))))),
  ].join('');
  if (values.csv) await writeFile(values.csv, out);
  else process.stdout.write(out);
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
