/**
 * The main thread's object plane (MeshObjects) over a real ObjectService, a real relay's blind
 * store and a stand-in state plane: publication waits for a relay session and catches the
 * domains up first; it uploads the bytes, then writes the access and catalog rows under this
 * machine's own row keys; a machine the keyring removed publishes nothing more; a catalog row
 * naming another producer than the manifest's is shown as a typed error.
 */
import 'fake-indexeddb/auto';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parquetWriteBuffer } from 'hyparquet-writer';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { fromBase64Url, fromHex, toBase64Url } from '../../src/core/bytes.js';
import { encodeAccessBatch } from '../../src/core/object/access.js';
import type { StorageId } from '../../src/core/object/keys.js';
import type { RowState } from '../../src/core/merge.js';
import { ok } from '../../src/core/result.js';
import { DOMAINS } from '../../src/core/schema.js';
import { CryptoService } from '../../src/runtime/crypto-service.js';
import { ACCESS_TABLE, CATALOG_TABLE } from '../../src/runtime/catalog-rows.js';
import { MeshObjects } from '../../src/runtime/mesh-objects.js';
import { ObjectService } from '../../src/runtime/object-service.js';
import { webSigner } from '../../src/runtime/webcrypto.js';
import { startRelay, type RelayHandle } from '../../src/relay/server.js';
import { DexieKeyStore, KeyDatabase } from '../../src/storage/key-store.js';
import { DexieObjectStore, ObjectDatabase } from '../../src/storage/object-db.js';
import { testClock } from '../helpers/deterministic.js';
import { foundDomains } from '../helpers/mls-machine.js';
import { joinRelay } from '../helpers/relay-client.js';

let stores = 0;
const clock = testClock(Date.now());

// Publication uploads an object's bytes before its rows: a real relay's blind store takes them.
let relay: RelayHandle;
const relayDir = mkdtempSync(join(tmpdir(), 'sov-mesh-objects-'));
beforeAll(async () => {
  relay = await startRelay({ port: 0, dataDir: relayDir, log: () => undefined, admission: 'open' });
});
afterAll(async () => {
  await (relay as RelayHandle | undefined)?.close();
  rmSync(relayDir, { recursive: true, force: true });
});

/** The relay serves endpoints that authenticated once under the mesh's topic. */
async function joinMesh(name: string, crypto: CryptoService): Promise<void> {
  const identity = (await new DexieKeyStore(new KeyDatabase(name)).identity())!;
  const signer = webSigner({ keys: identity.endpoint, publicKey: identity.endpointPublic });
  const topic = fromHex(crypto.view().topic!)!;
  await (await joinRelay(relay.wsUrl, topic, identity.endpointPublic, (p) => signer.sign(p))).close();
}

async function setUp() {
  // A test moves the clock a week on (superseded copies): each machine starts at the real
  // time, which the relay checks signed requests against.
  clock.set(Date.now());
  const name = `mesh-objects-${++stores}`;
  const crypto = new CryptoService(new KeyDatabase(name), clock);
  const signer = (await crypto.init()).signer;
  expect((await crypto.createMesh()).ok).toBe(true);
  await foundDomains(crypto, name);
  expect(crypto.domainGenerations().map((g) => g.domain)).toEqual([...DOMAINS]);
  const service = new ObjectService(
    crypto.accessKeys,
    new KeyDatabase(name),
    new ObjectDatabase(`${name}-objects`),
    clock,
  );
  await service.reload(relay.wsUrl);
  await joinMesh(name, crypto);
  const rows = new Map<string, RowState>();
  const state = {
    online: false,
    removed: false,
    catchUps: 0,
    writes: [] as string[],
    /** Whether every object formed here was at the relay when each row was written. */
    uploadedAtWrites: [] as boolean[],
    notices: [] as string[],
  };
  const objects = new MeshObjects({
    service,
    self: () => signer,
    relayUrl: () => undefined,
    write: async (table, row, cols) => {
      state.writes.push(`${table} ${row}`);
      state.uploadedAtWrites.push((await service.held()).every((h) => h.uploaded));
      const stamp = { ms: clock.now(), counter: state.writes.length, node: fromHex(signer)! };
      const cells = Object.fromEntries(Object.entries(cols).map(([c, value]) => [c, { value, stamp }]));
      rows.set(`${table}\u0000${row}`, { table, row, cells });
      return ok({ outerId: 'x', resurrections: [] });
    },
    rows: async (table) => [...rows.values()].filter((r) => r.table === table),
    online: () => state.online,
    catchUp: async () => {
      state.catchUps++;
    },
    removed: () => state.removed,
    notice: (_, text) => state.notices.push(text),
    changed: () => undefined,
    views: () => [],
    isAdmin: () => true,
  });
  return { objects, signer, rows, state, name, service };
}

