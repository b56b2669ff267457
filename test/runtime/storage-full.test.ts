/**
 * "Storage is full" told apart from other write failures (src/runtime/storage-full.ts), on
 * the errors the real stores throw: SQLite's SQLITE_FULL from better-sqlite3, IndexedDB's
 * QuotaExceededError as Dexie wraps it, and the same after comlink carried it to the page
 * (name and message kept, `inner` lost).
 */
import Database from 'better-sqlite3';
import Dexie from 'dexie';
import { describe, expect, it } from 'vitest';
import { formatBytes } from '../../src/app/locale.js';
import { isStorageFull } from '../../src/runtime/storage-full.js';

/** What comlink rebuilds on the other side of a worker boundary from a thrown error. */
const acrossComlink = (e: Error) => Object.assign(new Error(e.message), { name: e.name });

describe('storage full', () => {
  it('recognises SQLite running out of pages', () => {
    const db = new Database(':memory:');
    db.pragma('max_page_count = 8');
    db.exec('CREATE TABLE t (v BLOB)');
    let thrown: unknown;
    try {
      for (let i = 0; i < 100; i++) db.prepare('INSERT INTO t VALUES (?)').run(Buffer.alloc(4096, i));
    } catch (e) {
      thrown = e;
    }
    db.close();
    expect((thrown as { code?: string }).code).toBe('SQLITE_FULL');
    expect(isStorageFull(thrown)).toBe(true);
    expect(isStorageFull(acrossComlink(thrown as Error))).toBe(true);
  });

  it('recognises IndexedDB’s QuotaExceededError, raw, wrapped by Dexie, and across comlink', () => {
    const raw = new DOMException('The quota has been exceeded.', 'QuotaExceededError');
    expect(isStorageFull(raw)).toBe(true);
    const wrapped = new Dexie.AbortError('Transaction aborted', raw);
    expect(isStorageFull(wrapped)).toBe(true);
    expect(isStorageFull(acrossComlink(wrapped))).toBe(true);
    const mapped = new Dexie.QuotaExceededError('no room');
    expect(isStorageFull(acrossComlink(mapped))).toBe(true);
    // Chromium's report of a full disk under a Blob write (measured on a full tmpfs profile).
    expect(isStorageFull(acrossComlink(new Dexie.DataError('Failed to write blobs (IOError)')))).toBe(true);
    // Chromium's transaction error when LevelDB cannot append to its log (the same profile, small writes).
    const noSpace = new DOMException(
      'Connection is closing because of: IO error: …/000003.log: FILE_ERROR_NO_SPACE (ChromeMethodBFE: 3::WritableFileAppend::8)',
      'UnknownError',
    );
    expect(isStorageFull(acrossComlink(noSpace as Error))).toBe(true);
    expect(isStorageFull(new DOMException('Unknown error', 'UnknownError'))).toBe(false);
  });

  it('does not take other failures for a full store', () => {
    for (const e of [
      new Error('ConstraintError: key already exists'),
      new Dexie.AbortError('Transaction aborted', new Error('a bug')),
      new DOMException('The operation was aborted.', 'AbortError'),
      'relay: mailbox full',
      undefined,
      null,
      42,
    ]) {
      expect(isStorageFull(e)).toBe(false);
    }
  });

  it('follows a cycle of causes only so far', () => {
    const a: { name: string; message: string; cause?: unknown } = { name: 'Error', message: 'a' };
    a.cause = a;
    expect(isStorageFull(a)).toBe(false);
  });

  it('states sizes in binary units', () => {
    expect(formatBytes(0)).toBe('0 B');
    expect(formatBytes(1023)).toBe('1023 B');
    expect(formatBytes(1024)).toBe('1.0 KiB');
    expect(formatBytes(4.2 * 1024 ** 2)).toBe('4.2 MiB');
    expect(formatBytes(10 * 1024 ** 3)).toBe('10.0 GiB');
    expect(formatBytes(3 * 1024 ** 5)).toBe('3072.0 TiB');
  });
});
