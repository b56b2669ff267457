/**
 * Compaction in the core (core/object/compact.ts, query/plan.ts `setAside`): the inputs' rows
 * in a fixed order with their identities kept, deleted rows left out, columns an older object
 * lacks as nulls, `sup` naming the inputs; the planner then sets the inputs aside — in the
 * compaction's domain only — and of two compactions sharing an input, applies the earlier.
 */
import { describe, expect, it } from 'vitest';
import { toHex } from '../../src/core/bytes.js';
import {
  compactionCandidates,
  compactObjects,
  MAX_COMPACTED_ROWS,
  MAX_COMPACTION_INPUTS,
  supersessions,
  type CompactInput,
} from '../../src/core/object/compact.js';
import { formObject, type FormedObject } from '../../src/core/object/form.js';
import { objectKeys, type StorageId } from '../../src/core/object/keys.js';
import type { ObjectManifest } from '../../src/core/object/manifest.js';
import { openParquet } from '../../src/core/parquet/read.js';
import { ROW_ID_COLUMN, type CellValue, type ColumnSpec } from '../../src/core/parquet/schema.js';
import { execute } from '../../src/core/query/execute.js';
import { plan, setAside, tableSchema } from '../../src/core/query/plan.js';
import { bind } from '../../src/core/query/query.js';
import { parseSql } from '../../src/core/query/sql.js';
import { ok } from '../../src/core/result.js';
import { webPmeCipher } from '../../src/runtime/pme-cipher.js';
import { seededRandom, unsafeTestingSigner } from '../helpers/deterministic.js';

const signer = unsafeTestingSigner('compactor');
const OLD: ColumnSpec[] = [
  { name: 'time', type: 'timestamp', nullable: false },
  { name: 'v', type: 'int32', nullable: false },
];
const NEW: ColumnSpec[] = [...OLD, { name: 'note', type: 'string', nullable: true }];

async function object(seed: string, ms: number, rows: Record<string, CellValue>[], columns = OLD, domain = 'GENERAL') {
  const formed = await formObject(rows, {
    domain,
    table: 'readings',
    columns,
    timeColumn: 'time',
    signer,
    random: seededRandom(seed),
    cipher: webPmeCipher,
    hlc: { ms, counter: 0 },
    rowGroupRows: 2,
  });
  if (!formed.ok) throw new Error(JSON.stringify(formed.error));
  return formed.value;
}

async function input(o: FormedObject): Promise<CompactInput> {
  const file = await openParquet(o.bytes!, { footerKey: objectKeys(o.secret).dek }, webPmeCipher);
  if (!file.ok) throw new Error(file.error.type);
  return { manifest: o.manifest, file: file.value };
}

async function contents(o: FormedObject): Promise<{ rows: unknown[][]; ids: string[] }> {
  const { file } = await input(o);
  const names = o.manifest.schema.map((c) => c.name);
  const read = await file.readColumns({ columns: [...names, ROW_ID_COLUMN] });
  if (!read.ok) throw new Error(read.error.type);
  const n = o.manifest.rows;
  return {
    rows: Array.from({ length: n }, (_, i) => names.map((c): unknown => (read.value[c] as ArrayLike<unknown>)[i])),
    ids: Array.from(read.value[ROW_ID_COLUMN] as ArrayLike<Uint8Array>, toHex),
  };
}

async function query(objects: readonly FormedObject[], sql: string) {
  const manifests = objects.map((o) => o.manifest);
  const parsed = parseSql(sql);
  if (!parsed.ok) throw new Error(parsed.error.type);
  const bound = bind(parsed.value, tableSchema(manifests, 'readings'));
  if (!bound.ok) throw new Error(bound.error.type);
  const ran = await execute(manifests, bound.value, {
    open: async (m) => ok((await input(objects.find((o) => o.storageId === m.storageId)!)).file),
  });
  if (!ran.ok) throw new Error(ran.error.type);
  return ran.value.rows;
}

const rowsOf = (from: number, n: number) => Array.from({ length: n }, (_, i) => ({ time: from + i, v: from + i }));

