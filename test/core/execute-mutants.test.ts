/**
 * Executing a query (core/query/execute.ts): behaviour the mutation run of execute.ts showed
 * unpinned — a NULL timestamp's time bucket is NULL, group keys that would run together as
 * text stay apart, older objects holding a column the table has since dropped are still
 * read, the bytes read are counted up, an object that cannot be opened or decrypted ends
 * the query with its typed error, cancellation stops before the next row group, and rows
 * are handed out only in batches that hold some.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { formObject, type FormedObject } from '../../src/core/object/form.js';
import { objectKeys } from '../../src/core/object/keys.js';
import type { ObjectManifest } from '../../src/core/object/manifest.js';
import { openParquet } from '../../src/core/parquet/read.js';
import type { CellValue, ColumnSpec } from '../../src/core/parquet/schema.js';
import { execute, type Cell, type ExecuteOptions } from '../../src/core/query/execute.js';
import { tableSchema } from '../../src/core/query/plan.js';
import { bind } from '../../src/core/query/query.js';
import { parseSql } from '../../src/core/query/sql.js';
import { webPmeCipher } from '../../src/runtime/pme-cipher.js';
import { seededRandom, unsafeTestingSigner } from '../helpers/deterministic.js';

type Row = Record<string, CellValue>;
const NEW: ColumnSpec[] = [
  { name: 'ts', type: 'timestamp', nullable: false },
  { name: 'seen', type: 'timestamp', nullable: true },
  { name: 'a', type: 'int32', nullable: true },
  { name: 'b', type: 'int32', nullable: true },
];
/** The table as it was: it had a column `gone` since dropped. */
const OLD: ColumnSpec[] = [...NEW, { name: 'gone', type: 'string', nullable: true }];
const OLD_ROWS: Row[] = [
  { ts: 1, seen: 1500, a: 1, b: 23, gone: 'x' },
  { ts: 2, seen: null, a: 12, b: 3, gone: 'y' },
  { ts: 3, seen: 2500, a: 1, b: 23, gone: null },
];
const NEW_ROWS: Row[] = [
  { ts: 4, seen: null, a: 12, b: 3 },
  { ts: 5, seen: 1200, a: 5, b: 5 },
  { ts: 6, seen: 6000, a: 5, b: 5 },
];

const objects: FormedObject[] = [];
let manifests: ObjectManifest[] = [];

beforeAll(async () => {
  const batches: [ColumnSpec[], Row[]][] = [
    [OLD, OLD_ROWS],
    [NEW, NEW_ROWS],
  ];
  for (const [i, [columns, data]] of batches.entries()) {
    const formed = await formObject(data, {
      domain: 'GENERAL',
      table: 'm',
      columns,
      timeColumn: 'ts',
      signer: unsafeTestingSigner('executor'),
      random: seededRandom(`execute-mutants-${i}`),
      cipher: webPmeCipher,
      hlc: { ms: 10 + i, counter: 0 },
      // Two row groups per object: two rows, then one.
      rowGroupRows: 2,
    });
    if (!formed.ok) throw new Error(JSON.stringify(formed.error));
    objects.push(formed.value);
  }
  manifests = objects.map((o) => o.manifest);
});

const openObject: ExecuteOptions['open'] = async (m) => {
  const o = objects.find((x) => x.storageId === m.storageId)!;
  return openParquet(o.bytes!, { footerKey: objectKeys(o.secret).dek }, webPmeCipher);
};

async function run(sql: string, extra: Partial<ExecuteOptions> = {}) {
  const parsed = parseSql(sql);
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.error));
  const bound = bind(parsed.value, tableSchema(manifests, 'm'));
  if (!bound.ok) throw new Error(JSON.stringify(bound.error));
  return execute(manifests, bound.value, { open: openObject, ...extra });
}

async function rows(sql: string): Promise<(readonly Cell[])[]> {
  const result = await run(sql);
  if (!result.ok) throw new Error(JSON.stringify(result.error));
  return [...result.value.rows];
}

describe('values and groups', () => {
  it('puts a NULL timestamp in a NULL time bucket, not the bucket at the epoch', async () => {
    expect(
      await rows("SELECT time_bucket(INTERVAL '1 second', seen) AS s, count(*) FROM m GROUP BY s ORDER BY s"),
    ).toEqual([
      [1000, 2],
      [2000, 1],
      [6000, 1],
      [null, 2],
    ]);
    expect(
      await rows("SELECT ts, time_bucket(INTERVAL '1 second', seen) AS s FROM m WHERE ts <= 2 ORDER BY ts"),
    ).toEqual([
      [1, 1000],
      [2, null],
    ]);
  });

  it('keeps apart groups whose keys would run together as text (1, 23 and 12, 3)', async () => {
    expect(await rows('SELECT a, b, count(*) FROM m GROUP BY a, b ORDER BY a')).toEqual([
      [1, 23, 2],
      [5, 5, 2],
      [12, 3, 2],
    ]);
  });

  it('reads older objects that hold a column the table has since dropped', async () => {
    expect(tableSchema(manifests, 'm')!.map((c) => c.name)).not.toContain('gone');
    expect((await rows('SELECT ts, a FROM m ORDER BY ts')).map((r) => r[0])).toEqual([1, 2, 3, 4, 5, 6]);
  });
});

