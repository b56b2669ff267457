/**
 * A child process that reads Parquet files with our reader (core/parquet/read.ts), one
 * message at a time, and answers with the outcome: the file's columns read, or the typed
 * error, or — a fault — an exception that escaped. The fuzz test runs every mutant here,
 * so that an input which never finishes is caught by a deadline and the process ended,
 * instead of hanging the suite. A process, not a worker thread: a fatal V8 error (an array
 * grown past V8's limit, a heap exhausted) ends the whole process it happens in, and the
 * suite must survive it to name the mutant that caused it.
 */
import { openParquet, type ReadKeys } from '../../src/core/parquet/read.js';
import { webPmeCipher } from '../../src/runtime/pme-cipher.js';

export type ReadRequest = { readonly bytes: Uint8Array; readonly footerKey?: Uint8Array };
export type ReadOutcome =
  | { readonly t: 'read'; readonly rows: number }
  | { readonly t: 'refused'; readonly type: string }
  | { readonly t: 'threw'; readonly message: string };

async function outcome({ bytes, footerKey }: ReadRequest): Promise<ReadOutcome> {
  try {
    const keys: ReadKeys = footerKey ? { footerKey } : {};
    const file = await openParquet(bytes, keys, webPmeCipher);
    if (!file.ok) return { t: 'refused', type: file.error.type };
    const columns = await file.value.readColumns();
    if (!columns.ok) return { t: 'refused', type: columns.error.type };
    return { t: 'read', rows: file.value.rowCount };
  } catch (e) {
    return { t: 'threw', message: e instanceof Error ? `${e.name}: ${e.message}` : String(e) };
  }
}

process.on('message', (request: ReadRequest) => {
  void outcome(request).then((o) => process.send!(o));
});
// Loaded (tsx compiles this file and the reader on start): deadlines run from here.
process.send!('ready');
