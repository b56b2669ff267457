/**
 * Delete objects in the core (core/object/deletes.ts): identities checked and ordered, the
 * object formed and opened with a manifest of kind `delete` that survives sealing, what it
 * names read back, tombstones applied by the delete's domain only, columns kept by
 * identity; and a query answering each row's identity beside it, aligned through ORDER BY
 * and LIMIT (core/query/execute.ts `withRowIds`).
 */
import { describe, expect, it } from 'vitest';
import { toHex } from '../../src/core/bytes.js';
import {
  DELETE_SCHEMA,
  deletedIds,
  formDeleteObject,
  isDeleteManifest,
  keepRows,
  MAX_DELETED_ROWS,
  parseRowIds,
  Tombstones,
} from '../../src/core/object/deletes.js';
import { formObject, openObject } from '../../src/core/object/form.js';
import { objectKeys } from '../../src/core/object/keys.js';
import { openParquet } from '../../src/core/parquet/read.js';
import { ROW_ID_COLUMN, type ColumnSpec } from '../../src/core/parquet/schema.js';
import { execute } from '../../src/core/query/execute.js';
import { tableSchema } from '../../src/core/query/plan.js';
import { bind } from '../../src/core/query/query.js';
import { parseSql } from '../../src/core/query/sql.js';
import { webPmeCipher } from '../../src/runtime/pme-cipher.js';
import { nobleVerifier, seededRandom, unsafeTestingSigner } from '../helpers/deterministic.js';

const signer = unsafeTestingSigner('deleter');
const options = (seed: string, domain = 'GENERAL') => ({
  domain,
  table: 'readings',
  signer,
  random: seededRandom(seed),
  cipher: webPmeCipher,
  hlc: { ms: 1_720_000_000_000, counter: 0 },
});
const COLUMNS: ColumnSpec[] = [
  { name: 'n', type: 'int32', nullable: false },
  { name: 'device', type: 'string', nullable: false },
];

async function data(seed: string, domain = 'GENERAL', n = 6) {
  const rows = Array.from({ length: n }, (_, i) => ({ n: i, device: `d${i % 2}` }));
  const formed = await formObject(rows, { ...options(seed, domain), columns: COLUMNS });
  if (!formed.ok) throw new Error(JSON.stringify(formed.error));
  const file = await openParquet(formed.value.bytes!, { footerKey: objectKeys(formed.value.secret).dek }, webPmeCipher);
  if (!file.ok) throw new Error(file.error.type);
  const ids = await file.value.readColumns({ columns: [ROW_ID_COLUMN] });
  if (!ids.ok) throw new Error(ids.error.type);
  return { formed: formed.value, ids: Array.from(ids.value[ROW_ID_COLUMN] as ArrayLike<Uint8Array>, toHex) };
}

describe('row identities', () => {
  it('are checked, without repeats, in order; an empty or oversized delete is refused', () => {
    const a = 'aa'.repeat(16);
    const b = '0b'.repeat(16);
    expect(parseRowIds([a, b, a])).toEqual({ ok: true, value: [b, a] });
    expect(parseRowIds([])).toMatchObject({ ok: false, error: { type: 'InvalidDelete', detail: 'no rows named' } });
    for (const bad of ['aa'.repeat(15), 'AA'.repeat(16), 'zz'.repeat(16), `${a}00`]) {
      expect(parseRowIds([a, bad])).toMatchObject({ ok: false, error: { type: 'InvalidDelete' } });
    }
    const most = Array.from({ length: MAX_DELETED_ROWS }, (_, i) => i.toString(16).padStart(32, '0'));
    expect(parseRowIds(most).ok).toBe(true);
    expect(parseRowIds([...most, 'ff'.repeat(16)])).toEqual({
      ok: false,
      error: { type: 'InvalidDelete', detail: `more than ${MAX_DELETED_ROWS} rows in one delete` },
    });
    expect(parseRowIds([`${'ab'.repeat(30)}zz`])).toEqual({
      ok: false,
      error: { type: 'InvalidDelete', detail: `not a row identity: ${'ab'.repeat(20)}` },
    });
  });
});

