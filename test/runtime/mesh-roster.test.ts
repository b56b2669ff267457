/**
 * Who a machine deals with, read from keyring and roles rows (src/runtime/mesh-roster.ts):
 * peers never include itself or removed machines, the inviter counts as a peer before the
 * keyring names it, a removed machine's address is gone even if the ticket named it, and
 * the lists handed to the MLS worker and the relay follow the same rules.
 */
import { describe, expect, it } from 'vitest';
import type { Cell, RowState } from '../../src/core/merge.js';
import type { ColumnValue } from '../../src/core/schema.js';
import { MeshRoster } from '../../src/runtime/mesh-roster.js';

const stamp = { ms: 1, counter: 0, node: new Uint8Array(32) };
const cell = (value: ColumnValue): Cell => ({ value, stamp });
const SELF = { signer: 'a1', endpoint: 'e-a1' };
const INVITER = { endpoint: 'e-inv', frame: 'f-inv' };

function row(table: string, id: string, cells: Record<string, ColumnValue>, removed = false): RowState {
  return {
    table,
    row: id,
    cells: Object.fromEntries(Object.entries(cells).map(([k, v]) => [k, cell(v)])),
    ...(removed ? { removed: { hwm: 0, trustedHwm: 0 } } : {}),
  };
}

function fixture(anchors: string[] = ['a1'], anchorPeers = [INVITER]) {
  const tables: Record<string, RowState[]> = { keyring: [], roles: [] };
  const keyrings: { admitted: string[]; admins: string[] }[] = [];
  const roster = new MeshRoster({
    store: { rows: async (table: string) => tables[table] ?? [] },
    self: () => SELF,
    anchors: () => anchors,
    anchorPeers: () => anchorPeers,
    setKeyring: async (k) => void keyrings.push(k),
  });
  const machine = (signer: string, cols: Record<string, ColumnValue> = {}, removed = false) =>
    tables['keyring']!.push(
      row('keyring', signer, { endpoint: `e-${signer}`, frame: `f-${signer}`, name: signer, ...cols }, removed),
    );
  return { roster, tables, keyrings, machine };
}

describe('mesh roster', () => {
  it('delivers to live machines and the inviter, never to itself, removed machines or blank endpoints', async () => {
    const f = fixture();
    f.machine('a1');
    f.machine('b2');
    f.machine('c3', {}, true);
    f.tables['keyring']!.push(row('keyring', 'd4', { name: 'no endpoint yet' }));
    await f.roster.refresh();
    expect([...f.roster.peers].sort()).toEqual(['e-b2', 'e-inv']);
    expect(f.roster.others()).toEqual(['b2', 'd4']);
    expect(f.roster.removedSigners()).toEqual(new Set(['c3']));
    expect(f.roster.isPeer('e-c3')).toBe(false);
    expect(f.roster.peerAt('e-b2')?.signer).toBe('b2');
    // The inviter is a peer before the keyring names it, but no machine is known there.
    expect(f.roster.peerAt('e-inv')).toBeUndefined();
  });

  it('binds an endpoint to its keyring frame key, else the ticket, and a removed machine to none', async () => {
    const f = fixture(['a1'], [INVITER, { endpoint: 'e-c3', frame: 'f-ticket' }]);
    f.machine('b2');
    f.machine('c3', {}, true);
    await f.roster.refresh();
    expect(f.roster.addressOf('e-b2')).toEqual({ endpoint: 'e-b2', frame: 'f-b2' });
    expect(f.roster.addressOf('e-inv')).toEqual(INVITER);
    expect(f.roster.addressOf('e-c3')).toBeUndefined();
    expect(f.roster.addressOf('e-stranger')).toBeUndefined();
  });

  it('reports a machine that became trusted, not one that stopped being trusted', async () => {
    const f = fixture();
    f.machine('b2');
    expect(await f.roster.refresh()).toBe(false);
    f.tables['keyring']![0] = row('keyring', 'b2', { endpoint: 'e-b2', frame: 'f-b2', trusted: true });
    expect(await f.roster.refresh()).toBe(true);
    expect(await f.roster.refresh()).toBe(false);
    f.tables['keyring']![0] = row('keyring', 'b2', { endpoint: 'e-b2', frame: 'f-b2', trusted: false });
    expect(await f.roster.refresh()).toBe(false);
  });

  it('counts anchors and admin roles as admins, and a removed admin as neither admitted nor steward', async () => {
    const f = fixture(['a1']);
    f.machine('a1');
    f.machine('b2');
    f.machine('c3');
    f.machine('d4', {}, true);
    f.tables['roles']!.push(row('roles', 'c3', { role: 'admin' }), row('roles', 'd4', { role: 'admin' }));
    await f.roster.refresh();
    expect(f.roster.isAdmin()).toBe(true);
    expect(f.roster.isAdmin('b2')).toBe(false);
    expect(f.roster.isAdmin('c3')).toBe(true);
    await f.roster.syncKeyring(['new']);
    expect(f.keyrings.at(-1)).toEqual({ admitted: ['a1', 'b2', 'c3', 'new'], admins: ['a1', 'c3'] });
    const lists = f.roster.admission('e-joiner');
    expect(lists.endpoints).toEqual(['e-a1', 'e-a1', 'e-b2', 'e-c3', 'e-joiner']);
    expect(lists.stewards).toEqual(['e-a1', 'e-a1', 'e-c3']);
    expect(lists.admins).not.toContain('d4');
  });

  it('is no admin without an anchor or a role', async () => {
    const f = fixture([]);
    f.machine('a1');
    await f.roster.refresh();
    expect(f.roster.isAdmin()).toBe(false);
  });
});