describe('MeshObjects', () => {
  let t: Awaited<ReturnType<typeof setUp>>;
  beforeEach(async () => {
    t = await setUp();
  });

  it('keeps an object formed offline pending, then publishes it after catching up', async () => {
    const formed = await t.objects.importSample('GENERAL', 500);
    if (!formed.ok) throw new Error(formed.error.type);
    const id = formed.value.id;
    await t.objects.sync();
    expect(t.state.writes).toEqual([]);
    expect(t.state.notices.some((n) => n.includes('formed offline'))).toBe(true);
    expect((await t.objects.entries()).map((e) => [e.id, e.state])).toEqual([[id, 'pending']]);
    // Its own rows are there at once on the machine that formed them, offline too.
    const offline = await t.objects.query('SELECT count(*) AS n FROM measurements');
    expect(offline.ok && offline.value.rows).toEqual([[500]]);

    t.state.online = true;
    await t.objects.sync();
    expect(t.state.catchUps).toBe(1);
    // The bytes at the relay first, then the access record, then the manifest that makes the object visible.
    expect(t.state.writes).toEqual([
      `${ACCESS_TABLE} GENERAL:${t.signer}:${id}:1`,
      `${CATALOG_TABLE} GENERAL:${t.signer}:${id}`,
    ]);
    const [entry] = await t.objects.entries();
    expect(entry).toMatchObject({ id, state: 'published', domain: 'GENERAL', producer: t.signer, held: true });
    expect(t.state.uploadedAtWrites).toEqual([true, true]);
    expect(entry?.manifest?.rows).toBe(500);
    // Published once: another cycle writes nothing; the rows are counted once.
    await t.objects.sync();
    expect(t.state.writes).toHaveLength(2);
    const online = await t.objects.query('SELECT count(*) AS n FROM measurements');
    expect(online.ok && online.value.rows).toEqual([[500]]);
    const csv = await t.objects.download(id, 'csv');
    if (!csv.ok) throw new Error(csv.error.type);
    expect(new TextDecoder().decode(csv.value).trimEnd().split('\n')).toHaveLength(501);
  });

  it('lists a large catalog for the UI at most every 2 s, and a small one at every asking', async () => {
    const put = (n: number) => {
      const id = n.toString(16).padStart(64, '0');
      const stamp = { ms: 1, counter: n, node: fromHex(t.signer)! };
      t.rows.set(`${CATALOG_TABLE}\u0000GENERAL:${t.signer}:${id}`, {
        table: CATALOG_TABLE,
        row: `GENERAL:${t.signer}:${id}`,
        cells: { manifest: { value: 'AAAA', stamp } },
      });
    };
    let now = 1_000_000;
    const clock = vi.spyOn(Date, 'now').mockImplementation(() => now);
    try {
      put(0);
      expect(await t.objects.entries()).toHaveLength(1);
      put(1);
      expect(await t.objects.entries()).toHaveLength(2);
      for (let n = 2; n <= 1001; n++) put(n);
      const large = await t.objects.entries();
      expect(large).toHaveLength(1002);
      put(1002);
      now += 1_999;
      expect(await t.objects.entries()).toBe(large);
      now += 1;
      expect(await t.objects.entries()).toHaveLength(1003);
    } finally {
      clock.mockRestore();
    }
  });

  it('names the table as its person typed it, made a table name; blank or unusable names keep the default', async () => {
    const tableOf = async (formed: ReturnType<typeof t.objects.importSample>) => {
      const done = await formed;
      if (!done.ok) throw new Error(done.error.type);
      return done.value.manifest?.table;
    };
    expect(await tableOf(t.objects.importSample('GENERAL', 10, undefined, 'Field Trial 2'))).toBe('field_trial_2');
    expect(await tableOf(t.objects.importSample('GENERAL', 10, undefined, ' weir.v2 '))).toBe('weir_v2');
    expect(await tableOf(t.objects.importSample('GENERAL', 10, undefined, '   '))).toBe('measurements');
    expect(await tableOf(t.objects.importSample('GENERAL', 10, undefined, '2024'))).toBe('measurements');
    expect(await tableOf(t.objects.importSample('GENERAL', 10))).toBe('measurements');
    const file = new File(['time,depth\n2026-12-01T00:00:00Z,1.5\n'], 'Drill Cores.csv', { type: 'text/csv' });
    expect(await tableOf(t.objects.importCsv(file, 'GENERAL'))).toBe('drill_cores');
    expect(await tableOf(t.objects.importCsv(file, 'GENERAL', undefined, 'cores north'))).toBe('cores_north');
  });

  it('refuses for good what a removed machine formed and never published', async () => {
    const formed = await t.objects.importSample('GENERAL', 10);
    if (!formed.ok) throw new Error(formed.error.type);
    t.state.removed = true;
    t.state.online = true;
    await t.objects.sync();
    expect(t.state.writes).toEqual([]);
    expect(t.state.notices.some((n) => n.includes('can no longer be published'))).toBe(true);
    const [entry] = await t.objects.entries();
    expect(entry?.state).toBe('refused');
    t.state.removed = false;
    await t.objects.sync();
    expect(t.state.writes).toEqual([]);
  });

  it("takes an object's record from a rotation's batch row, and ignores malformed or misplaced batches", async () => {
    const formed = await t.objects.importSample('GENERAL', 10);
    if (!formed.ok) throw new Error(formed.error.type);
    t.state.online = true;
    await t.objects.sync();
    const id = formed.value.id;
    const single = `${ACCESS_TABLE}\u0000GENERAL:${t.signer}:${id}:1`;
    const record = t.rows.get(single)!;
    const wrapped = fromBase64Url(record.cells['wrapped']!.value as string)!;
    t.rows.delete(single);
    const put = (row: string, value: string) =>
      t.rows.set(`${ACCESS_TABLE}\u0000${row}`, {
        table: ACCESS_TABLE,
        row,
        cells: { wrapped: { value, stamp: record.cells['wrapped']!.stamp } },
      });
    const batch = toBase64Url(encodeAccessBatch([{ storageId: id as StorageId, wrapped }]));
    put(`GENERAL:${t.signer}:batch:1:${id}`, batch);
    // Not batches: a torn batch, one named in another domain, a row key of six parts.
    put(`GENERAL:${t.signer}:batch:2:${id}`, batch.slice(0, -4));
    put(`PERSONAL:${t.signer}:batch:3:${id}`, batch);
    put(`GENERAL:${t.signer}:batch:4:${id}:x`, batch);
    const fresh = await setUpReader(t.rows);
    expect(await fresh.catalogObjects()).toEqual([{ id, domain: 'GENERAL', gens: [1] }]);
    const csv = await fresh.download(id, 'csv');
    expect(csv.ok && new TextDecoder().decode(csv.value).trimEnd().split('\n')).toHaveLength(11);
  });

  it('shows a catalog row published under another producer as a typed error', async () => {
    const formed = await t.objects.importSample('GENERAL', 10);
    if (!formed.ok) throw new Error(formed.error.type);
    t.state.online = true;
    await t.objects.sync();
    const id = formed.value.id;
    const forged = 'ab'.repeat(32);
    for (const [key, row] of [...t.rows]) {
      t.rows.delete(key);
      const moved = row.row.replace(t.signer, forged);
      t.rows.set(`${row.table}\u0000${moved}`, { ...row, row: moved });
    }
    const fresh = await setUpReader(t.rows);
    const [entry] = await fresh.entries();
    expect(entry).toMatchObject({ id, state: 'published', producer: forged, manifest: undefined });
    expect(entry?.error).toMatch(/^ProducerMismatch/);
  });
});

