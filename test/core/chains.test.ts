/**
 * Chain names and the created-domain marks a removal carries (src/core/chains.ts): the string
 * column `domain_hwms` written sorted and read back exactly, every malformed form refused.
 */
import { describe, expect, it } from 'vitest';
import { chainKey, chainSuffix, formatDomainMarks, parseDomainMarks } from '../../src/core/chains.js';

describe('chain names', () => {
  it('keep the bare signer for the public lane of the built-in domains, and add domain and lane otherwise', () => {
    expect(chainKey('ab', undefined)).toBe('ab');
    expect(chainKey('ab', 'public', 'GENERAL')).toBe('ab');
    expect(chainKey('ab', 'trusted', 'CONTROL')).toBe('ab/trusted');
    expect(chainKey('ab', 'public', 'RESTRICTED')).toBe('ab@RESTRICTED');
    expect(chainKey('ab', 'local', 'RESTRICTED')).toBe('ab@RESTRICTED/local');
    expect(chainSuffix(undefined, 'FIELD_2')).toBe('@FIELD_2');
  });

  it("name a created domain's generation, one chain per generation; never a built-in domain's", () => {
    expect(chainKey('ab', 'public', 'RESTRICTED', 3)).toBe('ab@RESTRICTED#3');
    expect(chainKey('ab', 'trusted', 'RESTRICTED', 12)).toBe('ab@RESTRICTED#12/trusted');
    expect(chainKey('ab', 'public', 'GENERAL', 2)).toBe('ab');
    expect(chainSuffix('trusted', 'CONTROL', 2)).toBe('/trusted');
  });
});

describe('domain marks (domain_hwms)', () => {
  it('are written sorted, "SUFFIX=seq" joined by commas, and read back to the same marks', () => {
    const marks = { '@ZETA/trusted': 2, '@ALPHA': 7, '@ZETA': 1, '@ZETA#2/trusted': 4, '@ALPHA#10': 3 };
    const text = formatDomainMarks(marks);
    expect(text).toBe('ALPHA#10=3,ALPHA=7,ZETA#2/trusted=4,ZETA/trusted=2,ZETA=1');
    expect(parseDomainMarks(text)).toEqual(marks);
    expect(formatDomainMarks({})).toBe('');
  });

  it('read an absent column and an empty one as no marks', () => {
    expect(parseDomainMarks(undefined)).toEqual({});
    expect(parseDomainMarks('')).toEqual({});
  });

  it.each([
    ['a number', 5],
    ['null', null],
    ['a list', ['A=1']],
    ['a lowercase domain', 'alpha=1'],
    ['a one-letter domain', 'A=1'],
    ['the public lane spelled out', 'ALPHA/public=1'],
    ['a missing seq', 'ALPHA='],
    ['a negative seq', 'ALPHA=-1'],
    ['a seq of sixteen digits', 'ALPHA=1234567890123456'],
    ['a trailing comma', 'ALPHA=1,'],
    ['a leading @', '@ALPHA=1'],
    ['spaces', 'ALPHA=1, BETA=2'],
    ['one chain twice', 'ALPHA=1,ALPHA=2'],
    ['generation 0', 'ALPHA#0=1'],
    ['a generation of eleven digits', 'ALPHA#12345678901=1'],
    ['a generation after the lane', 'ALPHA/trusted#2=1'],
    ['an empty generation', 'ALPHA#=1'],
  ])('refuse %s', (_, text) => {
    expect(parseDomainMarks(text)).toBeUndefined();
  });
});
