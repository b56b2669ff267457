/**
 * Who may write what (src/core/trust.ts `authorize`), as one table of verdicts over control
 * records kept in a real store: each write policy allowed and denied with its reason and
 * finality, and a removed signer's events revoked exactly above the mark of their chain.
 */
import { describe, expect, it } from 'vitest';
import { fromHex } from '../../src/core/bytes.js';
import { ZERO_HASH, type EventBody } from '../../src/core/event.js';
import type { Stamp } from '../../src/core/hlc.js';
import type { RowState } from '../../src/core/merge.js';
import { authorize, type TrustContext } from '../../src/core/trust.js';
import { MemoryReplicaStore } from '../../src/storage/memory-store.js';

const ADMIN = 'aa'.repeat(32);
const MEMBER = 'bb'.repeat(32);
const GONE = 'cc'.repeat(32);
const STRANGER = 'dd'.repeat(32);
const GONE_EARLY = 'ff'.repeat(32);
const SELF = 'ee'.repeat(32);
const NO_ROLE = '12'.repeat(32);
const stamp: Stamp = { ms: 1, counter: 0, node: new Uint8Array(32) };
const cell = (value: string | boolean) => ({ value, stamp });

/** A store whose control records name a member, an admin by role, and a removed machine. */
async function storeWith(): Promise<MemoryReplicaStore> {
  const store = new MemoryReplicaStore();
  const rows: RowState[] = [
    { table: 'keyring', row: MEMBER, cells: { name: cell('member') } },
    { table: 'keyring', row: ADMIN, cells: { name: cell('admin') } },
    { table: 'roles', row: ADMIN, cells: { role: cell('admin') } },
    {
      table: 'keyring',
      row: GONE,
      cells: { name: cell('gone') },
      removed: { hwm: 5, trustedHwm: 2, domains: { '@FIELD': 3, '@FIELD/trusted': 1 } },
    },
    // A roles record without its role cell: no role granted, a member by the keyring.
    { table: 'keyring', row: NO_ROLE, cells: { name: cell('no role') } },
    { table: 'roles', row: NO_ROLE, cells: {} },
    // Removed by a machine that read no created domain: its removal names no chain marks at all.
    { table: 'keyring', row: GONE_EARLY, cells: { name: cell('gone early') }, removed: { hwm: 5, trustedHwm: 2 } },
  ];
  await store.transact((tx) => {
    for (const row of rows) void tx.putRow(row);
  });
  return store;
}

const trust: TrustContext = { self: SELF, anchors: () => [] };
const body = (signer: string, over: Partial<EventBody>): EventBody => ({
  v: 1,
  domain: 'CONTROL',
  signer: fromHex(signer)!,
  seq: 1,
  prev: ZERO_HASH,
  table: 'device_profiles',
  row: 'r',
  op: 'put',
  cols: {},
  hlc: { ms: 1, counter: 0 },
  ...over,
});

async function verdict(signer: string, over: Partial<EventBody>, context = trust) {
  const store = await storeWith();
  return store.transact((tx) => authorize(tx, body(signer, over), context));
}