/** A second MeshObjects over the same catalog rows, on the first machine's keys (it holds GENERAL). */
async function setUpReader(rows: Map<string, RowState>): Promise<MeshObjects> {
  const name = `mesh-objects-${stores}`;
  // Its own crypto service on those keys: the holder of the domain keys it loads from the key store.
  const crypto = new CryptoService(new KeyDatabase(name), clock);
  await crypto.init();
  const service = new ObjectService(
    crypto.accessKeys,
    new KeyDatabase(name),
    new ObjectDatabase(`${name}-objects`),
    clock,
  );
  await service.reload();
  return new MeshObjects({
    service,
    self: () => 'cd'.repeat(32),
    relayUrl: () => undefined,
    write: async () => ok({ outerId: 'x', resurrections: [] }),
    rows: async (table) => [...rows.values()].filter((r) => r.table === table),
    online: () => false,
    catchUp: async () => undefined,
    removed: () => false,
    notice: () => undefined,
    changed: () => undefined,
    views: () => [],
    isAdmin: () => false,
  });
}

describe('deleting rows of an object table (delete objects)', () => {
  let t: Awaited<ReturnType<typeof setUp>>;
  beforeEach(async () => {
    t = await setUp();
    t.state.online = true;
    const formed = await t.objects.importSample('GENERAL', 50, undefined, 'readings');
    if (!formed.ok) throw new Error(formed.error.type);
    await t.objects.sync();
  });

  const all = async (objects = t.objects) => {
    const ran = await objects.query('SELECT device, time FROM readings');
    if (!ran.ok) throw new Error(JSON.stringify(ran.error));
    return ran.value;
  };
  const count = async (objects = t.objects) => {
    const ran = await objects.query('SELECT count(*) AS n FROM readings');
    return ran.ok ? ran.value.rows[0]?.[0] : ran.error;
  };

  it('hides the deleted rows from queries and downloads, for good, once an admin allowed it', async () => {
    const before = await all();
    expect(before.rowIds).toHaveLength(50);
    const doomed = before.rowIds!.slice(0, 10);
    expect(await t.objects.deleteRows('readings', doomed)).toMatchObject({
      ok: false,
      error: { type: 'InvalidDelete' },
    });
    expect((await t.objects.allowDeletes('readings')).ok).toBe(true);
    expect(await t.objects.deletable()).toEqual(['readings']);
    const deleted = await t.objects.deleteRows('readings', doomed);
    if (!deleted.ok) throw new Error(JSON.stringify(deleted.error));
    expect(deleted.value.map((p) => [p.domain, p.table, p.manifest?.kind, p.manifest?.rows])).toEqual([
      ['GENERAL', 'readings', 'delete', 10],
    ]);
    await t.objects.sync();
    const after = await all();
    expect(after.rows).toHaveLength(40);
    expect(after.rowIds!.filter((id) => doomed.includes(id))).toEqual([]);
    expect(await count()).toBe(40);
    // The delete object is an object like any: published, its manifest says what it is.
    const listed = (await t.objects.entries()).find((e) => e.manifest?.kind === 'delete');
    expect(listed).toMatchObject({ state: 'published', domain: 'GENERAL' });
    // Downloads never show a deleted row either.
    const data = (await t.objects.entries()).find((e) => e.manifest?.kind === undefined)!;
    const csv = await t.objects.download(data.id, 'csv');
    if (!csv.ok) throw new Error(csv.error.type);
    const lines = new TextDecoder().decode(csv.value).trimEnd().split('\n');
    expect(lines).toHaveLength(41);
    expect(lines.some((line) => doomed.some((id) => line.includes(id)))).toBe(false);
    const parquet = await t.objects.download(data.id, 'parquet');
    expect(parquet.ok).toBe(true);
  });

  it('a delete known before the data object still hides its rows; an unknown identity is refused', async () => {
    expect((await t.objects.allowDeletes('readings')).ok).toBe(true);
    const doomed = (await all()).rowIds!.slice(5, 15);
    expect(await t.objects.deleteRows('readings', ['ab'.repeat(16)])).toMatchObject({
      ok: false,
      error: { type: 'InvalidDelete' },
    });
    expect((await t.objects.deleteRows('readings', doomed)).ok).toBe(true);
    await t.objects.sync();
    // A machine that has the delete's catalog rows and not yet the data object's.
    const deleteId = (await t.objects.entries()).find((e) => e.manifest?.kind === 'delete')!.id;
    const dataKey = [...t.rows.keys()].find(
      (key) => key.startsWith(`${CATALOG_TABLE}\u0000`) && !key.endsWith(deleteId),
    )!;
    const early = await setUpReader(new Map([...t.rows].filter(([key]) => key !== dataKey)));
    expect(await count(early)).toMatchObject({ type: 'UnknownTable' });
    const full = await setUpReader(t.rows);
    expect(await count(full)).toBe(40);
    expect((await all(full)).rowIds!.filter((id) => doomed.includes(id))).toEqual([]);
  });

  it('a delete this machine cannot open fails the query rather than show the rows it hides', async () => {
    expect((await t.objects.allowDeletes('readings')).ok).toBe(true);
    expect((await t.objects.deleteRows('readings', (await all()).rowIds!.slice(0, 3))).ok).toBe(true);
    await t.objects.sync();
    const reader = await setUpReader(t.rows);
    expect(await count(reader)).toBe(47);
    // Its bytes gone from this machine, and no relay to fetch them from.
    const deleteId = (await t.objects.entries()).find((e) => e.manifest?.kind === 'delete')!.id;
    const db = new ObjectDatabase(`mesh-objects-${stores}-objects`);
    await db.transaction('rw', db.blobs, db.bytes, async () => {
      await db.blobs.delete(deleteId);
      await db.bytes.delete(deleteId);
    });
    db.close();
    const blind = await setUpReader(t.rows);
    expect(await count(blind)).toMatchObject({ type: 'ObjectUnavailable', id: deleteId });
  });

  it('rows deleted offline are hidden here at once, before their delete is published', async () => {
    expect((await t.objects.allowDeletes('readings')).ok).toBe(true);
    t.state.online = false;
    expect((await t.objects.deleteRows('readings', (await all()).rowIds!.slice(0, 7))).ok).toBe(true);
    await t.objects.sync();
    expect((await t.objects.entries()).filter((e) => e.state === 'pending').map((e) => e.manifest?.kind)).toEqual([
      'delete',
    ]);
    expect(await count()).toBe(43);
    const data = (await t.objects.entries()).find((e) => e.manifest?.kind === undefined)!;
    const csv = await t.objects.download(data.id, 'csv');
    expect(csv.ok && new TextDecoder().decode(csv.value).trimEnd().split('\n')).toHaveLength(44);
  });

  it('deletes of a table nobody allowed deletes for are not applied', async () => {
    expect((await t.objects.allowDeletes('readings')).ok).toBe(true);
    expect((await t.objects.deleteRows('readings', (await all()).rowIds!.slice(0, 4))).ok).toBe(true);
    await t.objects.sync();
    expect(await count()).toBe(46);
    t.rows.delete(`object_tables\u0000readings`);
    expect(await count()).toBe(50);
  });
});

