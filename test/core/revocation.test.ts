/**
 * Revocation recounts (core/materialize.ts `recountRevocations`) that cascade: a removal made
 * by an admin whose own grant is later undone stops counting, so the events it revoked are
 * restored, the rows they touched are rebuilt, and a (delete, edit) pair that comes alive
 * again is reported once. The oracle is order: a machine that receives the same events in
 * another order must hold the same state (replicas converge on the set of events).
 */
import { describe, expect, it } from 'vitest';
import { toHex } from '../../src/core/bytes.js';
import { encodeCbor } from '../../src/core/cbor.js';
import { isAlive, rowValues, type RowState } from '../../src/core/merge.js';
import type { IngestOutcome } from '../../src/core/replica.js';
import { TABLES, type ColumnValue } from '../../src/core/schema.js';
import { decodeSealed, encodeSealed, sealEvent } from '../../src/core/seal.js';
import { makeMachine, makeMesh, seededRandom, type Machine, type Mesh } from '../helpers/deterministic.js';

async function mustWrite(m: Machine, table: string, row: string, cols: Record<string, ColumnValue>): Promise<string> {
  const result = await m.replica.write(table, row, cols);
  if (!result.ok) throw new Error(`write refused: ${result.error.type}`);
  return result.value.outerId;
}

async function mustDelete(m: Machine, table: string, row: string): Promise<void> {
  const result = await m.replica.delete(table, row);
  if (!result.ok) throw new Error(`delete refused: ${result.error.type}`);
}

/** The sealed envelopes a machine wrote itself, in order. */
const ownOf = async (m: Machine): Promise<Uint8Array[]> =>
  (await m.store.entriesAfter(0, 10_000)).filter((e) => e.signer === m.id).map((e) => e.sealed);

/** The live device profiles (a deleted row stays as a tombstone, not shown). */
const profiles = async (m: Machine) =>
  Object.fromEntries(
    (await m.store.rows('device_profiles')).filter((r) => isAlive(r)).map((r) => [r.row, rowValues(r)]),
  );

const stateOf = async (m: Machine): Promise<string> => {
  const all: RowState[] = [];
  for (const table of Object.keys(TABLES)) all.push(...(await m.store.rows(table)));
  all.sort((x, y) => (x.table + '\u0000' + x.row < y.table + '\u0000' + y.row ? -1 : 1));
  return toHex(encodeCbor(all));
};

const revokedOf = async (m: Machine, signer: string) =>
  (await m.store.entriesAfter(0, 10_000)).filter((e) => e.signer === signer).map((e) => e.revoked === true);

/** A mesh of five machines, the first its admin anchor. */
function meshOfFive(seed: string, names: readonly [string, string, string, string, string]) {
  const mesh = makeMesh(seed);
  const machines = names.map((n) => makeMachine(n, `${seed}/${n}`, mesh)) as [
    Machine,
    Machine,
    Machine,
    Machine,
    Machine,
  ];
  mesh.anchors.push(machines[0].id);
  return { mesh, machines };
}

/** `admin` puts each machine in the keyring. */
async function admit(admin: Machine, ...machines: Machine[]): Promise<void> {
  for (const m of machines) await mustWrite(admin, 'keyring', m.id, { name: m.name, endpoint: m.id });
}

/** The first envelope `m` wrote, its event sealed again (a new outer id). */
async function firstResealed(m: Machine, mesh: Mesh, domain: 'CONTROL' | 'GENERAL'): Promise<Uint8Array> {
  const sealed = decodeSealed((await ownOf(m))[0]!);
  if (!sealed.ok) throw new Error('fixture');
  const plain = await m.keyring.envelopes(seededRandom('open')).open(sealed.value);
  if (!plain.ok) throw new Error('fixture');
  return encodeSealed(sealEvent(plain.value, domain, 1, mesh.keys[domain], seededRandom(`reseal/${m.name}`)));
}