describe('compacting objects', () => {
  it('keeps every row and its identity in a fixed order, leaves deleted rows out, names its inputs', async () => {
    const a = await object('a', 2, rowsOf(10, 3));
    const b = await object('b', 1, rowsOf(1, 3));
    const c = await object('c', 3, [{ time: 20, v: 20, note: 'late' }], NEW);
    const before = { a: await contents(a), b: await contents(b), c: await contents(c) };
    const deleted = before.a.ids[1]!;
    const compacted = await compactObjects([await input(a), await input(c), await input(b)], {
      signer,
      random: seededRandom('compaction'),
      cipher: webPmeCipher,
      hlc: { ms: 9, counter: 0 },
      keepRow: (id) => toHex(id) !== deleted,
    });
    if (!compacted.ok) throw new Error(JSON.stringify(compacted.error));
    const { formed, rows, dropped } = compacted.value;
    expect([rows, dropped]).toEqual([6, 1]);
    const m = formed.manifest;
    expect([m.domain, m.table, m.schema, m.time?.column, m.time?.min, m.time?.max]).toEqual([
      'GENERAL',
      'readings',
      NEW,
      'time',
      1,
      20,
    ]);
    expect(m.supersedes).toEqual([a.storageId, b.storageId, c.storageId].sort());
    const after = await contents(formed);
    // b (clock 1), then a (2) without its deleted row, then c (3); identities kept.
    expect(after.ids).toEqual([...before.b.ids, before.a.ids[0], before.a.ids[2], ...before.c.ids]);
    expect(after.rows.map((r) => [r[0], r[1], r[2]])).toEqual([
      [1, 1, null],
      [2, 2, null],
      [3, 3, null],
      [10, 10, null],
      [12, 12, null],
      [20, 20, 'late'],
    ]);
    // Queried together, the inputs are set aside: the same answer as before, less the deleted row.
    const all = [a, b, c, formed];
    expect(await query(all, 'SELECT count(*) AS n, sum(v) AS s FROM readings')).toEqual([[6, 48]]);
    expect(await query([a, b, c], 'SELECT count(*) AS n, sum(v) AS s FROM readings')).toEqual([[7, 59]]);
  });

  it('keeps shared partitions only, a time column only the newest schema has as one, and nulls for a column of another type', async () => {
    const TEXT_V: ColumnSpec[] = [
      { name: 'time', type: 'timestamp', nullable: false },
      { name: 'v', type: 'string', nullable: false },
    ];
    const form = async (
      seed: string,
      ms: number,
      columns: ColumnSpec[],
      rows: Record<string, CellValue>[],
      partitions: Record<string, string>,
      timeColumn?: string,
    ) => {
      const formed = await formObject(rows, {
        domain: 'GENERAL',
        table: 'readings',
        columns,
        ...(timeColumn ? { timeColumn } : {}),
        partitions,
        signer,
        random: seededRandom(seed),
        cipher: webPmeCipher,
        hlc: { ms, counter: 0 },
      });
      if (!formed.ok) throw new Error(JSON.stringify(formed.error));
      return formed.value;
    };
    const a = await form('p1', 1, TEXT_V, [{ time: 5, v: 'five' }], { site: 'north', kind: 'a' }, 'time');
    const b = await form('p2', 2, OLD, [{ time: 6, v: 6 }], { site: 'north', kind: 'b' });
    const compacted = await compactObjects([await input(b), await input(a)], {
      signer,
      random: seededRandom('p3'),
      cipher: webPmeCipher,
      hlc: { ms: 9, counter: 0 },
    });
    if (!compacted.ok) throw new Error(JSON.stringify(compacted.error));
    const m = compacted.value.formed.manifest;
    expect(m.partitions).toEqual({ site: 'north' });
    // The newest object (b) names no time column.
    expect(m.time).toBeUndefined();
    // a's `v` is text, not the table's int32: null in its row, so the column is nullable here.
    expect(m.schema).toEqual([OLD[0], { ...OLD[1], nullable: true }]);
    expect((await contents(compacted.value.formed)).rows).toEqual([
      [5, null],
      [6, 6],
    ]);
  });

  it('refuses fewer than two objects, mixed tables or domains, and a set whose every row is deleted', async () => {
    const a = await object('a2', 1, rowsOf(0, 2));
    const b = await object('b2', 2, rowsOf(5, 2));
    const lab = await object('lab', 3, rowsOf(9, 2), OLD, 'LAB');
    const opts = { signer, random: seededRandom('x'), cipher: webPmeCipher, hlc: { ms: 9, counter: 0 } };
    expect(await compactObjects([await input(a)], opts)).toEqual({
      ok: false,
      error: { type: 'NothingToCompact', detail: 'fewer than two objects' },
    });
    const invalid = {
      ok: false,
      error: { type: 'InvalidObject', detail: 'a compaction takes data objects of one table in one domain' },
    };
    expect(await compactObjects([await input(a), await input(lab)], opts)).toEqual(invalid);
    const other = await input(b);
    expect(
      await compactObjects([await input(a), { ...other, manifest: { ...other.manifest, table: 'other' } }], opts),
    ).toEqual(invalid);
    expect(
      await compactObjects([await input(a), { ...other, manifest: { ...other.manifest, kind: 'delete' } }], opts),
    ).toEqual(invalid);
    expect(await compactObjects([await input(a), await input(b)], { ...opts, keepRow: () => false })).toMatchObject({
      ok: false,
      error: { type: 'NothingToCompact', detail: 'every row of these objects is deleted' },
    });
  });
});