describe('scanning', () => {
  it('counts the encrypted bytes of every object it opens', async () => {
    const opened: ObjectManifest[] = [];
    const result = await run('SELECT ts FROM m', {
      open: (m) => {
        opened.push(m);
        return openObject(m);
      },
    });
    if (!result.ok) throw new Error(JSON.stringify(result.error));
    expect(opened).toHaveLength(2);
    const bytes = opened.reduce((n, m) => n + m.bytes, 0);
    expect(bytes).toBeGreaterThan(0);
    expect(result.value.explain.bytesRead).toBe(bytes);
  });

  it('ends with the error of an object that cannot be opened', async () => {
    let opens = 0;
    const unavailable = { type: 'ObjectUnavailable', id: 'second', reason: 'no replica answered' } as const;
    const result = await run('SELECT ts FROM m', {
      open: async (m) => (++opens === 2 ? { ok: false, error: unavailable } : openObject(m)),
    });
    expect(result).toEqual({ ok: false, error: unavailable });
  });

  it('ends with the reader’s typed error when a column chunk does not decrypt', async () => {
    const old = objects[0]!;
    const file = await openObject(old.manifest);
    if (!file.ok) throw new Error(JSON.stringify(file.error));
    // Flip one byte inside the first row group's chunk of column `a`: the footer still opens.
    const index = file.value.metadata.schema.slice(1).findIndex((e) => e.name === 'a');
    const chunk = file.value.metadata.row_groups[0]!.columns[index]!.meta_data!;
    const tampered = old.bytes!.slice();
    tampered[Number(chunk.data_page_offset) + 20]! ^= 1;
    const result = await run('SELECT ts, a FROM m', {
      open: async (m) =>
        m.storageId === old.storageId
          ? openParquet(tampered, { footerKey: objectKeys(old.secret).dek }, webPmeCipher)
          : openObject(m),
    });
    expect(result.ok).toBe(false);
    expect(!result.ok && result.error.type).toBe('DecryptFailed');
  });

  it('stops before the next row group of the same object once cancelled', async () => {
    const controller = new AbortController();
    const batches: (readonly Cell[])[][] = [];
    const result = await run('SELECT ts FROM m', {
      signal: controller.signal,
      onRows: (found) => {
        batches.push([...found]);
        controller.abort();
      },
    });
    expect(result).toEqual({ ok: false, error: { type: 'Cancelled' } });
    // The first row group's two rows, and nothing of the object's second row group.
    expect(batches).toHaveLength(1);
    expect(batches[0]).toHaveLength(2);
  });

  it('hands out no empty batch for a scanned row group where no row passes', async () => {
    // Row group 1 of the older object (a 1..12, b 3..23) passes the statistics of each filter,
    // but none of its rows has both a = 1 and b = 3.
    const batches: (readonly Cell[])[][] = [];
    const result = await run('SELECT ts FROM m WHERE a = 1 AND b = 3', { onRows: (found) => batches.push([...found]) });
    if (!result.ok) throw new Error(JSON.stringify(result.error));
    expect(result.value.explain.rowGroupsScanned).toBeGreaterThan(0);
    expect(result.value.rows).toEqual([]);
    expect(batches).toEqual([]);
  });
});

describe('grouping on doubles', () => {
  it('keeps NULL, NaN, +∞ and −∞ apart as group keys (text alone would read them all as null)', async () => {
    const columns: ColumnSpec[] = [
      { name: 'ts', type: 'timestamp', nullable: false },
      { name: 'x', type: 'double', nullable: true },
    ];
    const values = [null, Number.NaN, Infinity, -Infinity, 1, Number.NaN, -0, 0];
    const formed = await formObject(
      values.map((x, i) => ({ ts: i, x })),
      {
        domain: 'GENERAL',
        table: 'd',
        columns,
        timeColumn: 'ts',
        signer: unsafeTestingSigner('executor'),
        random: seededRandom('execute-mutants-doubles'),
        cipher: webPmeCipher,
        hlc: { ms: 20, counter: 0 },
      },
    );
    if (!formed.ok) throw new Error(JSON.stringify(formed.error));
    const object = formed.value;
    const parsed = parseSql('SELECT x, count(*) FROM d GROUP BY x');
    if (!parsed.ok) throw new Error(JSON.stringify(parsed.error));
    const bound = bind(parsed.value, tableSchema([object.manifest], 'd'));
    if (!bound.ok) throw new Error(JSON.stringify(bound.error));
    const result = await execute([object.manifest], bound.value, {
      open: async () => openParquet(object.bytes!, { footerKey: objectKeys(object.secret).dek }, webPmeCipher),
    });
    if (!result.ok) throw new Error(JSON.stringify(result.error));
    const groups = new Map(result.value.rows.map((r) => [String(r[0]), r[1]]));
    // -0 and 0 are one number, as SQL engines group them; NaN is one group, as DuckDB's is.
    expect(Object.fromEntries(groups)).toEqual({ null: 1, NaN: 2, Infinity: 1, '-Infinity': 1, '1': 1, '0': 2 });
  });
});
