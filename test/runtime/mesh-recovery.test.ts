/**
 * MeshRecovery's own decisions, over stand-in ports (the formats and the crypto are proved in
 * test/core/recovery.test.ts, the whole path through a real relay in test/cli/recovery.test.ts):
 *   - when the periodic checkpoint is due: kits exist, an admin, an hour since the last, and
 *     something changed (the log grew or the kits did);
 *   - a restore reads the relay's roots page by page and judges each page with the best root so
 *     far, so the newest root wins wherever it sorts, and only a page is held at a time;
 *   - a restore whose checkpoint lacks key generations some objects or records need says
 *     `key-history`, naming them, and the machine stays recovering.
 */
import { describe, expect, it } from 'vitest';
import { err, ok, type Result } from '../../src/core/result.js';
import type { DomainName } from '../../src/core/schema.js';
import type { ChosenRoot } from '../../src/runtime/crypto-recovery.js';
import { MeshMetaKeeper, type MeshMeta } from '../../src/runtime/mesh-meta.js';
import type { MeshObjects } from '../../src/runtime/mesh-objects.js';
import { CHECKPOINT_EVERY_MS, MeshRecovery, type RecoveryWiring } from '../../src/runtime/mesh-recovery.js';
import type { RootsPage } from '../../src/runtime/recovery-objects.js';

const ADMIN = 'aa'.repeat(32);
const KIT = { signer: 'bb'.repeat(32), frame: 'cc'.repeat(32) };

type Catalog = { id: string; domain: DomainName; gens: number[] }[];

/** A root is one byte here: its value is its time, 0 refuses to open, and 255 is signed by a non-admin. */
type World = {
  now: number;
  logEnd: number;
  kits: number;
  admin: boolean;
  checkpoints: number;
  pages: Uint8Array[][];
  judged: number[][];
  held: { domain: DomainName; gen: number }[];
  catalog: Catalog;
  unopened: Record<string, number>;
  becameMember: number;
};

function memoryMeta(initial?: MeshMeta): MeshMetaKeeper {
  const saved = new Map<string, unknown>(initial ? [['mesh', initial]] : []);
  return new MeshMetaKeeper(
    {
      getMeta: <T>(key: string) => Promise.resolve(saved.get(key) as T | undefined),
      setMeta: (key: string, value: unknown) => Promise.resolve(void saved.set(key, value)),
      deleteMeta: (key: string) => Promise.resolve(void saved.delete(key)),
    },
    () => Promise.resolve(),
  );
}

const member: MeshMeta = { status: 'member', relay: 'ws://127.0.0.1:1/ws', name: 'admin', anchors: [ADMIN] };
const recovering: MeshMeta = { ...member, status: 'recovering', name: 'recovered machine' };

function chosen(bytes: readonly Uint8Array[], setAside: readonly string[]): Result<ChosenRoot, never> | undefined {
  let best: ChosenRoot | undefined;
  for (const [index, b] of bytes.entries()) {
    const at = b[0]!;
    if (at === 0 || setAside.includes(`cp${at}`)) continue;
    if (!best || at > best.at) {
      best = { index, checkpointId: `cp${at}`, by: at === 255 ? 'ee'.repeat(32) : ADMIN, at, entries: 1, bytes: 1 };
    }
  }
  return best ? ok(best) : undefined;
}

async function setUp(world: World, meta: MeshMeta) {
  const keeper = memoryMeta(meta);
  await keeper.load();
  const objects = {
    putRecovery: () => {
      world.checkpoints++;
      return Promise.resolve(ok({ id: '00' }));
    },
    recoveryRoots: (after?: string): Promise<Result<RootsPage, never>> => {
      const at = after === undefined ? 0 : Number(after);
      const roots = world.pages[at] ?? [];
      const next = at + 1 < world.pages.length ? { next: String(at + 1) } : {};
      return Promise.resolve(ok({ roots, listed: roots.length, ...next }));
    },
    recoveryCheckpoint: () => Promise.resolve(ok(new Uint8Array(1))),
    catalogObjects: () => Promise.resolve(world.catalog),
    missingObjects: () => Promise.resolve(ok([])),
  } as unknown as MeshObjects;
  const crypto: RecoveryWiring['crypto'] = {
    makeKit: () => Promise.reject(new Error('not used')),
    importKit: () => Promise.reject(new Error('not used')),
    sealCheckpoint: () =>
      Promise.resolve(ok({ checkpoint: new Uint8Array(3), checkpointId: '11', root: new Uint8Array(1), rootId: '22' })),
    chooseRoot: (roots, setAside = []) => {
      world.judged.push(roots.map((r) => r[0]!));
      return Promise.resolve(chosen(roots, setAside) ?? err({ type: 'NoRoot', reason: 'none', refused: { Bad: 1 } }));
    },
    openCheckpoint: (id) => Promise.resolve(ok({ entries: [], by: id })) as never,
    adoptKeys: () => Promise.resolve(0),
    heldGenerations: () => Promise.resolve(world.held),
  };
  const recovery = new MeshRecovery({
    crypto,
    state: {
      checkpointEntries: () => Promise.resolve([]),
      restore: () => Promise.resolve({ applied: 3 }) as never,
      unopened: () => Promise.resolve(world.unopened),
      reopen: () => Promise.resolve(undefined) as never,
    },
    meta: keeper,
    roster: {
      isAdmin: (who?: string) => (who === undefined ? world.admin : who === ADMIN),
      recoveryKits: () => Array.from({ length: world.kits }, () => KIT) as never,
      refresh: () => Promise.resolve(true),
    },
    objects: () => objects,
    logEnd: () => Promise.resolve(world.logEnd),
    write: () => Promise.reject(new Error('not used')),
    pushAdmission: () => Promise.resolve(),
    becameMember: () => {
      world.becameMember++;
      return Promise.resolve();
    },
    changed: () => undefined,
    now: () => world.now,
  });
  return { recovery, meta: keeper };
}

