/**
 * Pages of a table from the store: sorted by name then row, filtered by text, counted
 * alive and deleted, and kept current by the rows a change names — re-read lazily. The
 * same expectations hold on a store that pages itself (IndexedDB, through its ordered
 * index) and on one paged from the index in memory.
 */
import 'fake-indexeddb/auto';
import { describe, expect, it } from 'vitest';
import type { Cell, RowState } from '../../src/core/merge.js';
import type { Stamp } from '../../src/core/hlc.js';
import { MAX_PAGE_ROWS, TablePages, type PageQuery } from '../../src/runtime/table-pages.js';
import type { ReplicaStore } from '../../src/core/store.js';
import { DexieReplicaStore, NodeDatabase } from '../../src/storage/dexie-store.js';
import { MemoryReplicaStore } from '../../src/storage/memory-store.js';

const TABLE = 'device_profiles';
const stamp = (ms: number): Stamp => ({ ms, counter: 0, node: new Uint8Array(32).fill(7) });
const cell = (value: string, ms = 1): Cell => ({ value, stamp: stamp(ms) });

function row(id: string, cells: Record<string, string>, deletedAt?: number): RowState {
  return {
    table: TABLE,
    row: id,
    cells: Object.fromEntries(Object.entries(cells).map(([k, v]) => [k, cell(v)])),
    ...(deletedAt === undefined ? {} : { deleted: stamp(deletedAt) }),
  };
}

type Kind = 'memory' | 'indexeddb';
let databases = 0;

async function storeWith(rows: readonly RowState[], kind: Kind = 'memory'): Promise<ReplicaStore> {
  const store =
    kind === 'memory'
      ? new MemoryReplicaStore()
      : new DexieReplicaStore(new NodeDatabase(`table-pages-${++databases}-${Date.now()}`));
  await store.transact(async (tx) => {
    for (const r of rows) await tx.putRow(r);
  });
  return store;
}

const q = (over: Partial<PageQuery> = {}): PageQuery => ({
  table: TABLE,
  offset: 0,
  limit: 10,
  filter: '',
  deleted: false,
  ...over,
});

const names = (rows: readonly RowState[]) => rows.map((r) => r.cells['name']?.value);

describe.each<Kind>(['memory', 'indexeddb'])('table pages (%s store)', (kind) => {
  it('sorts by name (case-insensitive) then row id, windowed by offset and limit', async () => {
    const store = await storeWith(
      [
        row('c', { name: 'beta' }),
        row('a', { name: 'Alpha' }),
        row('b', { name: 'alpha' }),
        row('d', { name: 'gamma' }),
      ],
      kind,
    );
    const pages = new TablePages(store);
    const first = await pages.page(q({ limit: 2 }));
    expect(first.rows.map((r) => r.row)).toEqual(['a', 'b']);
    expect(first.total).toBe(4);
    const second = await pages.page(q({ offset: 2, limit: 2 }));
    expect(names(second.rows)).toEqual(['beta', 'gamma']);
    // An offset past the end is pulled back to the last row; a limit is capped.
    expect((await pages.page(q({ offset: 99, limit: 10 }))).rows.map((r) => r.row)).toEqual(['d']);
    expect((await pages.page(q({ limit: MAX_PAGE_ROWS * 10 }))).rows).toHaveLength(4);
    expect((await pages.page(q({ limit: -3 }))).rows).toEqual([]);
  });

  it('counts alive and deleted rows and lists deleted ones only when asked', async () => {
    const store = await storeWith([row('a', { name: 'kept' }), row('b', { name: 'gone' }, 5)], kind);
    const pages = new TablePages(store);
    const alive = await pages.page(q());
    expect([alive.alive, alive.deleted, alive.total]).toEqual([1, 1, 1]);
    expect(names(alive.rows)).toEqual(['kept']);
    expect(names((await pages.page(q({ deleted: true }))).rows)).toEqual(['gone', 'kept']);
  });

  it('a filter matches any value, case-insensitively, and the total is of the matches', async () => {
    const store = await storeWith(
      [
        row('a', { name: 'Pump 1', location: 'North shed' }),
        row('b', { name: 'Pump 2', location: 'south field' }),
        row('c', { name: 'Valve', location: 'north gate' }),
      ],
      kind,
    );
    const pages = new TablePages(store);
    const found = await pages.page(q({ filter: '  NORTH ' }));
    expect(names(found.rows)).toEqual(['Pump 1', 'Valve']);
    expect(found.total).toBe(2);
    expect((await pages.page(q({ filter: 'nothing like it' }))).rows).toEqual([]);
  });

  it('rows a change names move within the order: the same order a fresh index gives', async () => {
    const rows = Array.from({ length: 300 }, (_, i) =>
      row(`r${String(i).padStart(3, '0')}`, { name: `n${(i * 7919) % 300}` }),
    );
    const store = await storeWith(rows, kind);
    const pages = new TablePages(store);
    const all = q({ limit: MAX_PAGE_ROWS, deleted: true });
    await pages.page(all);
    for (let round = 0; round < 5; round++) {
      const touched: string[] = [];
      await store.transact(async (tx) => {
        for (let k = 0; k < 40; k++) {
          const i = (round * 131 + k * 37) % 320;
          const id = `r${String(i).padStart(3, '0')}`;
          touched.push(id);
          if (k % 9 === 0) await tx.deleteRow(TABLE, id);
          else await tx.putRow(row(id, { name: `renamed ${(i * round + k) % 50}` }, k % 5 === 0 ? 9 : undefined));
        }
      });
      pages.changed(TABLE, touched);
      const moved = await pages.page(all);
      const fresh = await new TablePages(store).page(all);
      expect(moved.rows.map((r) => r.row)).toEqual(fresh.rows.map((r) => r.row));
      expect([moved.total, moved.alive, moved.deleted]).toEqual([fresh.total, fresh.alive, fresh.deleted]);
    }
  });

  it('a table never paged is not indexed by changes to it', async () => {
    const store = await storeWith([row('a', { name: 'one' })], kind);
    const pages = new TablePages(store);
    pages.changed('field_notes', ['x']);
    expect((await pages.page(q({ table: 'field_notes' }))).total).toBe(0);
  });
});

