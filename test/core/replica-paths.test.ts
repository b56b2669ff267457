/**
 * Paths of a replica's admission that only particular envelopes take (core/replica.ts):
 * envelopes it cannot read, refused or held by their lane alone; parked envelopes (a chain
 * gap, a clock far ahead) delivered again; rejection records with their detail; and the exact
 * outcome when parking is full.
 */
import { describe, expect, it } from 'vitest';
import { rowValues } from '../../src/core/merge.js';
import { decodeSealed, encodeSealed, sealEvent, type SealLane } from '../../src/core/seal.js';
import type { PrivacyPolicy } from '../../src/core/sync-manifest.js';
import { makeMachine, makeMesh, seededRandom, type Machine, type Mesh } from '../helpers/deterministic.js';

async function write(m: Machine, row: string, name: string): Promise<void> {
  const result = await m.replica.write('device_profiles', row, { name });
  if (!result.ok) throw new Error(result.error.type);
}

/** A machine's own envelopes in log order. */
const ownOf = async (m: Machine) => (await m.store.entriesAfter(0, 100)).filter((e) => e.signer === m.id);

/** The event inside one of `m`'s envelopes, sealed again (a new outer id), in a lane of our choice. */
async function resealed(m: Machine, mesh: Mesh, sealedBytes: Uint8Array, lane?: SealLane): Promise<Uint8Array> {
  const sealed = decodeSealed(sealedBytes);
  if (!sealed.ok) throw new Error('fixture');
  const plain = await m.keyring.envelopes(seededRandom('open')).open(sealed.value);
  if (!plain.ok) throw new Error('fixture');
  return encodeSealed(sealEvent(plain.value, 'GENERAL', 1, mesh.keys.GENERAL, seededRandom(`again/${lane}`), lane));
}

describe('envelopes a machine cannot read', () => {
  it('are held by their lane alone: refused, then held opaque (lane kept) once they may be', async () => {
    const mesh = makeMesh('opaque-lanes');
    const a = makeMachine('A', 'opaque-lanes/A', mesh);
    mesh.anchors.push(a.id);
    const trust = { trusted: false };
    const privacy: PrivacyPolicy = { classOf: () => 'public', selfTrusted: () => trust.trusted };
    // R holds the CONTROL key only: A's device profiles are sealed to it.
    const r = makeMachine('R', 'opaque-lanes/R', mesh, { domains: ['CONTROL'], privacy });
    await write(a, 'p', 'pump');
    const [entry] = await ownOf(a);
    const trustedCopy = await resealed(a, mesh, entry!.sealed, 'trusted');
    const localCopy = await resealed(a, mesh, entry!.sealed, 'local');

    expect(await r.replica.ingest('a', [localCopy])).toMatchObject([
      { type: 'Withheld', error: { type: 'NotSyncable', table: '', lane: 'local' } },
    ]);
    expect(await r.replica.ingest('a', [trustedCopy])).toMatchObject([
      { type: 'Withheld', error: { type: 'NotEligible', table: '', lane: 'trusted' } },
    ]);
    // Withheld already: the same envelope again is a duplicate, and nothing is logged; it is not
    // remembered as held, so the copy sent once this machine may hold it is taken in.
    expect(await r.replica.ingest('a', [trustedCopy])).toMatchObject([{ type: 'Duplicate', withheld: true }]);
    expect(await r.store.lastPos()).toBe(0);
    expect((await r.store.withheld(10)).map((w) => [w.lane, w.table])).toEqual([
      ['local', ''],
      ['trusted', ''],
    ]);

    trust.trusted = true;
    expect(await r.replica.ingest('a', [trustedCopy])).toMatchObject([{ type: 'StoredOpaque' }]);
    const held = await r.store.entriesAfter(0, 10);
    expect(held.map((e) => [e.lane, e.eventId])).toEqual([['trusted', undefined]]);
    expect((await r.store.withheld(10)).map((w) => w.lane)).toEqual(['local']);
    // The public-lane original is held opaque with no lane.
    expect(await r.replica.ingest('a', [entry!.sealed])).toMatchObject([{ type: 'StoredOpaque' }]);
    expect((await r.store.entriesAfter(1, 10)).map((e) => e.lane)).toEqual([undefined]);
  });
});