describe('setting objects aside', () => {
  const m = (id: string, ms: number, supersedes: string[] = [], domain = 'GENERAL', rows = 10): ObjectManifest => ({
    storageId: id as StorageId,
    domain,
    table: 'readings',
    schema: OLD,
    rows,
    bytes: 1,
    partitions: {},
    columns: {},
    producer: '',
    hlc: { ms, counter: 0 },
    supersedes: supersedes as StorageId[],
    rowOrigin: '00'.repeat(8),
  });

  it('a compaction hides objects of its own domain only; of two sharing an input, the earlier applies', () => {
    expect([...setAside([m('x', 1), m('y', 1), m('c1', 5, ['x', 'y'])])]).toEqual([
      ['x', 'superseded'],
      ['y', 'superseded'],
    ]);
    // A LAB object claiming GENERAL's objects hides nothing.
    expect(setAside([m('x', 1), m('evil', 5, ['x'], 'LAB')]).size).toBe(0);
    // Two machines compacted x and y, and y and z: c1 (earlier) applies; c2 is set aside, z stays.
    const aside = setAside([m('x', 1), m('y', 1), m('z', 1), m('c2', 6, ['y', 'z']), m('c1', 5, ['x', 'y'])]);
    expect(Object.fromEntries(aside)).toEqual({ x: 'superseded', y: 'superseded', c2: 'overlapping compaction' });
  });

  it('candidates are small data objects of the domain nothing sets aside, oldest first, two or more', () => {
    const objects = [m('b', 2), m('a', 1), m('big', 3, [], 'GENERAL', 100_000), m('lab', 1, [], 'LAB'), m('c', 4)];
    expect(compactionCandidates(objects, 'GENERAL', 'readings').map((o) => o.storageId)).toEqual(['a', 'b', 'c']);
    expect(
      compactionCandidates([...objects, m('k', 9, ['a', 'b'])], 'GENERAL', 'readings').map((o) => o.storageId),
    ).toEqual(['c', 'k']);
    expect(compactionCandidates([m('a', 1)], 'GENERAL', 'readings')).toEqual([]);
    // Other tables and delete objects are not compacted; equal clocks go by storage id.
    const other = { ...m('t', 1), table: 'other' };
    const del = { ...m('d', 1), kind: 'delete' as const };
    expect(
      compactionCandidates([m('q', 7), m('p', 7), other, del], 'GENERAL', 'readings').map((o) => o.storageId),
    ).toEqual(['p', 'q']);
    // No more rows than MAX_COMPACTED_ROWS in all.
    const heavy = Array.from({ length: 60 }, (_, i) => m(`h${String(i).padStart(2, '0')}`, i, [], 'GENERAL', 99_999));
    const capped = compactionCandidates(heavy, 'GENERAL', 'readings');
    expect(capped).toHaveLength(50);
    expect(capped.reduce((n, o) => n + o.rows, 0)).toBeLessThanOrEqual(MAX_COMPACTED_ROWS);
    // At most MAX_COMPACTION_INPUTS a round: a manifest names each one it replaces.
    const many = Array.from({ length: MAX_COMPACTION_INPUTS + 5 }, (_, i) => m(`o${String(i).padStart(3, '0')}`, i));
    const picked = compactionCandidates(many, 'GENERAL', 'readings');
    expect(picked.map((o) => o.storageId)).toEqual(many.slice(0, MAX_COMPACTION_INPUTS).map((o) => o.storageId));
  });

  it('knows when each object was superseded, by the compaction that applies', () => {
    const at = supersessions([
      m('x', 1),
      m('y', 1),
      m('z', 1),
      m('c1', 5, ['x', 'y']),
      m('c2', 6, ['y', 'z']),
      { ...m('gone', 7, ['z']), kind: 'delete' as const },
      { ...m('w', 1), table: 'other' },
      { ...m('c3', 8, ['w']), table: 'other' },
    ]);
    // c2 overlaps c1 and is set aside: z stays; a delete supersedes nothing.
    expect(Object.fromEntries(at)).toEqual({ x: 5, y: 5, w: 8 });
  });

  it('the planner prunes what is set aside with the reason', () => {
    const parsed = parseSql('SELECT v FROM readings');
    if (!parsed.ok) throw new Error('sql');
    const ms = [m('x', 1), m('c1', 5, ['x']), m('c2', 6, ['x'])];
    const bound = bind(parsed.value, tableSchema(ms, 'readings'));
    if (!bound.ok) throw new Error('bind');
    expect(plan(ms, bound.value).pruned).toEqual([
      { id: 'x', reason: 'superseded' },
      { id: 'c2', reason: 'overlapping compaction' },
    ]);
  });
});
