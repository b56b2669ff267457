/**
 * MeshWrites (src/runtime/mesh-writes.ts) with fakes: a write that lands tells the screen,
 * the other tabs and the peers, one that is refused tells nobody; edits a machine may not make
 * are refused before anything is signed; a removal is followed up only once it is written.
 */
import { describe, expect, it } from 'vitest';
import { err, ok } from '../../src/core/result.js';
import type { Resurrection } from '../../src/core/store.js';
import type { MeshMeta } from '../../src/runtime/mesh-meta.js';
import { MeshWrites, type WritesDeps } from '../../src/runtime/mesh-writes.js';

const RESURRECTION = { table: 'device_profiles', row: 'p1' } as unknown as Resurrection;

function fakes(options: { refuse?: boolean; reads?: boolean; member?: boolean } = {}) {
  const calls: string[] = [];
  let meta: MeshMeta | undefined = { status: 'member', relay: 'ws://x', name: 'm', anchors: [] };
  const outcome = () =>
    options.refuse
      ? Promise.resolve(err({ type: 'InvalidEdit' as const, reason: 'refused by the fake' }))
      : Promise.resolve(ok({ outerId: 'o', resurrections: [RESURRECTION] }));
  const deps: WritesDeps = {
    state: {
      write: (table: string, row: string, cols: Record<string, unknown>) => {
        calls.push(`write ${table} ${row} ${JSON.stringify(cols)}`);
        return outcome();
      },
      delete: (table: string, row: string) => {
        calls.push(`delete ${table} ${row}`);
        return outcome();
      },
      remove: (signer: string) => {
        calls.push(`remove ${signer}`);
        return outcome();
      },
      askAgain: async () => void calls.push('askAgain'),
      offerSoon: async () => void calls.push('offerSoon'),
    },
    feed: {
      rowsChanged: () => void calls.push('rowsChanged'),
      publish: async () => void calls.push('publish'),
      publishSoon: () => void calls.push('publishSoon'),
      notice: (_kind: string, text: string) => void calls.push(`notice ${text}`),
    },
    tabs: { announceChange: () => void calls.push('announce') },
    meta: {
      get value() {
        return meta;
      },
      save: async (next: MeshMeta) => {
        meta = next;
        calls.push(`save ${JSON.stringify(next.narrowing)}`);
      },
    },
    member: () => options.member ?? true,
    reads: () => options.reads ?? true,
    isLive: (signer) => signer === 'live',
    resurrected: (r) => void calls.push(`resurrected ${r.length}`),
    refreshPeers: async () => void calls.push('refreshPeers'),
    removed: async () => void calls.push('removed'),
  };
  return { writes: new MeshWrites(deps), calls };
}

describe('MeshWrites', () => {
  it('a write that lands tells the screen, the other tabs and the peers; a refused one tells nobody', async () => {
    const landed = fakes();
    expect((await landed.writes.editProfile('p1', { name: 'Pump' })).ok).toBe(true);
    expect(landed.calls).toEqual([
      'write device_profiles p1 {"name":"Pump"}',
      'rowsChanged',
      'resurrected 1',
      'announce',
      'offerSoon',
      'publishSoon',
    ]);
    const refused = fakes({ refuse: true });
    expect((await refused.writes.deleteProfile('p1')).ok).toBe(false);
    expect(refused.calls).toEqual(['delete device_profiles p1']);
  });

  it('refuses, before signing anything, what this machine may not write', async () => {
    const { writes, calls } = fakes({ reads: false });
    expect(await writes.writeNote('LAB', 't', 'x')).toMatchObject({ ok: false, error: { type: 'InvalidEdit' } });
    expect(await writes.setTrusted('stranger', true)).toMatchObject({ ok: false, error: { type: 'InvalidEdit' } });
    expect(await writes.setTableClass('keyring', 'local')).toMatchObject({ ok: false, error: { type: 'InvalidEdit' } });
    expect(calls).toEqual([]);
    const outsider = fakes({ member: false });
    expect((await outsider.writes.writeNote('GENERAL', 't', 'x')).ok).toBe(false);
    expect(outsider.calls).toEqual([]);
  });

  it('trusting a machine re-reads the peers; a note gets a row in its domain', async () => {
    const { writes, calls } = fakes();
    expect((await writes.setTrusted('live', true)).ok).toBe(true);
    expect(calls.slice(0, 2)).toEqual(['write keyring live {"trusted":true}', 'refreshPeers']);
    calls.length = 0;
    expect((await writes.writeNote('GENERAL', 'title', 'text', 'n1')).ok).toBe(true);
    expect(calls[0]).toBe('write field_notes GENERAL:n1 {"title":"title","text":"text"}');
  });

  it('follows a removal up only once it is written', async () => {
    const done = fakes();
    await done.writes.removeMachine('live');
    expect(done.calls.at(-1)).toBe('removed');
    const refused = fakes({ refuse: true });
    await refused.writes.removeMachine('live');
    expect(refused.calls).toEqual(['remove live']);
  });

  it('narrows a table on this machine only, keeps the other narrowings, and asks again when lifted', async () => {
    const { writes, calls } = fakes();
    await writes.narrowTable('device_profiles', 'local');
    await writes.narrowTable('field_notes', 'local');
    await writes.narrowTable('device_profiles', undefined);
    expect(calls.filter((c) => c.startsWith('save'))).toEqual([
      'save {"device_profiles":"local"}',
      'save {"device_profiles":"local","field_notes":"local"}',
      'save {"field_notes":"local"}',
    ]);
    expect(calls.filter((c) => c === 'askAgain')).toHaveLength(3);
    expect(calls.some((c) => c.startsWith('write'))).toBe(false);
  });

  it('writes any row of a known table it can seal for, and refuses the rest before signing', async () => {
    const { writes, calls } = fakes({ reads: false });
    expect(await writes.writeRow('no_such_table', 'r', { a: 1 })).toMatchObject({ error: { type: 'InvalidEdit' } });
    expect(await writes.writeRow('field_notes', 'LAB:n1', { text: 'x' })).toMatchObject({
      error: { type: 'InvalidEdit' },
    });
    expect(await writes.deleteRow('field_notes', 'no-domain')).toMatchObject({ error: { type: 'InvalidEdit' } });
    expect(calls).toEqual([]);
    const reader = fakes();
    expect((await reader.writes.writeRow('device_profiles', 'p1', { name: 'Pump' })).ok).toBe(true);
    expect((await reader.writes.deleteRow('device_profiles', 'p1')).ok).toBe(true);
    expect(reader.calls.filter((c) => /^(write|delete) /.test(c))).toEqual([
      'write device_profiles p1 {"name":"Pump"}',
      'delete device_profiles p1',
    ]);
  });
});
