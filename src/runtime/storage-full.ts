/**
 * Telling "this device's storage is full" apart from every other failure to write, on every
 * store a machine runs: IndexedDB (a `QuotaExceededError`, raw or wrapped by Dexie; Chromium
 * reports a full disk under a Blob write as an `IOError`), and SQLite (`SQLITE_FULL`).
 *
 * Errors reach the page from the workers through comlink, which keeps an error's name and
 * message but not its `inner` or `cause`: so both the chain and the text are read.
 */

/** How deep an error's `inner` / `cause` chain is followed. */
const MAX_DEPTH = 8;

const FULL_NAMES = new Set(['QuotaExceededError']);
/** Texts the stores use for a full disk or an exhausted quota. */
const FULL_TEXT =
  /QuotaExceeded|quota (?:has been )?exceeded|SQLITE_FULL|database or disk is full|NO_SPACE|full disk|No space left|\(IOError\)/i;

/** True when `e` (or what it wraps) says that the store had no room for the write. */
export function isStorageFull(e: unknown): boolean {
  let at: unknown = e;
  for (let depth = 0; depth < MAX_DEPTH && at !== null && typeof at === 'object'; depth++) {
    const { name, message, code } = at as { name?: unknown; message?: unknown; code?: unknown };
    if (typeof name === 'string' && FULL_NAMES.has(name)) return true;
    if (code === 'SQLITE_FULL') return true;
    if (typeof message === 'string' && FULL_TEXT.test(message)) return true;
    const next = at as { inner?: unknown; cause?: unknown };
    at = next.inner ?? next.cause;
  }
  return typeof e === 'string' && FULL_TEXT.test(e);
}

/** What a person is told when a change could not be stored for want of room. */
export const STORAGE_FULL_TEXT =
  'Storage on this device is full, so this change was not saved. Everything saved before is kept, ' +
  'and nothing was sent. Free space on the device (other apps, downloads, other sites’ data in the ' +
  'browser settings), then try again.';

/** What a person is told when messages from other machines could not be stored for want of room. */
export const STORAGE_FULL_INBOUND_TEXT =
  'Storage on this device is full: changes from other machines wait at the relay and arrive again ' +
  'on their own once there is room. Nothing is lost.';

/** What a person is told when messages from other machines could not be stored for another reason. */
export function storeFailedText(e: unknown): string {
  return (
    `Changes from other machines could not be stored on this device (${String(e)}): they wait at the ` +
    'relay and arrive again on their own. If the device is out of space, free some.'
  );
}
