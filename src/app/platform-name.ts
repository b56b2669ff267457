/**
 * A first name for this machine, from what the browser says it runs on ("Firefox on
 * Linux", "Safari on iPad"): what a person would call it until they type a better one.
 */
export function platformName(userAgent: string): string {
  const os = /iPad/.test(userAgent)
    ? 'iPad'
    : /iPhone/.test(userAgent)
      ? 'iPhone'
      : /Android/.test(userAgent)
        ? 'Android'
        : /Windows/.test(userAgent)
          ? 'Windows'
          : /Mac OS X|Macintosh/.test(userAgent)
            ? 'Mac'
            : /CrOS/.test(userAgent)
              ? 'ChromeOS'
              : /Linux/.test(userAgent)
                ? 'Linux'
                : '';
  const browser = /Firefox\//.test(userAgent)
    ? 'Firefox'
    : /Edg\//.test(userAgent)
      ? 'Edge'
      : /Chrom(e|ium)\//.test(userAgent)
        ? 'Chromium'
        : /Safari\//.test(userAgent)
          ? 'Safari'
          : '';
  if (browser && os) return `${browser} on ${os}`;
  return browser || os || 'this machine';
}
