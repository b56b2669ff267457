/**
 * The background rewrap (src/runtime/rewrap-job.ts) against fakes: only admins run it, only
 * under a generation that carries history; what is left comes from the catalog each run, so
 * a second run finishes what the first left; objects some reader may not read are withheld
 * and counted; batches go to the key holder REWRAP_BATCH at a time, each written as one row of
 * records (core/object/access.ts batches) with progress after each; a group that changes
 * under the job, a refused rewrap or a refused write stops it with the reason.
 */
import { describe, expect, it } from 'vitest';
import { fromBase64Url } from '../../src/core/bytes.js';
import { decodeAccessBatch } from '../../src/core/object/access.js';
import { err, ok } from '../../src/core/result.js';
import type { DomainView } from '../../src/runtime/mls-service.js';
import type { CatalogEntry } from '../../src/runtime/object-service.js';
import { accessBatchKey, REWRAP_BATCH, RewrapJob, type RewrapProgress } from '../../src/runtime/rewrap-job.js';

/** Storage ids that differ in their first eight bytes, as batches name objects by them. */
const id = (n: number) => n.toString(16).padStart(16, '0').padEnd(64, 'e');
const B = REWRAP_BATCH;

function view(over: Partial<DomainView> = {}): DomainView {
  return {
    domain: 'LAB',
    group: '00',
    epoch: 3,
    members: ['aa', 'bb'],
    generations: [1, 2, 3],
    entitlements: [
      { machine: 'aa', history: 'full', fromGen: 1 },
      { machine: 'bb', history: 'forward', fromGen: 2 },
    ],
    historyGens: [3],
    removed: false,
    awaiting: false,
    ...over,
  };
}

/** `objects` by origin generation; each starts with one record under it. */
function fixture(origins: number[], over: { admin?: boolean; views?: () => DomainView[] } = {}) {
  const catalog = new Map<string, CatalogEntry>();
  origins.forEach((gen, n) =>
    catalog.set(id(n), {
      id: id(n),
      domain: 'LAB',
      producer: 'aa',
      sealedManifest: new Uint8Array(0),
      access: [{ gen, wrapped: new Uint8Array(60) }],
    }),
  );
  const log = {
    batches: [] as number[],
    rows: [] as string[],
    records: [] as number[],
    progress: [] as RewrapProgress[],
    reads: 0,
  };
  const fail = { rewrap: false, write: -1 };
  let current = view();
  const job = new RewrapJob({
    views: over.views ?? (() => [current]),
    isAdmin: () => over.admin ?? true,
    self: () => 'aa',
    catalog: async () => {
      log.reads++;
      return catalog;
    },
    rewrap: async (domain, gen, entries) => {
      log.batches.push(entries.length);
      if (fail.rewrap) return err({ type: 'GenerationMoved', domain, asked: gen, current: gen + 1 });
      return ok(entries.map((e) => ({ id: e.id, gen, wrapped: new Uint8Array(60) })));
    },
    writeAccess: async (row, value) => {
      if (log.rows.length === fail.write) return err({ type: 'InvalidEdit', reason: 'refused' });
      log.rows.push(row);
      const key = accessBatchKey(row);
      const bytes = fromBase64Url(value);
      const records = bytes && decodeAccessBatch(bytes);
      if (!key || !records?.ok) throw new Error(`not a batch row: ${row}`);
      log.records.push(records.value.length);
      for (const { prefix, wrapped } of records.value) {
        const entry = [...catalog.values()].find((e) => e.id.startsWith(prefix))!;
        catalog.set(entry.id, { ...entry, access: [...entry.access, { gen: key.gen, wrapped }] });
      }
      return ok({ outerId: 'x', resurrections: [] });
    },
    changed: () => void log.progress.push(...job.progress()),
  });
  return { job, log, fail, setView: (v: DomainView) => (current = v) };
}