describe('compacting a table', () => {
  it('merges the small objects into one that supersedes them: the same answers, less deleted rows', async () => {
    const t = await setUp();
    t.state.online = true;
    for (let i = 0; i < 3; i++) {
      const formed = await t.objects.importSample('GENERAL', 20, undefined, 'readings');
      if (!formed.ok) throw new Error(formed.error.type);
    }
    await t.objects.sync();
    const grouped = async (objects: MeshObjects) => {
      const ran = await objects.query(
        'SELECT device, count(*) AS n, min(temperature) AS lo, max(humidity) AS hi FROM readings GROUP BY device ORDER BY device',
      );
      if (!ran.ok) throw new Error(JSON.stringify(ran.error));
      return ran.value;
    };
    expect((await t.objects.compact('GENERAL', 'nothing_here')).ok).toBe(true);
    expect((await t.objects.allowDeletes('readings')).ok).toBe(true);
    const listed = await t.objects.query('SELECT time FROM readings');
    if (!listed.ok) throw new Error(listed.error.type);
    expect((await t.objects.deleteRows('readings', listed.value.rowIds!.slice(0, 2))).ok).toBe(true);
    await t.objects.sync();
    const before = await grouped(t.objects);
    expect(before.explain.scanned).toBe(3);

    const compacted = await t.objects.compact('GENERAL', 'readings');
    if (!compacted.ok || !compacted.value) throw new Error(JSON.stringify(compacted));
    expect([compacted.value.inputs, compacted.value.rows, compacted.value.dropped]).toEqual([3, 58, 2]);
    // Formed, not yet published: the old set is what queries read.
    expect((await grouped(t.objects)).rows).toEqual(before.rows);
    await t.objects.sync();
    const after = await grouped(t.objects);
    expect(after.rows).toEqual(before.rows);
    expect([after.explain.scanned, after.explain.pruned.map((p) => p.reason)]).toEqual([
      1,
      ['superseded', 'superseded', 'superseded'],
    ]);
    // On another machine of the domain, the same; and nothing is left worth compacting.
    expect((await grouped(await setUpReader(t.rows))).rows).toEqual(before.rows);
    expect(await t.objects.compact('GENERAL', 'readings')).toEqual({ ok: true, value: undefined });
    // A week on, this machine drops its copies of the three; the answers stay.
    const held = async () => (await t.objects.entries()).filter((e) => e.held).length;
    expect(await held()).toBe(5); // three inputs, the delete, the compaction
    clock.advance(6 * 24 * 3600_000);
    expect(await t.objects.dropSuperseded()).toBe(0);
    clock.advance(2 * 24 * 3600_000);
    expect(await t.objects.dropSuperseded()).toBe(3);
    expect(await held()).toBe(2);
    expect((await grouped(t.objects)).rows).toEqual(before.rows);
  });
});

