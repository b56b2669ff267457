/**
 * Locale-dependent formatting that cannot take the page down. A browser may report
 * a language tag that `Intl` rejects (WebKit reports `C` where the system locale is
 * `C`, and `new Intl.NumberFormat('C')` throws a RangeError); every format here goes
 * through the first tag `Intl` accepts, or `en-US`.
 */
const FALLBACK = 'en-US';

/** Whether `Intl` accepts `tag` as a language tag. */
export function validLocale(tag: string | undefined): tag is string {
  if (!tag) return false;
  try {
    return Intl.getCanonicalLocales(tag).length === 1;
  } catch {
    return false;
  }
}

/** The first of the browser's languages that `Intl` accepts, or `en-US`. */
export function uiLocale(languages: readonly string[] = browserLanguages()): string {
  return languages.find(validLocale) ?? FALLBACK;
}

function browserLanguages(): readonly string[] {
  if (typeof navigator === 'undefined') return [];
  // `languages` is missing in some embedded WebViews.
  return [...((navigator.languages as readonly string[] | undefined) ?? []), navigator.language];
}

let numbers: Intl.NumberFormat | undefined;

/** A count or measure in the user's number format (grouped digits). */
export function formatNumber(value: number): string {
  return (numbers ??= new Intl.NumberFormat(uiLocale())).format(value);
}

const BYTE_UNITS = ['KiB', 'MiB', 'GiB', 'TiB'] as const;

/** A size in bytes, in binary units (`812 B`, `4.2 MiB`, `10.0 GiB`). */
export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  let value = bytes / 1024;
  let unit = 0;
  while (value >= 1024 && unit < BYTE_UNITS.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${value.toFixed(1)} ${BYTE_UNITS[unit]}`;
}

/** A local wall-clock time (`12:04:31`). */
export function formatTime(ms: number): string {
  return new Date(ms).toLocaleTimeString(uiLocale());
}

/** A local date and time. */
export function formatDateTime(ms: number): string {
  return new Date(ms).toLocaleString(uiLocale());
}

/**
 * Runs `load` (a module import whose top level formats with `navigator.language`, as
 * uPlot's does) with `navigator.language` shadowed by a valid tag when the browser's
 * own is one `Intl` rejects; the shadow is removed afterwards.
 */
export async function withValidLanguage<T>(load: () => Promise<T>): Promise<T> {
  if (validLocale(navigator.language)) return load();
  Object.defineProperty(navigator, 'language', { value: uiLocale(), configurable: true });
  try {
    return await load();
  } finally {
    delete (navigator as { language?: string }).language;
  }
}