describe('rewrap job', () => {
  it('rewraps, in batches, every object each reader may read; withholds the rest; a second run finds nothing left', async () => {
    // 2B + 50 objects from generation 2 (every reader entitled), 3 from generation 1 (bb is forward-only from 2).
    const n = 2 * B + 50;
    const f = fixture([...Array<number>(n).fill(2), 1, 1, 1]);
    await f.job.run();
    expect(f.log.batches).toEqual([B, B, 50]);
    expect(f.log.records).toEqual([B, B, 50]);
    expect(f.log.rows).toEqual([`LAB:aa:batch:3:${id(0)}`, `LAB:aa:batch:3:${id(B)}`, `LAB:aa:batch:3:${id(2 * B)}`]);
    expect(f.log.progress.map((p) => p.done)).toEqual([0, B, 2 * B, n]);
    expect(f.job.progress()).toEqual([{ domain: 'LAB', gen: 3, done: n, total: n, withheld: 3 }]);
    await f.job.run();
    expect(f.log.batches).toHaveLength(3);
    expect(f.job.progress()).toEqual([{ domain: 'LAB', gen: 3, done: n, total: n, withheld: 3 }]);
  });

  it('does nothing on a machine that is not an admin, or under a generation that carries no history', async () => {
    const notAdmin = fixture([2], { admin: false });
    await notAdmin.job.run();
    const fresh = fixture([2], { views: () => [view({ historyGens: [2] })] });
    await fresh.job.run();
    const gone = fixture([2], { views: () => [view({ removed: true }), view({ domain: 'X', awaiting: true })] });
    await gone.job.run();
    for (const f of [notAdmin, fresh, gone]) expect(f.log.batches).toEqual([]);
    expect(notAdmin.job.progress()).toEqual([]);
  });

  it('stops when the group changes under it, and the next run plans against the new group', async () => {
    const f = fixture(Array<number>(2 * B + 50).fill(2));
    const original = f.log.batches.push.bind(f.log.batches);
    f.log.batches.push = (n: number) => {
      // A forward-only machine joins (a new generation) while the first batch is out.
      f.setView(view({ generations: [1, 2, 3, 4], members: ['aa', 'bb', 'cc'], historyGens: [3] }));
      return original(n);
    };
    await f.job.run();
    expect([...f.log.batches]).toEqual([REWRAP_BATCH]);
    expect(f.job.progress()[0]?.done).toBe(B);
    expect(f.job.progress()[0]?.stopped).toContain('group changed');
    await f.job.run();
    // Generation 4 carries no history: nothing more is rewrapped.
    expect([...f.log.batches]).toEqual([REWRAP_BATCH]);
  });

  it('stops with the reason when the key holder or the state plane refuses, and resumes', async () => {
    const n = B + 50;
    const f = fixture(Array<number>(n).fill(2));
    f.fail.rewrap = true;
    await f.job.run();
    expect(f.job.progress()[0]).toMatchObject({ done: 0, total: n, stopped: 'GenerationMoved' });
    f.fail.rewrap = false;
    f.fail.write = 1;
    await f.job.run();
    expect(f.job.progress()[0]).toMatchObject({ done: B, stopped: 'InvalidEdit: refused' });
    f.fail.write = -1;
    await f.job.run();
    expect(f.log.records).toEqual([B, 50]);
    expect(f.job.progress()).toEqual([{ domain: 'LAB', gen: 3, done: n, total: n, withheld: 0 }]);
  });

  it('reads the catalog once a run for every domain, and not at all while no generation carries history', async () => {
    const lab = view();
    const other = view({ domain: 'SITE', group: '01' });
    const f = fixture([2, 2], { views: () => [lab, other] });
    await f.job.run();
    expect(f.log.reads).toBe(1);
    const quiet = fixture([2], { views: () => [view({ historyGens: [2] })] });
    await quiet.job.run();
    expect(quiet.log.reads).toBe(0);
  });
});