describe('parked envelopes delivered again', () => {
  it('a chain gap parks once; the same envelope again is a duplicate', async () => {
    const mesh = makeMesh('parked-again');
    const a = makeMachine('A', 'parked-again/A', mesh);
    const b = makeMachine('B', 'parked-again/B', mesh);
    mesh.anchors.push(a.id);
    await write(a, 'p', 'one');
    await write(a, 'p', 'two');
    const [, second] = await ownOf(a);
    expect(await b.replica.ingest('a', [second!.sealed])).toMatchObject([{ type: 'Parked', reason: 'ChainGap' }]);
    expect(await b.replica.ingest('a', [second!.sealed])).toMatchObject([{ type: 'Duplicate' }]);
    expect(await b.store.parkedCount()).toBe(1);
  });

  it('a clock far ahead parks once; again it is a duplicate, also once it is applied', async () => {
    const mesh = makeMesh('skew-again');
    const a = makeMachine('A', 'skew-again/A', mesh);
    const s = makeMachine('S', 'skew-again/S', mesh, { maxSkewMs: 1000 });
    mesh.anchors.push(a.id);
    a.clock.advance(5000);
    await write(a, 'p', 'early');
    const [entry] = await ownOf(a);
    expect(await s.replica.ingest('a', [entry!.sealed])).toMatchObject([
      { type: 'Parked', reason: 'ClockSkew', detail: '5000 ms ahead (bound 1000 ms)' },
    ]);
    expect(await s.replica.ingest('a', [entry!.sealed])).toMatchObject([{ type: 'Duplicate' }]);
    expect(await s.store.parkedCount()).toBe(1);
    s.clock.advance(5000);
    expect(await s.replica.reevaluate()).toMatchObject([{ type: 'Applied' }]);
    expect(await s.replica.ingest('a', [entry!.sealed])).toMatchObject([{ type: 'Duplicate' }]);
  });

  it('parked, then withheld on a retry: forgotten as held, so a copy sent once it may hold it is taken in', async () => {
    const mesh = makeMesh('parked-withheld');
    const a = makeMachine('A', 'parked-withheld/A', mesh);
    const classes = { device_profiles: 'public' as 'public' | 'local' };
    const privacy: PrivacyPolicy = {
      classOf: (_tx, table) => (table === 'device_profiles' ? classes.device_profiles : 'public'),
      selfTrusted: () => false,
    };
    const s = makeMachine('S', 'parked-withheld/S', mesh, { privacy });
    mesh.anchors.push(a.id);
    await write(a, 'r', 'one');
    await write(a, 'r', 'two');
    const [first, second] = await ownOf(a);
    expect(await s.replica.ingest('a', [second!.sealed])).toMatchObject([{ type: 'Parked', reason: 'ChainGap' }]);
    // S narrows the table to local: the first is withheld, and the parked second with it on retry.
    classes.device_profiles = 'local';
    expect(await s.replica.ingest('a', [first!.sealed])).toMatchObject([{ type: 'Withheld' }]);
    await s.replica.reevaluate();
    expect(await s.store.parkedCount()).toBe(0);
    // The narrowing lifted, both are asked for again and both are taken in.
    classes.device_profiles = 'public';
    expect(await s.replica.wanted(10)).toHaveLength(2);
    const again = await s.replica.ingest('a', [first!.sealed, second!.sealed]);
    expect(again.map((o) => o.type)).toEqual(['Applied', 'Applied']);
    expect((await s.store.rows('device_profiles')).map((r) => rowValues(r)['name'])).toEqual(['two']);
  });

  it('defers with ParkingFull when parking is full, remembering nothing', async () => {
    const mesh = makeMesh('full');
    const a = makeMachine('A', 'full/A', mesh);
    const b = makeMachine('B', 'full/B', mesh, { maxParked: 1 });
    mesh.anchors.push(a.id);
    for (const name of ['one', 'two', 'three']) await write(a, 'p', name);
    const [, second, third] = await ownOf(a);
    const outcomes = await b.replica.ingest('a', [second!.sealed, third!.sealed], 3);
    expect(outcomes.map((o) => [o.type, 'reason' in o ? o.reason : undefined])).toEqual([
      ['Parked', 'ChainGap'],
      ['Deferred', 'ParkingFull'],
    ]);
    expect(await b.store.parkedCount()).toBe(1);
    expect(await b.store.watermark('a')).toBe(0);
  });
});

describe('rejection records', () => {
  it('keep the reason of a refusal that has one, and an empty detail otherwise', async () => {
    const mesh = makeMesh('records');
    const a = makeMachine('A', 'records/A', mesh);
    const m = makeMachine('M', 'records/M', mesh);
    const c = makeMachine('C', 'records/C', mesh);
    mesh.anchors.push(a.id);
    expect((await a.replica.write('keyring', m.id, { name: 'M', endpoint: m.id })).ok).toBe(true);
    const fromA = (await ownOf(a)).map((e) => e.sealed);
    await m.replica.ingest('a', fromA, fromA.length);
    await c.replica.ingest('a', fromA, fromA.length);
    await write(m, 'x', 'fine');
    const [good] = await ownOf(m);
    // A second, different event at M's seq 1: a fork, which has no reason text.
    const forked = makeMachine('M', 'records/M', mesh);
    await forked.replica.ingest('a', fromA, fromA.length);
    await write(forked, 'y', 'fork');
    const [fork] = await ownOf(forked);
    expect(await c.replica.ingest('m', [good!.sealed, fork!.sealed])).toMatchObject([
      { type: 'Applied' },
      { type: 'Rejected', error: { type: 'ChainFork' } },
    ]);
    expect((await c.store.rejections(10)).map((r) => [r.reason, r.detail, r.peer])).toEqual([['ChainFork', '', 'm']]);
  });
});