describe('a removal by an admin whose grant is undone', () => {
  it('stops counting: what it revoked is restored, rows rebuilt, a revived pair reported once', async () => {
    const { machines } = meshOfFive('cascade', ['A', 'D', 'B', 'O', 'P']);
    const [a, d, b, o, p] = machines;
    await admit(a, d, b, o, p);
    await mustWrite(a, 'roles', d.id, { role: 'admin' });
    await mustWrite(a, 'device_profiles', 'r', { name: 'one' });
    a.clock.advance(5);
    await mustDelete(a, 'device_profiles', 'r');
    const fromA = await ownOf(a);

    // B edits the deleted row later; D, an admin by A's grant, removes B before seeing any of it.
    await b.replica.ingest(a.id, fromA, fromA.length);
    b.clock.advance(50);
    await mustWrite(b, 'device_profiles', 'r', { name: 'two' });
    await d.replica.ingest(a.id, fromA, fromA.length);
    expect((await d.replica.remove(b.id)).ok).toBe(true);

    // O takes it all in: B's edit is above D's mark (0), so it is logged revoked and the row stays deleted.
    await o.replica.ingest(a.id, fromA, fromA.length);
    expect(await o.replica.ingest(d.id, await ownOf(d), 1)).toMatchObject([{ type: 'Applied', revoked: false }]);
    expect(await o.replica.ingest(b.id, await ownOf(b), 1)).toMatchObject([
      { type: 'Applied', revoked: true, resurrections: [] },
    ]);
    expect(await profiles(o)).toEqual({});
    expect(await revokedOf(o, b.id)).toEqual([true]);

    // A removes D at D's mark here (0): D's removal of B is revoked, so B's edit counts again.
    expect((await a.replica.remove(d.id)).ok).toBe(true);
    const removal = (await ownOf(a)).at(-1)!;
    const outcomes: IngestOutcome[] = await o.replica.ingest(a.id, [removal], fromA.length + 1);
    expect(outcomes).toHaveLength(1);
    const applied = outcomes[0]!;
    expect(applied.type).toBe('Applied');
    if (applied.type !== 'Applied') return;
    expect(applied.resurrections).toMatchObject([{ table: 'device_profiles', row: 'r' }]);
    expect(await revokedOf(o, d.id)).toEqual([true]);
    expect(await revokedOf(o, b.id)).toEqual([false]);
    expect(await profiles(o)).toEqual({ r: { name: 'two' } });
    expect((await o.store.rows('keyring')).find((r) => r.row === b.id)?.removed).toBeFalsy();

    // Delivered again, nothing is reported twice.
    expect(await o.replica.ingest(a.id, [removal], fromA.length + 1)).toMatchObject([{ type: 'Duplicate' }]);

    // Another order, the same state: P learns of D's removal before anything else of D or B.
    const allOfA = await ownOf(a);
    await p.replica.ingest(a.id, allOfA, allOfA.length);
    await p.replica.ingest(b.id, await ownOf(b), 1);
    await p.replica.ingest(d.id, await ownOf(d), 1);
    expect(await profiles(p)).toEqual({ r: { name: 'two' } });
    expect(await stateOf(p)).toBe(await stateOf(o));
  });

  it('a grant undone takes the grantee’s later control writes with it, in turn', async () => {
    const { mesh, machines } = meshOfFive('cascade-2', ['A', 'D', 'B', 'C', 'O']);
    const [a, d, b, c, o] = machines;
    await admit(a, d, b, o);
    await mustWrite(a, 'roles', d.id, { role: 'admin' });
    // D (admin by A) makes B an admin: only a role, B was admitted by A. B admits C; C writes a profile.
    await d.replica.ingest(a.id, await ownOf(a), 99);
    await mustWrite(d, 'roles', b.id, { role: 'admin' });
    for (const m of [b, c]) {
      await m.replica.ingest(a.id, await ownOf(a), 99);
      await m.replica.ingest(d.id, await ownOf(d), 99);
    }
    await mustWrite(b, 'keyring', c.id, { name: 'C', endpoint: c.id });
    await c.replica.ingest(b.id, await ownOf(b), 99);
    await mustWrite(c, 'device_profiles', 'x', { name: 'by C' });
    for (const [m, n] of [
      [a, 1],
      [d, 2],
      [b, 3],
      [c, 4],
    ] as const) {
      const outcomes = await o.replica.ingest(m.id, await ownOf(m), n);
      expect(outcomes.every((x) => x.type === 'Applied' && !x.revoked)).toBe(true);
    }
    expect(await profiles(o)).toEqual({ x: { name: 'by C' } });

    // A removes D before any of D's writes: B's role goes (a roles row alone changes), so B's
    // admission of C, so C's row.
    expect((await a.replica.remove(d.id)).ok).toBe(true);
    await o.replica.ingest(a.id, [(await ownOf(a)).at(-1)!], 6);
    expect(await revokedOf(o, d.id)).toEqual([true]);
    expect(await revokedOf(o, b.id)).toEqual([true]);
    expect(await revokedOf(o, c.id)).toEqual([true]);
    expect(await profiles(o)).toEqual({});
    expect((await o.store.rows('keyring')).map((r) => r.row).sort()).toEqual([b.id, d.id, o.id].sort());

    // C is unknown here now, but its event is logged: a re-sealed copy (new outer id) is a duplicate.
    const resealed = await firstResealed(c, mesh, 'GENERAL');
    expect(await o.replica.ingest(c.id, [resealed], 5)).toMatchObject([{ type: 'Duplicate' }]);
    // B is no admin here now, but its admission of C is logged: a re-sealed copy is a duplicate,
    // not parked as NotAuthorized.
    const copyOfB = await firstResealed(b, mesh, 'CONTROL');
    expect(await o.replica.ingest(b.id, [copyOfB], 6)).toMatchObject([{ type: 'Duplicate' }]);
    expect(await o.store.parkedCount()).toBe(0);
    expect(await o.store.rejections(10)).toEqual([]);
  });

  it('a control row that comes back when its writer is restored brings its signer’s events back, in turn', async () => {
    const { machines } = meshOfFive('cascade-3', ['A', 'D', 'E', 'X', 'O']);
    const [a, d, e, x, o] = machines;
    await admit(a, d, e, o);
    await mustWrite(a, 'roles', d.id, { role: 'admin' });
    await mustWrite(a, 'roles', e.id, { role: 'admin' });
    // D (admin by A) admits X; X writes a profile. E (admin by A) removes D before seeing any of D.
    await d.replica.ingest(a.id, await ownOf(a), 99);
    await mustWrite(d, 'keyring', x.id, { name: 'X', endpoint: x.id });
    await x.replica.ingest(a.id, await ownOf(a), 99);
    await x.replica.ingest(d.id, await ownOf(d), 99);
    await mustWrite(x, 'device_profiles', 'p', { name: 'by X' });
    await e.replica.ingest(a.id, await ownOf(a), 99);
    expect((await e.replica.remove(d.id)).ok).toBe(true);

    await o.replica.ingest(a.id, await ownOf(a), 1);
    await o.replica.ingest(d.id, await ownOf(d), 1);
    await o.replica.ingest(x.id, await ownOf(x), 1);
    expect(await profiles(o)).toEqual({ p: { name: 'by X' } });
    // E's removal of D takes D's admission of X with it, so X's row.
    await o.replica.ingest(e.id, await ownOf(e), 1);
    expect(await revokedOf(o, d.id)).toEqual([true]);
    expect(await revokedOf(o, x.id)).toEqual([true]);
    expect(await profiles(o)).toEqual({});
    expect((await o.store.rows('keyring')).some((r) => r.row === x.id)).toBe(false);

    // A removes E before E's removal: D is restored, X's keyring row comes back, and X's row with it.
    expect((await a.replica.remove(e.id)).ok).toBe(true);
    await o.replica.ingest(a.id, [(await ownOf(a)).at(-1)!], 2);
    expect(await revokedOf(o, e.id)).toEqual([true]);
    expect(await revokedOf(o, d.id)).toEqual([false]);
    expect(await revokedOf(o, x.id)).toEqual([false]);
    expect((await o.store.rows('keyring')).some((r) => r.row === x.id)).toBe(true);
    expect(await profiles(o)).toEqual({ p: { name: 'by X' } });
  });
});