describe('authorize', () => {
  it.each<[string, string, Partial<EventBody>, unknown]>([
    ['a member writes a member table', MEMBER, { domain: 'GENERAL' }, { type: 'Allowed', role: 'member' }],
    ['this machine, before the keyring names it', SELF, { domain: 'GENERAL' }, { type: 'Allowed', role: 'member' }],
    ['a signer nobody knows', STRANGER, { domain: 'GENERAL' }, { type: 'UnknownSigner', signer: STRANGER }],
    [
      'a member whose roles record has no role writes an admin table',
      NO_ROLE,
      { table: 'roles', row: MEMBER },
      { type: 'NotAuthorized', reason: 'admin role required', final: false },
    ],
    [
      'a member whose roles record has no role writes a member table',
      NO_ROLE,
      { domain: 'GENERAL' },
      { type: 'Allowed', role: 'member' },
    ],
    [
      'an admin by role writes an admin table',
      ADMIN,
      { table: 'roles', row: MEMBER },
      { type: 'Allowed', role: 'admin' },
    ],
    [
      'a member writes an admin table',
      MEMBER,
      { table: 'roles', row: MEMBER },
      { type: 'NotAuthorized', reason: 'admin role required', final: false },
    ],
    [
      'a member signs a release of the app',
      MEMBER,
      { table: 'releases', row: 'ab'.repeat(32), cols: { version: '0.1.0' } },
      { type: 'NotAuthorized', reason: 'admin role required', final: false },
    ],
    [
      'an admin signs a release of the app',
      ADMIN,
      { table: 'releases', row: 'ab'.repeat(32), cols: { version: '0.1.0' } },
      { type: 'Allowed', role: 'admin' },
    ],
    [
      'an admin removes itself',
      ADMIN,
      { table: 'keyring', row: ADMIN, op: 'remove' },
      { type: 'NotAuthorized', reason: 'a machine cannot remove itself', final: true },
    ],
    ['an admin removes another', ADMIN, { table: 'keyring', row: MEMBER, op: 'remove' }, { type: 'Allowed' }],
    ['a member binds itself', MEMBER, { table: 'bindings', row: 'x', cols: { signer: MEMBER } }, { type: 'Allowed' }],
    [
      'a member binds another signer',
      MEMBER,
      { table: 'bindings', row: 'x', cols: { signer: ADMIN } },
      { type: 'NotAuthorized', reason: 'only the bound signer or an admin', final: false },
    ],
    [
      'a member deletes a binding',
      MEMBER,
      { table: 'bindings', row: 'x', op: 'del' },
      { type: 'NotAuthorized', reason: 'only the bound signer or an admin', final: false },
    ],
    [
      'an admin binds another signer',
      ADMIN,
      { table: 'bindings', row: 'x', cols: { signer: MEMBER } },
      { type: 'Allowed' },
    ],
    ['a member vouches under its own id', MEMBER, { table: 'vouches', row: `${MEMBER}:1234` }, { type: 'Allowed' }],
    [
      'a member vouches under another id',
      MEMBER,
      { table: 'vouches', row: `${ADMIN}:1234` },
      { type: 'NotAuthorized', reason: 'row must start with the writer id', final: true },
    ],
    [
      'a member vouches with its id at the end',
      MEMBER,
      { table: 'vouches', row: `1234:${MEMBER}:` },
      { type: 'NotAuthorized', reason: 'row must start with the writer id', final: true },
    ],
    [
      'a catalog row named for its writer',
      MEMBER,
      { domain: 'FIELD', table: 'object_catalog', row: `FIELD:${MEMBER}:1` },
      { type: 'Allowed' },
    ],
    [
      'a catalog row named for another writer',
      MEMBER,
      { domain: 'FIELD', table: 'object_catalog', row: `FIELD:${ADMIN}:1` },
      { type: 'NotAuthorized', reason: 'row must name the writer after its domain', final: true },
    ],
    [
      'a table nobody defined',
      MEMBER,
      { table: 'nope' },
      { type: 'NotAuthorized', reason: 'unknown table', final: true },
    ],
  ])('%s', async (_name, signer, over, expected) => {
    expect(await verdict(signer, over)).toMatchObject(expected as object);
  });

  it('takes anchors as admins before any control record names them', async () => {
    const anchored: TrustContext = { self: SELF, anchors: () => [STRANGER] };
    expect(await verdict(STRANGER, { table: 'roles', row: MEMBER }, anchored)).toMatchObject({
      type: 'Allowed',
      role: 'admin',
    });
  });

  it.each<[string, Partial<EventBody>, number | 'allowed']>([
    ['public lane at the mark', { seq: 5, domain: 'GENERAL' }, 'allowed'],
    ['public lane above the mark', { seq: 6, domain: 'GENERAL' }, 5],
    ['trusted lane at its mark', { seq: 2, domain: 'GENERAL', lane: 'trusted' }, 'allowed'],
    ['trusted lane above its mark', { seq: 3, domain: 'GENERAL', lane: 'trusted' }, 2],
    [
      'a created domain at its mark',
      { seq: 3, domain: 'FIELD', table: 'field_notes', row: `FIELD:${GONE}:1` },
      'allowed',
    ],
    ['a created domain above its mark', { seq: 4, domain: 'FIELD', table: 'field_notes', row: `FIELD:${GONE}:1` }, 3],
    [
      'a created domain’s trusted lane above its mark',
      { seq: 2, domain: 'FIELD', lane: 'trusted', table: 'field_notes', row: `FIELD:${GONE}:1` },
      1,
    ],
    [
      'a created domain the removal names no mark for (fail closed)',
      { seq: 1, domain: 'OTHER', table: 'field_notes', row: `OTHER:${GONE}:1` },
      0,
    ],
    ['the local lane, which no removal speaks for', { seq: 99, domain: 'GENERAL', lane: 'local' }, 'allowed'],
  ])('a removed signer: %s', async (_name, over, hwm) => {
    const got = await verdict(GONE, over);
    if (hwm === 'allowed') expect(got).toMatchObject({ type: 'Allowed' });
    else expect(got).toEqual({ type: 'Revoked', signer: GONE, seq: over.seq, hwm });
  });

  it('a removal that names no created-domain marks revokes every event of a created domain', async () => {
    const over = { seq: 1, domain: 'FIELD', table: 'field_notes', row: `FIELD:${GONE_EARLY}:1` };
    expect(await verdict(GONE_EARLY, over)).toEqual({ type: 'Revoked', signer: GONE_EARLY, seq: 1, hwm: 0 });
    expect(await verdict(GONE_EARLY, { seq: 5, domain: 'GENERAL' })).toMatchObject({ type: 'Allowed' });
  });
});
