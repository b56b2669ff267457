/**
 * The entitlement table and history generations a key-generation package carries
 * (core/mls/kek.ts `ent`, `hist`): they round-trip under the admin's signature, a package
 * without them (an earlier version's) still opens, and every malformed entry is refused
 * as `KekPackageInvalid` even when the admin signed it.
 */
import { describe, expect, it } from 'vitest';
import { concat, toHex, utf8 } from '../../src/core/bytes.js';
import { decodeCbor, encodeCbor } from '../../src/core/cbor.js';
import { openKekPackage, signKekPackage } from '../../src/core/mls/kek.js';
import { seededRandom, unsafeTestingSigner } from '../helpers/deterministic.js';

const random = seededRandom('kek-table-tests');
const admin = unsafeTestingSigner('admin');
const expected = { domain: 'LAB', group: random.bytes(16), epoch: 7 };
const gens = [{ gen: 3, key: random.bytes(32) }];
const machines = [random.bytes(32), random.bytes(32)];
const entitlements = [
  { machine: toHex(machines[0]!), history: 'full' as const, fromGen: 1 },
  { machine: toHex(machines[1]!), history: 'forward' as const, fromGen: 3 },
];

const invalid = (reason: string) => ({ ok: false, error: { type: 'KekPackageInvalid', reason: `kek: ${reason}` } });

async function signedBody(m: Record<string, unknown>): Promise<Uint8Array> {
  const body = encodeCbor(m);
  return encodeCbor([body, await admin.sign(concat(utf8('sov/1/kek'), body))]);
}

async function body(): Promise<Record<string, unknown>> {
  const pkg = decodeCbor(
    await signKekPackage({ ...expected, gens, entitlements, historyGens: [2, 3] }, admin),
    1 << 18,
  );
  const inner = pkg.ok && decodeCbor((pkg.value as Uint8Array[])[0]!, 1 << 18);
  if (!inner || !inner.ok) throw new Error('decode');
  return inner.value as Record<string, unknown>;
}

describe("a key package's tables", () => {
  it('round-trip under the signature', async () => {
    const opened = openKekPackage(
      await signKekPackage({ ...expected, gens, entitlements, historyGens: [2, 3] }, admin),
      expected,
    );
    expect(opened).toEqual({
      ok: true,
      value: { ...expected, gens, by: admin.publicKey, entitlements, historyGens: [2, 3] },
    });
  });

  it('are absent from a package that carries none, which opens as before', async () => {
    const opened = openKekPackage(await signKekPackage({ ...expected, gens }, admin), expected);
    expect(opened.ok && 'entitlements' in opened.value).toBe(false);
    expect(opened.ok && 'historyGens' in opened.value).toBe(false);
  });

  it('leave out a table entry whose machine is not a 32-byte key', async () => {
    const bad = [...entitlements, { machine: 'zz', history: 'full' as const, fromGen: 1 }];
    const opened = openKekPackage(await signKekPackage({ ...expected, gens, entitlements: bad }, admin), expected);
    expect(opened.ok && opened.value.entitlements).toEqual(entitlements);
  });

  it.each<[string, (m: Record<string, unknown>) => void, string]>([
    ['a table that is not a list', (m) => (m['ent'] = 5), 'entitlements'],
    ['an entry of two fields', (m) => (m['ent'] = [[machines[0], 'full']]), 'entitlements'],
    ['a short machine key', (m) => (m['ent'] = [[random.bytes(31), 'full', 1]]), 'entitlements'],
    ['an unknown history', (m) => (m['ent'] = [[machines[0], 'partial', 1]]), 'entitlements'],
    ['generation 0', (m) => (m['ent'] = [[machines[0], 'forward', 0]]), 'entitlements'],
    ['a fractional generation', (m) => (m['ent'] = [[machines[0], 'forward', 1.5]]), 'entitlements'],
    ['history generations that are not a list', (m) => (m['hist'] = 'x'), 'history generations'],
    ['a history generation of 0', (m) => (m['hist'] = [2, 0]), 'history generations'],
    ['a text history generation', (m) => (m['hist'] = ['2']), 'history generations'],
    ['an unknown field', (m) => (m['extra'] = 1), 'fields'],
  ])('refuse %s', async (_, edit, reason) => {
    const m = await body();
    edit(m);
    expect(openKekPackage(await signedBody(m), expected)).toEqual(invalid(reason));
  });

  it('carry as many entries as a package may', async () => {
    const m = await body();
    m['ent'] = Array.from({ length: 4096 }, () => [machines[0], 'full', 1]);
    m['hist'] = Array.from({ length: 1024 }, (_, i) => i + 1);
    const opened = openKekPackage(await signedBody(m), expected);
    expect(opened.ok && [opened.value.entitlements?.length, opened.value.historyGens?.length]).toEqual([4096, 1024]);
  });

  it('refuse more entries than a package may carry', async () => {
    const m = await body();
    m['ent'] = Array.from({ length: 4097 }, () => [machines[0], 'full', 1]);
    expect(openKekPackage(await signedBody(m), expected)).toEqual(invalid('entitlements'));
    const n = await body();
    n['hist'] = Array.from({ length: 1025 }, (_, i) => i + 1);
    expect(openKekPackage(await signedBody(n), expected)).toEqual(invalid('history generations'));
  });
});
