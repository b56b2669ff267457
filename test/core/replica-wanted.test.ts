/**
 * What a machine asks its peers for again (core/replica.ts `wanted`): of the envelopes it
 * withheld, those it may hold now — never a local lane or a table held local here, a trusted
 * lane or table only once trusted — oldest first, at most `limit`; and how much a peer has
 * not acknowledged (`pendingFor`).
 */
import { describe, expect, it } from 'vitest';
import type { WithheldRecord } from '../../src/core/store.js';
import type { PrivacyClass, PrivacyPolicy } from '../../src/core/sync-manifest.js';
import { makeMachine, makeMesh } from '../helpers/deterministic.js';

function machine() {
  const state = { classes: {} as Record<string, PrivacyClass>, trusted: false };
  const privacy: PrivacyPolicy = {
    classOf: (_tx, table) => state.classes[table] ?? 'public',
    selfTrusted: () => state.trusted,
  };
  const mesh = makeMesh('wanted');
  const m = makeMachine('A', 'wanted/A', mesh, { fastSignatures: true, privacy });
  mesh.anchors.push(m.id);
  return { m, state };
}

const record = (outerId: string, table: string, lane: WithheldRecord['lane'], at: number): WithheldRecord => ({
  outerId,
  eventId: table === '' ? '' : `e-${outerId}`,
  chain: '',
  seq: 0,
  table,
  lane,
  reason: lane === 'local' ? 'NotSyncable' : 'NotEligible',
  at,
});

describe('asking for withheld envelopes again', () => {
  it('asks for nothing when nothing is withheld', async () => {
    const { m } = machine();
    expect(await m.replica.wanted(10)).toEqual([]);
  });

  it('asks only for what this machine may hold now', async () => {
    const { m, state } = machine();
    state.classes = { notes: 'trusted', field_notes: 'local' };
    const records = [
      record('unopened-trusted', '', 'trusted', 1),
      record('unopened-local', '', 'local', 2),
      record('public-row', 'device_profiles', 'public', 3),
      record('trusted-table', 'notes', 'public', 4),
      record('local-table', 'field_notes', 'public', 5),
      record('trusted-lane-row', 'device_profiles', 'trusted', 6),
    ];
    await m.store.transact(async (tx) => {
      for (const r of records) await tx.withhold(r);
    });
    expect(await m.replica.wanted(10)).toEqual(['public-row']);
    state.trusted = true;
    expect(await m.replica.wanted(10)).toEqual(['unopened-trusted', 'public-row', 'trusted-table', 'trusted-lane-row']);
    state.classes = {};
    expect(await m.replica.wanted(10)).toEqual([
      'unopened-trusted',
      'public-row',
      'trusted-table',
      'local-table',
      'trusted-lane-row',
    ]);
    // At most `limit`, oldest first.
    expect(await m.replica.wanted(2)).toEqual(['unopened-trusted', 'public-row']);
    expect(await m.replica.wanted(0)).toEqual([]);
  });
});

describe('what a peer has not acknowledged', () => {
  it('is the log past its cursor, never negative', async () => {
    const { m } = machine();
    expect(await m.replica.pendingFor('p')).toBe(0);
    for (const row of ['a', 'b', 'c'])
      expect((await m.replica.write('device_profiles', row, { name: row })).ok).toBe(true);
    expect(await m.replica.pendingFor('p')).toBe(3);
    await m.store.advanceCursor('p', 2);
    expect(await m.replica.pendingFor('p')).toBe(1);
    await m.store.advanceCursor('p', 3);
    expect(await m.replica.pendingFor('p')).toBe(0);
  });
});