describe('a delete object', () => {
  it('is an object of kind delete naming exactly the identities given; its manifest opens as one', async () => {
    const { ids } = await data('delete-data');
    const doomed = [ids[4]!, ids[1]!];
    const formed = await formDeleteObject(doomed, options('delete-1'));
    if (!formed.ok) throw new Error(JSON.stringify(formed.error));
    const m = formed.value.manifest;
    expect([m.kind, m.table, m.rows, m.schema]).toEqual(['delete', 'readings', 2, DELETE_SCHEMA]);
    expect(isDeleteManifest(m)).toBe(true);
    const opened = await openObject(
      formed.value.bytes!,
      { storageId: formed.value.storageId, secret: formed.value.secret, sealedManifest: formed.value.sealedManifest },
      { verifier: nobleVerifier, cipher: webPmeCipher },
    );
    if (!opened.ok) throw new Error(opened.error.type);
    expect(opened.value.manifest).toEqual(m);
    const named = await deletedIds(opened.value.file);
    expect(named.ok && [...named.value].sort()).toEqual([...doomed].sort());
  });

  it('is refused without identities; what a file of another shape names is a typed error', async () => {
    expect(await formDeleteObject([], options('delete-0'))).toMatchObject({
      ok: false,
      error: { type: 'InvalidDelete', detail: 'no rows named' },
    });
    // A column `row` of text, not identities.
    const text = await formObject([{ row: 'x' }], {
      ...options('delete-text'),
      columns: [{ name: 'row', type: 'string', nullable: false }],
    });
    if (!text.ok) throw new Error(text.error.type);
    const file = await openParquet(text.value.bytes!, { footerKey: objectKeys(text.value.secret).dek }, webPmeCipher);
    if (!file.ok) throw new Error(file.error.type);
    expect(await deletedIds(file.value)).toEqual({
      ok: false,
      error: { type: 'InvalidDelete', detail: 'a row identity is not 16 bytes' },
    });
  });

  it('a data manifest is none, nor one of kind delete with another schema', async () => {
    const { formed } = await data('delete-data-2');
    expect(formed.manifest.kind).toBeUndefined();
    expect(isDeleteManifest(formed.manifest)).toBe(false);
    expect(isDeleteManifest({ ...formed.manifest, kind: 'delete' })).toBe(false);
    const del = await formDeleteObject(['01'.repeat(16)], options('delete-2'));
    if (!del.ok) throw new Error(del.error.type);
    const m = del.value.manifest;
    const column = DELETE_SCHEMA[0]!;
    expect(isDeleteManifest({ ...m, schema: [{ ...column, nullable: true }] })).toBe(false);
    expect(isDeleteManifest({ ...m, schema: [{ ...column, name: 'rows' }] })).toBe(false);
    expect(isDeleteManifest({ ...m, schema: [{ ...column, type: 'string' }] })).toBe(false);
    expect(isDeleteManifest({ ...m, schema: [column, { name: 'why', type: 'string', nullable: true }] })).toBe(false);
    expect(isDeleteManifest({ ...m, schema: [] })).toBe(false);
    const { kind: _kind, ...plain } = m; // eslint-disable-line @typescript-eslint/no-unused-vars
    expect(isDeleteManifest(plain)).toBe(false);
  });
});

describe('tombstones', () => {
  it('hide rows of objects of the delete’s own domain only', () => {
    const id = new Uint8Array(16).fill(7);
    const other = new Uint8Array(16).fill(8);
    const t = new Tombstones();
    expect(t.keepRow()).toBeUndefined();
    t.add('GENERAL', new Set());
    expect(t.keepRow()).toBeUndefined();
    t.add('LAB', new Set([toHex(id)]));
    t.add('LAB', new Set([toHex(new Uint8Array(16).fill(9))]));
    const keep = t.keepRow()!;
    expect(keep(id, { domain: 'LAB' })).toBe(false);
    expect(keep(other, { domain: 'LAB' })).toBe(true);
    expect(keep(id, { domain: 'GENERAL' })).toBe(true);
    // Every delete of the domain counts, not only its first.
    expect(keep(new Uint8Array(16).fill(9), { domain: 'LAB' })).toBe(false);
  });

  it('drop rows from every column read, and need the identities read', () => {
    const ids = [1, 2, 3].map((n) => new Uint8Array(16).fill(n));
    const columns: Record<string, ArrayLike<unknown>> = { [ROW_ID_COLUMN]: ids, n: [10, 20, 30] };
    keepRows(columns, (id) => id[0] !== 2);
    expect(columns['n']).toEqual([10, 30]);
    expect(columns[ROW_ID_COLUMN]).toEqual([ids[0], ids[2]]);
    expect(() => keepRows({ n: [1] }, () => true)).toThrow(/identities/);
  });
});

describe('a query answering row identities', () => {
  it('keeps each identity beside its row through ORDER BY and LIMIT, and answers none when it aggregates', async () => {
    const { formed, ids } = await data('delete-data-3');
    const run = async (sql: string, keepRow?: (id: Uint8Array) => boolean) => {
      const parsed = parseSql(sql);
      if (!parsed.ok) throw new Error(parsed.error.type);
      const bound = bind(parsed.value, tableSchema([formed.manifest], 'readings'));
      if (!bound.ok) throw new Error(bound.error.type);
      const ran = await execute([formed.manifest], bound.value, {
        withRowIds: true,
        ...(keepRow ? { keepRow } : {}),
        open: async () => openParquet(formed.bytes!, { footerKey: objectKeys(formed.secret).dek }, webPmeCipher),
      });
      if (!ran.ok) throw new Error(ran.error.type);
      return ran.value;
    };
    const desc = await run('SELECT n FROM readings ORDER BY n DESC LIMIT 4');
    expect(desc.table).toBe('readings');
    expect(desc.rows).toEqual([[5], [4], [3], [2]]);
    expect(desc.rowIds).toEqual([ids[5], ids[4], ids[3], ids[2]]);
    const kept = await run('SELECT n FROM readings', (id) => toHex(id) !== ids[0]);
    expect(kept.rows.map((r) => r[0])).toEqual([1, 2, 3, 4, 5]);
    expect(kept.rowIds).toEqual(ids.slice(1));
    const counted = await run('SELECT count(*) AS c FROM readings');
    expect(counted.rowIds).toBeUndefined();
    expect(counted.rows).toEqual([[6]]);
  });
});
