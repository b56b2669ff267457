/**
 * The schema's name checks (core/schema.ts): a domain name is a string of the domain-name
 * shape, a role one of the roles — never a value that only reads like one once turned into
 * text (a one-element list).
 */
import { describe, expect, it } from 'vitest';
import { domainOf, isDomainName, isRole } from '../../src/core/schema.js';

describe('schema names', () => {
  it.each<[unknown, boolean]>([
    ['GENERAL', true],
    ['FIELD_2', true],
    ['general', false],
    ['', false],
    [['GENERAL'], false],
    [7, false],
  ])('isDomainName(%j) is %s', (value, expected) => {
    expect(isDomainName(value)).toBe(expected);
  });

  it.each<[unknown, boolean]>([
    ['admin', true],
    ['member', true],
    ['nobody', false],
    [['admin'], false],
    [undefined, false],
  ])('isRole(%j) is %s', (value, expected) => {
    expect(isRole(value)).toBe(expected);
  });

  it('finds a row’s domain in its name for tables whose rows name one, never CONTROL', () => {
    expect(domainOf('field_notes', 'FIELD:ab:1')).toBe('FIELD');
    expect(domainOf('field_notes', 'CONTROL:ab:1')).toBeUndefined();
    expect(domainOf('field_notes', 'no-domain')).toBeUndefined();
    expect(domainOf('device_profiles', 'anything')).toBe('GENERAL');
    expect(domainOf('no_such_table', 'x')).toBeUndefined();
  });
});