/** Queries no store answers itself (deleted rows shown): paged from the index in memory. */
describe.each<Kind>(['memory', 'indexeddb'])('the index in memory (%s store)', (kind) => {
  const indexed = q({ deleted: true });

  it('follows the rows a change names, and only re-reads them', async () => {
    const store = await storeWith([row('a', { name: 'one' }), row('b', { name: 'two' })], kind);
    const pages = new TablePages(store);
    expect(names((await pages.page(indexed)).rows)).toEqual(['one', 'two']);
    await store.transact((tx) => tx.putRow(row('a', { name: 'zzz renamed' })));
    await store.transact((tx) => tx.putRow(row('c', { name: 'added' })));
    // Until a change names them, order and count are the index's; the rows shown are read fresh.
    const before = await pages.page(indexed);
    expect(names(before.rows)).toEqual(['zzz renamed', 'two']);
    expect(before.total).toBe(2);
    pages.changed(TABLE, ['a', 'c']);
    expect(names((await pages.page(indexed)).rows)).toEqual(['added', 'two', 'zzz renamed']);
  });

  it('an unknown change (another tab) drops the index: the next page reads the table again', async () => {
    const store = await storeWith([row('a', { name: 'one' })], kind);
    const pages = new TablePages(store);
    await pages.page(indexed);
    await store.transact((tx) => tx.putRow(row('b', { name: 'from another tab' })));
    pages.invalidate();
    expect(names((await pages.page(indexed)).rows)).toEqual(['from another tab', 'one']);
    await store.transact((tx) => tx.putRow(row('c', { name: 'again' })));
    pages.changed(TABLE, 'all');
    expect((await pages.page(indexed)).total).toBe(3);
  });
});

describe('a store that pages itself (IndexedDB)', () => {
  it('gives the pages the index in memory gives, through any edits and deletions, and reads no table for them', async () => {
    const rows = Array.from({ length: 700 }, (_, i) =>
      row(
        `r${String(i).padStart(3, '0')}`,
        { name: `N${(i * 7919) % 97}`, notes: `#${i}` },
        i % 11 === 0 ? 9 : undefined,
      ),
    );
    const dexie = await storeWith(rows, 'indexeddb');
    const memory = await storeWith(rows, 'memory');
    let tableReads = 0;
    const counted = new Proxy(dexie, {
      get(target, key) {
        if (key === 'rows') tableReads++;
        const value: unknown = Reflect.get(target, key, target);
        return typeof value === 'function' ? (value.bind(target) as unknown) : value;
      },
    });
    const windowed = new TablePages(counted);
    const check = async () => {
      const reference = new TablePages(memory);
      for (const offset of [0, 1, 150, 600, 636, 699, 5000]) {
        const query = q({ offset, limit: 50 });
        const [got, want] = [await windowed.page(query), await reference.page(query)];
        expect(got.rows.map((r) => r.row)).toEqual(want.rows.map((r) => r.row));
        expect([got.total, got.alive, got.deleted, got.offset]).toEqual([
          want.total,
          want.alive,
          want.deleted,
          want.offset,
        ]);
      }
    };
    await check();
    for (const store of [dexie, memory]) {
      await store.transact(async (tx) => {
        await tx.putRow(row('r005', { name: 'aaa first now' }));
        await tx.putRow(row('r011', { name: 'back' }));
        await tx.putRow(row('r012', { name: 'N1' }, 9));
        await tx.deleteRow(TABLE, 'r013');
      });
    }
    await check();
    expect(tableReads).toBe(0);
    // A filter is answered from the index in memory, which reads the table once.
    const filtered = await windowed.page(q({ filter: '#12' }));
    expect(filtered.rows.map((r) => r.row)).toEqual(
      (await new TablePages(memory).page(q({ filter: '#12' }))).rows.map((r) => r.row),
    );
    expect(filtered.total).toBe(9);
    expect(tableReads).toBe(1);
  });
});
