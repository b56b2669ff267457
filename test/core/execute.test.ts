/**
 * Executing a query over objects (core/query/execute.ts) on a small catalog whose answers
 * are worked out by hand: filters of every operator at their bounds, NULLs, groups keyed by
 * 64-bit integers and time buckets, aggregates over empty and null-only groups, ORDER BY
 * with nulls last in both directions, LIMIT stopping the scan, row groups pruned by footer
 * statistics, the row-identity filter (where delete objects apply), cancellation, and rows
 * streamed as found.
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

const COLUMNS: ColumnSpec[] = [
  { name: 'ts', type: 'timestamp', nullable: false },
  { name: 'device', type: 'string', nullable: true },
  { name: 'temp', type: 'double', nullable: true },
  { name: 'total', type: 'int64', nullable: true },
  { name: 'ok', type: 'boolean', nullable: true },
];
type Row = Record<string, CellValue>;
const A: Row[] = [
  { ts: 1000, device: 'a', temp: 1.5, total: 10n, ok: true },
  { ts: 2000, device: 'b', temp: null, total: 20n, ok: false },
  { ts: 3000, device: 'a', temp: 3, total: null, ok: true },
  { ts: 4000, device: 'd', temp: 4.5, total: 40n, ok: false },
];
const B: Row[] = [
  { ts: 5000, device: 'b', temp: -1, total: 50n, ok: false },
  { ts: 6000, device: 'c', temp: 2, total: 60n, ok: true },
];

const objects: FormedObject[] = [];
let manifests: ObjectManifest[] = [];

beforeAll(async () => {
  for (const [i, rows] of [A, B].entries()) {
    const formed = await formObject(rows, {
      domain: 'GENERAL',
      table: 't',
      columns: COLUMNS,
      timeColumn: 'ts',
      signer: unsafeTestingSigner('executor'),
      random: seededRandom(`execute-${i}`),
      cipher: webPmeCipher,
      hlc: { ms: 1, counter: i },
      rowGroupRows: 3,
    });
    if (!formed.ok) throw new Error(JSON.stringify(formed.error));
    objects.push(formed.value);
  }
  manifests = objects.map((o) => o.manifest);
});

async function run(sql: string, extra: Partial<ExecuteOptions> = {}) {
  const parsed = parseSql(sql);
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.error));
  const bound = bind(parsed.value, tableSchema(manifests, 't'));
  if (!bound.ok) throw new Error(JSON.stringify(bound.error));
  const opened: string[] = [];
  const result = await execute(manifests, bound.value, {
    open: async (m) => {
      opened.push(m.storageId);
      const o = objects.find((x) => x.storageId === m.storageId)!;
      return openParquet(o.bytes!, { footerKey: objectKeys(o.secret).dek }, webPmeCipher);
    },
    ...extra,
  });
  return { result, opened };
}

async function rows(sql: string, extra: Partial<ExecuteOptions> = {}): Promise<(readonly Cell[])[]> {
  const { result } = await run(sql, extra);
  if (!result.ok) throw new Error(JSON.stringify(result.error));
  return [...result.value.rows];
}
const col = async (sql: string) => (await rows(sql)).map((r) => r[0]);

describe('filters', () => {
  it('apply every operator at its bounds, never matching NULL but with IS NULL', async () => {
    expect(await col("SELECT ts FROM t WHERE device != 'a' ORDER BY ts")).toEqual([2000, 4000, 5000, 6000]);
    expect(await col("SELECT ts FROM t WHERE device = 'a' ORDER BY ts")).toEqual([1000, 3000]);
    expect(await col('SELECT ts FROM t WHERE temp BETWEEN 1.5 AND 3 ORDER BY ts')).toEqual([1000, 3000, 6000]);
    expect(await col('SELECT ts FROM t WHERE temp < 2 ORDER BY ts')).toEqual([1000, 5000]);
    expect(await col('SELECT ts FROM t WHERE temp <= 2 ORDER BY ts')).toEqual([1000, 5000, 6000]);
    expect(await col('SELECT ts FROM t WHERE temp > 3 ORDER BY ts')).toEqual([4000]);
    expect(await col('SELECT ts FROM t WHERE temp >= 3 ORDER BY ts')).toEqual([3000, 4000]);
    expect(await col('SELECT ts FROM t WHERE total IN (20, 60, 70) ORDER BY ts')).toEqual([2000, 6000]);
    expect(await col('SELECT ts FROM t WHERE temp IS NULL')).toEqual([2000]);
    expect(await col('SELECT ts FROM t WHERE total IS NOT NULL ORDER BY ts')).toEqual([1000, 2000, 4000, 5000, 6000]);
  });
});

describe('groups and aggregates', () => {
  it('group by text, counting, summing, averaging and ranking per group', async () => {
    expect(
      await rows(
        'SELECT device, count(*), count(temp), sum(total), avg(total), min(temp), max(temp), sum(temp) FROM t GROUP BY device ORDER BY device',
      ),
    ).toEqual([
      ['a', 2, 2, 10n, 10, 1.5, 3, 4.5],
      ['b', 2, 1, 70n, 35, -1, -1, -1],
      ['c', 1, 1, 60n, 60, 2, 2, 2],
      ['d', 1, 1, 40n, 40, 4.5, 4.5, 4.5],
    ]);
  });

  it('answers each output from its own GROUP BY expression, column or bucket of either width', async () => {
    expect(
      await rows(
        "SELECT time_bucket('2 seconds', ts) AS two, time_bucket('4 seconds', ts) AS four, ts FROM t WHERE ts <= 3000 GROUP BY two, four, ts ORDER BY ts",
      ),
    ).toEqual([
      [0, 0, 1000],
      [2000, 0, 2000],
      [2000, 0, 3000],
    ]);
  });

  it('finds each output’s GROUP BY expression by kind, column and width, wherever it is listed', async () => {
    expect(await rows('SELECT device, ts FROM t WHERE ts <= 2000 GROUP BY ts, device ORDER BY ts')).toEqual([
      ['a', 1000],
      ['b', 2000],
    ]);
    expect(
      await rows("SELECT ts, time_bucket('2 seconds', ts) AS b FROM t WHERE ts <= 3000 GROUP BY ts, b ORDER BY ts"),
    ).toEqual([
      [1000, 0],
      [2000, 2000],
      [3000, 2000],
    ]);
  });

  it('group by 64-bit integers and by time buckets', async () => {
    expect(await rows('SELECT total, count(*) FROM t GROUP BY total ORDER BY total DESC')).toEqual([
      [60n, 1],
      [50n, 1],
      [40n, 1],
      [20n, 1],
      [10n, 1],
      [null, 1],
    ]);
    expect(await rows("SELECT time_bucket('2 seconds', ts) AS b, count(*) FROM t GROUP BY b ORDER BY b")).toEqual([
      [0, 1],
      [2000, 2],
      [4000, 2],
      [6000, 1],
    ]);
  });

  it('answers an aggregate over no rows with one row: count 0, the rest null', async () => {
    expect(await rows('SELECT count(*), sum(total), avg(temp), min(device), max(ts) FROM t WHERE ts > 99999')).toEqual([
      [0, null, null, null, null],
    ]);
    expect(await rows('SELECT device, count(*) FROM t WHERE ts > 99999 GROUP BY device')).toEqual([]);
    expect(await rows('SELECT min(device), max(device), min(ts), max(total) FROM t')).toEqual([['a', 'd', 1000, 60n]]);
  });

  it('orders by several columns, nulls last either way', async () => {
    expect(await rows('SELECT device, ts FROM t ORDER BY device DESC, ts DESC')).toEqual([
      ['d', 4000],
      ['c', 6000],
      ['b', 5000],
      ['b', 2000],
      ['a', 3000],
      ['a', 1000],
    ]);
    expect(await col('SELECT temp FROM t ORDER BY temp')).toEqual([-1, 1.5, 2, 3, 4.5, null]);
  });
});

describe('scanning', () => {
  it('stops at the LIMIT when nothing orders the rows', async () => {
    const { result, opened } = await run('SELECT ts FROM t LIMIT 2');
    if (!result.ok) throw new Error('run');
    expect(result.value.rows).toEqual([[1000], [2000]]);
    expect(opened).toHaveLength(1);
    expect(result.value.explain).toMatchObject({ scanned: 2, rowGroupsScanned: 1, rowsScanned: 3 });
    expect(await col('SELECT ts FROM t LIMIT 0')).toEqual([]);
    // A LIMIT the first row group fills exactly stops there too.
    const three = await run('SELECT ts FROM t LIMIT 3');
    expect(three.result.ok && three.result.value.explain).toMatchObject({ rowGroupsScanned: 1, rowsScanned: 3 });
    expect(await col('SELECT ts FROM t ORDER BY ts DESC LIMIT 1')).toEqual([6000]);
  });

  it('prunes row groups by their footer statistics, after the catalog', async () => {
    const { result } = await run('SELECT ts FROM t WHERE ts >= 4000 ORDER BY ts');
    if (!result.ok) throw new Error('run');
    expect(result.value.rows).toEqual([[4000], [5000], [6000]]);
    expect(result.value.explain).toMatchObject({
      considered: 2,
      scanned: 2,
      rowGroupsScanned: 2,
      rowGroupsPruned: 1,
      rowsScanned: 3,
    });
    // Statistics of every type prune: 64-bit integers, text, booleans.
    const pruned = async (sql: string) => {
      const r = await run(sql);
      return r.result.ok
        ? [r.result.value.rows.map((x) => x[0]), r.result.value.explain.rowGroupsPruned]
        : r.result.error;
    };
    expect(await pruned('SELECT ts FROM t WHERE total >= 30 ORDER BY ts')).toEqual([[4000, 5000, 6000], 1]);
    expect(await pruned("SELECT ts FROM t WHERE device > 'c' ORDER BY ts")).toEqual([[4000], 1]);
    expect(await pruned('SELECT ts FROM t WHERE ok = TRUE ORDER BY ts')).toEqual([[1000, 3000, 6000], 1]);
    expect(await pruned("SELECT ts FROM t WHERE device = 'b' ORDER BY ts")).toEqual([[2000, 5000], 1]);
  });

  it('drops the rows the row-identity filter refuses before anything else sees them', async () => {
    // Refuse each object's first row (ordinal 0, the last 8 bytes of its identity).
    const keepRow = (id: Uint8Array) => new DataView(id.buffer, id.byteOffset + 8, 8).getBigUint64(0) !== 0n;
    expect((await rows('SELECT ts FROM t ORDER BY ts', { keepRow })).map((r) => r[0])).toEqual([
      2000, 3000, 4000, 6000,
    ]);
    expect(await rows('SELECT count(*) FROM t', { keepRow })).toEqual([[4]]);
  });

  it('stops when cancelled, between row groups too', async () => {
    const between = new AbortController();
    const result = await run('SELECT ts FROM t', { signal: between.signal, onRows: () => between.abort() });
    expect(result.result).toEqual({ ok: false, error: { type: 'Cancelled' } });
    expect(result.opened).toHaveLength(1);
  });

  it('stops when cancelled, before or during the scan', async () => {
    const before = new AbortController();
    before.abort();
    expect((await run('SELECT ts FROM t', { signal: before.signal })).result).toEqual({
      ok: false,
      error: { type: 'Cancelled' },
    });
    const during = new AbortController();
    const progress = (done: number, total: number) => {
      expect(total).toBe(2);
      if (done === 1) during.abort();
    };
    expect((await run('SELECT ts FROM t', { signal: during.signal, progress })).result).toEqual({
      ok: false,
      error: { type: 'Cancelled' },
    });
  });

  it('hands out rows as they are found when nothing reorders them, the same as the result', async () => {
    const found: (readonly Cell[])[] = [];
    const { result } = await run('SELECT ts, device FROM t WHERE temp IS NOT NULL', {
      onRows: (r, columns) => {
        expect(columns.map((c) => c.name)).toEqual(['ts', 'device']);
        found.push(...r);
      },
    });
    if (!result.ok) throw new Error('run');
    expect(found).toEqual(result.value.rows);
    expect(found).toHaveLength(5);
    let called = false;
    await run('SELECT ts FROM t ORDER BY ts', { onRows: () => (called = true) });
    expect(called).toBe(false);
  });
});

describe('a catalog whose schema grew, and values that look alike', () => {
  const objects2: FormedObject[] = [];
  let manifests2: ObjectManifest[] = [];
  const OLD: ColumnSpec[] = [
    { name: 'ts', type: 'timestamp', nullable: false },
    { name: 'device', type: 'string', nullable: true },
    { name: 'extra', type: 'string', nullable: true },
  ];
  const NEW: ColumnSpec[] = [
    ...OLD.filter((c) => c.name !== 'extra'),
    { name: 'extra', type: 'int32', nullable: true },
    { name: 'added', type: 'double', nullable: true },
  ];

  beforeAll(async () => {
    const batches: [ColumnSpec[], Row[]][] = [
      [
        OLD,
        [
          { ts: 1, device: 'null', extra: 'x' },
          { ts: 2, device: null, extra: null },
          { ts: 3, device: null, extra: 'y' },
        ],
      ],
      [
        NEW,
        [
          { ts: 4, device: 'null', extra: 7, added: 0.5 },
          { ts: 5, device: null, extra: null, added: null },
        ],
      ],
    ];
    for (const [i, [columns, data]] of batches.entries()) {
      const formed = await formObject(data, {
        domain: 'GENERAL',
        table: 'g',
        columns,
        timeColumn: 'ts',
        signer: unsafeTestingSigner('executor'),
        random: seededRandom(`grown-${i}`),
        cipher: webPmeCipher,
        hlc: { ms: 10 + i, counter: 0 },
      });
      if (!formed.ok) throw new Error(JSON.stringify(formed.error));
      objects2.push(formed.value);
    }
    manifests2 = objects2.map((o) => o.manifest);
  });

  async function grown(sql: string) {
    const parsed = parseSql(sql);
    if (!parsed.ok) throw new Error(JSON.stringify(parsed.error));
    const bound = bind(parsed.value, tableSchema(manifests2, 'g'));
    if (!bound.ok) throw new Error(JSON.stringify(bound.error));
    const result = await execute(manifests2, bound.value, {
      open: async (m) => {
        const o = objects2.find((x) => x.storageId === m.storageId)!;
        return openParquet(o.bytes!, { footerKey: objectKeys(o.secret).dek }, webPmeCipher);
      },
    });
    if (!result.ok) throw new Error(JSON.stringify(result.error));
    return result.value.rows;
  }

  it('reads a column an older object lacks, or holds with another type, as nulls', async () => {
    expect(await grown('SELECT ts, added FROM g ORDER BY ts')).toEqual([
      [1, null],
      [2, null],
      [3, null],
      [4, 0.5],
      [5, null],
    ]);
    expect(await grown('SELECT ts FROM g WHERE added IS NULL ORDER BY ts')).toEqual([[1], [2], [3], [5]]);
    expect(await grown('SELECT ts FROM g WHERE extra IS NULL ORDER BY ts')).toEqual([[1], [2], [3], [5]]);
    expect(await grown('SELECT ts, extra FROM g WHERE extra = 7')).toEqual([[4, 7]]);
    expect(await grown('SELECT count(*), count(added), avg(added) FROM g')).toEqual([[5, 1, 0.5]]);
  });

  it('keeps the text "null" apart from NULL, and orders ties by the next column', async () => {
    expect(await grown('SELECT device, count(*) FROM g GROUP BY device ORDER BY device')).toEqual([
      ['null', 2],
      [null, 3],
    ]);
    expect(await grown('SELECT device, ts FROM g ORDER BY device, ts DESC')).toEqual([
      ['null', 4],
      ['null', 1],
      [null, 5],
      [null, 3],
      [null, 2],
    ]);
  });
});