const world = (over: Partial<World> = {}): World => ({
  now: 1_000_000_000,
  logEnd: 10,
  kits: 1,
  admin: true,
  checkpoints: 0,
  pages: [],
  judged: [],
  held: [{ domain: 'GENERAL', gen: 1 }],
  catalog: [{ id: 'o1', domain: 'GENERAL', gens: [1] }],
  unopened: {},
  becameMember: 0,
  ...over,
});

describe('the periodic checkpoint', () => {
  it('is written once kits exist, then an hour later only if the log or the kits changed', async () => {
    const w = world();
    const { recovery, meta } = await setUp(w, member);
    await recovery.maybeCheckpoint();
    expect(w.checkpoints).toBe(2); // the checkpoint and its root
    expect(meta.value?.checkpoint).toMatchObject({ at: w.now, kits: 1, logEnd: 10 });

    w.logEnd = 20;
    w.now += CHECKPOINT_EVERY_MS - 1;
    await recovery.maybeCheckpoint();
    expect(w.checkpoints).toBe(2); // not yet an hour

    w.logEnd = 10;
    w.now += 2;
    await recovery.maybeCheckpoint();
    expect(w.checkpoints).toBe(2); // an hour, but nothing changed

    w.kits = 2;
    await recovery.maybeCheckpoint();
    expect(w.checkpoints).toBe(4); // a kit was added
    expect(meta.value?.checkpoint).toMatchObject({ kits: 2 });

    w.now += CHECKPOINT_EVERY_MS;
    w.logEnd = 11;
    await recovery.maybeCheckpoint();
    expect(w.checkpoints).toBe(6); // the log grew
    expect(meta.value?.checkpoint).toMatchObject({ logEnd: 11 });
  });

  it('is not written without a kit, by a machine that is not an admin, or while recovering', async () => {
    for (const [over, meta] of [
      [{ kits: 0 }, member],
      [{ admin: false }, member],
      [{}, recovering],
    ] as const) {
      const w = world(over);
      const { recovery } = await setUp(w, meta);
      await recovery.maybeCheckpoint();
      expect(w.checkpoints).toBe(0);
    }
    const w = world({ kits: 0 });
    const { recovery } = await setUp(w, member);
    expect(await recovery.checkpoint()).toMatchObject({ ok: false, error: { type: 'NoKit' } });
  });
});

describe('a restore', () => {
  const root = (at: number) => Uint8Array.of(at);

  it('takes the newest root whichever page it is on, judging a page at a time with the best so far', async () => {
    const w = world({
      pages: [
        [root(3), root(0)],
        [root(9), root(4)],
        [root(0), root(7)],
      ],
    });
    const { recovery, meta } = await setUp(w, recovering);
    expect(await recovery.restore()).toMatchObject({ state: 'restored', checkpointAt: 9, objects: 1 });
    expect(w.judged).toEqual([
      [3, 0],
      [3, 9, 4],
      [9, 0, 7],
    ]);
    expect(meta.value?.status).toBe('member');
    expect(w.becameMember).toBe(1);
  });

  it("sets aside a non-admin's newer root and reads the pages again for an admin's", async () => {
    const w = world({ pages: [[root(5)], [root(255), root(0)]] });
    const { recovery } = await setUp(w, recovering);
    expect(await recovery.restore()).toMatchObject({ state: 'restored', checkpointAt: 5, by: ADMIN });
  });

  it('counts every root that did not open, over all pages, when none does', async () => {
    const w = world({ pages: [[root(0)], [root(0), root(0)]] });
    const { recovery, meta } = await setUp(w, recovering);
    const status = await recovery.restore();
    expect(status).toMatchObject({ state: 'incomplete', missing: [{ part: 'checkpoint' }] });
    expect(status.state === 'incomplete' && status.missing[0]!.reason).toBe(
      'none of the 3 recovery roots opens with this kit (2 Bad)',
    );
    expect(meta.value?.status).toBe('recovering');
  });

  it('says so when the relay holds no root at all', async () => {
    const w = world();
    const { recovery } = await setUp(w, recovering);
    const status = await recovery.restore();
    expect(status.state === 'incomplete' && status.missing[0]!.reason).toBe(
      'the relay holds no recovery root for this mesh',
    );
    expect(w.judged).toEqual([]);
  });

  it('names the key generations that neither the kit nor the checkpoint holds, and stays recovering', async () => {
    const w = world({
      pages: [[root(2)]],
      held: [{ domain: 'GENERAL', gen: 2 }],
      catalog: [
        { id: 'o1', domain: 'GENERAL', gens: [1] },
        { id: 'o2', domain: 'GENERAL', gens: [1, 2] },
        { id: 'o3', domain: 'PERSONAL', gens: [3, 4] },
      ],
      unopened: { 'GENERAL.0': 4 },
    });
    const { recovery, meta } = await setUp(w, recovering);
    const status = await recovery.restore();
    expect(status).toMatchObject({ state: 'incomplete', missing: [{ part: 'key-history' }] });
    expect(status.state === 'incomplete' && status.missing[0]!.reason).toBe(
      '2 object(s) and 4 record(s) need key generations neither the kit nor the checkpoint holds: ' +
        'GENERAL.1, PERSONAL.3, GENERAL.0',
    );
    expect(meta.value).toMatchObject({ status: 'recovering', recovery: { state: 'incomplete' } });
    expect(w.becameMember).toBe(0);
  });
});
