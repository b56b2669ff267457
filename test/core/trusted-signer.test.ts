/**
 * Who counts as trusted (src/core/sync-manifest.ts `isTrustedSigner`, `narrower`): anchors and
 * admins always, members only when marked, removed or unknown machines never.
 */
import { describe, expect, it } from 'vitest';
import type { Stamp } from '../../src/core/hlc.js';
import type { RowState } from '../../src/core/merge.js';
import type { ReplicaTx } from '../../src/core/store.js';
import { everyTablePublic, isTrustedSigner, narrower } from '../../src/core/sync-manifest.js';
import { MemoryReplicaStore } from '../../src/storage/memory-store.js';

const stamp: Stamp = { ms: 1, counter: 0, node: new Uint8Array(32) };
const cell = (value: string | boolean) => ({ value, stamp });
const id = (c: string) => c.repeat(64);

const ROWS: RowState[] = [
  { table: 'keyring', row: id('a'), cells: { name: cell('admin') } },
  { table: 'roles', row: id('a'), cells: { role: cell('admin') } },
  { table: 'keyring', row: id('b'), cells: { name: cell('trusted member'), trusted: cell(true) } },
  { table: 'keyring', row: id('c'), cells: { name: cell('member') } },
  { table: 'roles', row: id('c'), cells: { role: cell('member') } },
  { table: 'keyring', row: id('d'), cells: { name: cell('untrusted'), trusted: cell(false) } },
  { table: 'keyring', row: id('e'), cells: { trusted: cell(true) }, removed: { hwm: 1, trustedHwm: 1 } },
  { table: 'roles', row: id('f'), cells: { role: cell('admin') } }, // an admin role without a keyring record
  // A roles record whose role cell is gone (or never written): no role, the keyring decides.
  { table: 'keyring', row: id('g'), cells: { trusted: cell(true) } },
  { table: 'roles', row: id('g'), cells: {} },
  { table: 'keyring', row: id('h'), cells: { name: cell('member') } },
  { table: 'roles', row: id('h'), cells: {} },
];

describe('isTrustedSigner', () => {
  it.each<[string, string, boolean]>([
    ['an anchor, with no record at all', id('9'), true],
    ['an admin by role', id('a'), true],
    ['a member marked trusted', id('b'), true],
    ['a member', id('c'), false],
    ['a member marked not trusted', id('d'), false],
    ['a removed machine, even marked trusted', id('e'), false],
    ['a role without a keyring record', id('f'), false],
    ['a member marked trusted whose roles record has no role', id('g'), true],
    ['a member whose roles record has no role', id('h'), false],
    ['a signer nobody knows', id('7'), false],
  ])('%s: %s', async (_name, signer, trusted) => {
    const store = new MemoryReplicaStore();
    await store.transact((tx) => {
      for (const row of ROWS) void tx.putRow(row);
    });
    const trust = { self: id('0'), anchors: () => [id('9')] };
    expect(await store.transact((tx) => isTrustedSigner(tx, signer, trust))).toBe(trusted);
  });
});

describe('everyTablePublic (for tests and benchmarks of delivery)', () => {
  it('holds every table as public and counts this machine as trusted', async () => {
    const tx = {} as ReplicaTx;
    expect(await everyTablePublic.classOf(tx, 'device_profiles')).toBe('public');
    expect(await everyTablePublic.selfTrusted(tx)).toBe(true);
  });
});

describe('narrower', () => {
  it('picks the narrower of two classes, either way round, and a class against itself', () => {
    expect(narrower('public', 'trusted')).toBe('trusted');
    expect(narrower('trusted', 'public')).toBe('trusted');
    expect(narrower('local', 'trusted')).toBe('local');
    expect(narrower('public', 'local')).toBe('local');
    expect(narrower('public', 'public')).toBe('public');
  });
});