describe('compacting more objects than one manifest can name', () => {
  it('goes in rounds of at most 100, each manifest small enough to publish', async () => {
    const t = await setUp();
    t.state.online = true;
    for (let i = 0; i < 103; i++) {
      const formed = await t.objects.importSample('GENERAL', 2, undefined, 'tiny');
      if (!formed.ok) throw new Error(formed.error.type);
    }
    await t.objects.sync();
    const first = await t.objects.compact('GENERAL', 'tiny');
    expect(first.ok && first.value?.inputs).toBe(100);
    // The round formed here, not yet published, already holds its inputs: the next takes the rest and it.
    const second = await t.objects.compact('GENERAL', 'tiny');
    expect(second.ok && [second.value?.inputs, second.value?.rows]).toEqual([4, 206]);
    expect(await t.objects.compact('GENERAL', 'tiny')).toEqual({ ok: true, value: undefined });
    await t.objects.sync();
    expect(t.state.notices.filter((n) => n.includes('not published'))).toEqual([]);
    const counted = await t.objects.query('SELECT count(*) AS n FROM tiny');
    expect(counted.ok && [counted.value.rows, counted.value.explain.scanned]).toEqual([[[206]], 1]);
  });
});

describe('querying objects this machine does not hold', () => {
  const SQL = "SELECT device, avg(temperature) AS t FROM readings WHERE device = 'weir' GROUP BY device";
  const EVERY_COLUMN = 'SELECT time, device, temperature, humidity, pressure, battery, status FROM readings';
  let t: Awaited<ReturnType<typeof setUp>>;
  let ids: string[];
  beforeEach(async () => {
    t = await setUp();
    t.state.online = true;
    for (let i = 0; i < 3; i++) {
      const formed = await t.objects.importSample('GENERAL', 10_000, undefined, 'readings');
      if (!formed.ok) throw new Error(formed.error.type);
    }
    await t.objects.sync();
    ids = (await t.service.held()).map((h) => h.id);
    expect(ids).toHaveLength(3);
  });

  const run = async () => {
    const ran = await t.objects.query(SQL);
    if (!ran.ok) throw new Error(JSON.stringify(ran.error));
    return ran.value;
  };
  /** The relay's stored copy of an object (its blind store keeps one file per object, named by its id). */
  const relayCopy = (id: string): string => {
    const find = (dir: string): string | undefined => {
      for (const name of readdirSync(dir)) {
        const path = join(dir, name);
        if (statSync(path).isDirectory()) {
          const found = find(path);
          if (found) return found;
        } else if (name === id) return path;
      }
      return undefined;
    };
    return find(relayDir)!;
  };

  it('reads them in ranges from the relay: the same answer, a fraction of the bytes, nothing kept', async () => {
    const local = await run();
    expect(local.explain.bytesFetched).toBe(0);
    const store = new DexieObjectStore(new ObjectDatabase(`${t.name}-objects`));
    for (const id of ids) await store.dropBlob(id);
    const remote = await run();
    expect(remote.rows).toEqual(local.rows);
    expect(remote.explain.bytesFetched).toBeGreaterThan(0);
    // Each object's tail and the chunks of the two columns the query reads: less than the objects.
    expect(remote.explain.bytesFetched).toBeLessThan(remote.explain.bytesRead);
    expect(await t.service.held()).toEqual([]);
  });

  it('refuses an object the relay changed, and one it no longer has, with a typed error', async () => {
    const store = new DexieObjectStore(new ObjectDatabase(`${t.name}-objects`));
    for (const id of ids) await store.dropBlob(id);
    const path = relayCopy(ids[0]!);
    const bytes = readFileSync(path);
    const original = Buffer.from(bytes);
    // A byte of a page (read by a query of every column), then one of the footer.
    for (const at of [Math.floor(bytes.length / 2), bytes.length - 40]) {
      bytes[at] = bytes[at]! ^ 0xff;
      writeFileSync(path, bytes);
      const ran = await t.objects.query(EVERY_COLUMN);
      expect(ran.ok).toBe(false);
      if (!ran.ok) expect(['DecryptFailed', 'Malformed', 'Truncated', 'ObjectUnavailable']).toContain(ran.error.type);
      writeFileSync(path, original);
    }
    expect((await t.objects.query(SQL)).ok).toBe(true);
    // A plaintext Parquet file of forged rows, padded to the object's size (bytes between the
    // last chunk and the footer are free in Parquet): readable without any key, so a relay
    // could make one — refused, since a ranged object must have an encrypted footer.
    const p = new Uint8Array(
      parquetWriteBuffer({
        columnData: [
          { name: 'device', data: ['weir', 'weir'], type: 'STRING', nullable: false },
          { name: 'temperature', data: [999, 999], type: 'DOUBLE', nullable: true },
        ],
      }),
    );
    const footerLength = new DataView(p.buffer, p.byteOffset).getUint32(p.length - 8, true);
    const footerStart = p.length - 8 - footerLength;
    expect(p.length).toBeLessThan(original.length);
    const forged = Buffer.concat([
      p.subarray(0, footerStart),
      Buffer.alloc(original.length - p.length),
      p.subarray(footerStart),
    ]);
    expect(forged.length).toBe(original.length);
    writeFileSync(path, forged);
    const substituted = await t.objects.query(SQL);
    expect(substituted.ok ? 'answered' : substituted.error).toEqual({
      type: 'ObjectUnavailable',
      id: ids[0],
      reason: 'HashMismatch',
    });
    writeFileSync(path, original.subarray(0, original.length - 100));
    const short = await t.objects.query(SQL);
    expect(short.ok ? 'answered' : short.error.type).not.toBe('answered');
    writeFileSync(path, original);
  });
});
