/**
 * A language tag `Intl` rejects (WebKit reports `C` under the C locale) must not take
 * the page down: formatting falls back to the first valid tag, or en-US.
 */
import { describe, expect, it } from 'vitest';
import { uiLocale, validLocale } from '../../src/app/locale.js';
import { missingFeatures, missingFeaturesMessage } from '../../src/app/features.js';

describe('locale fallback', () => {
  it('rejects tags Intl rejects and takes the first valid one', () => {
    expect(() => new Intl.NumberFormat('C')).toThrow(RangeError);
    expect(validLocale('C')).toBe(false);
    expect(validLocale('')).toBe(false);
    expect(validLocale(undefined)).toBe(false);
    expect(validLocale('de-CH')).toBe(true);
    expect(uiLocale(['C', 'C.UTF-8', 'de-CH', 'fr'])).toBe('de-CH');
    expect(uiLocale(['C', 'C.UTF-8', 'en_US.UTF-8'])).toBe('en-US');
    expect(uiLocale([])).toBe('en-US');
  });
});

describe('feature detection', () => {
  it('names what is missing and the versions that have it', () => {
    const missing = missingFeatures([
      { name: 'Web Locks', present: () => false },
      { name: 'IndexedDB', present: () => true },
      {
        name: 'WebCrypto',
        present: () => {
          throw new Error('a check that throws counts as missing');
        },
      },
    ]);
    expect(missing).toEqual(['Web Locks', 'WebCrypto']);
    expect(missingFeaturesMessage(missing)).toMatch(/lacks Web Locks, WebCrypto.*Safari 17.*Firefox 130/);
  });
});
