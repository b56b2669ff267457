/**
 * The object plane in three browsers (seed 003 "Writing an object"): the collector
 * imports a CSV into RESTRICTED (which the server may not read) and generates sample
 * measurements into GENERAL. The workstation sees both in its catalog and downloads
 * the decrypted CSV; the server, placed to store every domain, copies both objects'
 * bytes from the relay's blind store — the RESTRICTED one byte for byte — reads the
 * GENERAL one (positive control) and opens nothing of the RESTRICTED one: every key it
 * holds gives a typed NoKeyOpens. The relay's copy holds no plaintext.
 */
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from '@playwright/test';
import { openParquet } from '../../src/core/parquet/read.ts';
import { webPmeCipher } from '../../src/runtime/pme-cipher.ts';
import { expect, expectMachines, pair, pairAnother, test, view } from './relay-process.ts';

const object = (page: Page, table: string) => page.locator(`[data-testid="object"][data-table="${table}"]`);
const byId = (page: Page, id: string) => page.locator(`[data-testid="object"][data-id="${id}"]`);

const CANARY = 'core-Ωmega-canary-5e1d';
const CSV = [
  'time,core,depth_m,intact,note',
  ...Array.from(
    { length: 500 },
    (_, i) =>
      `2026-11-${String(1 + (i % 28)).padStart(2, '0')}T0${i % 10}:00:00Z,${i},${(i * 0.25).toFixed(2)},${i % 3 !== 0},${i === 42 ? CANARY : i % 7 === 0 ? '' : `"box ${i}, shelf ${i % 5}"`}`,
  ),
].join('\n');

/** SHA-256 of the bytes a page's machine holds for one object (its IndexedDB object store). */
async function heldDigest(page: Page, id: string): Promise<string> {
  const hex = await page.evaluate(async (objectId) => {
    const db = await new Promise<IDBDatabase>((resolve, reject) => {
      const open = indexedDB.open('sov-objects');
      open.onsuccess = () => resolve(open.result);
      open.onerror = () => reject(new Error(String(open.error)));
    });
    const record = await new Promise<{ bytes: Uint8Array } | undefined>((resolve, reject) => {
      const get = db.transaction('bytes').objectStore('bytes').get(objectId);
      get.onsuccess = () => resolve(get.result as { bytes: Uint8Array } | undefined);
      get.onerror = () => reject(new Error(String(get.error)));
    });
    db.close();
    if (!record) return '';
    const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', new Uint8Array(record.bytes)));
    return Array.from(digest, (b) => b.toString(16).padStart(2, '0')).join('');
  }, id);
  return hex;
}

test('a CSV imported on the collector reaches the workstation readable and the server stored but sealed', async ({
  browser,
  relay,
}) => {
  const open = async (): Promise<Page> => (await browser.newContext({ acceptDownloads: true })).newPage();
  const [ws, col, srv] = [await open(), await open(), await open()];
  await pair(relay, ws, col);
  await pairAnother(relay, ws, srv, 'server');
  await expectMachines([ws, col], 3, 'domains');
  await expectMachines([srv], 3, 'objects');

  await ws.getByTestId('domain-name').fill('RESTRICTED');
  await ws.getByTestId('domain-purpose').fill('drill cores before publication');
  await ws.locator('[data-testid="domain-exclude"][data-name="server"]').check();
  await ws.getByTestId('domain-create-submit').click();
  await expect(col.locator('[data-testid="domain"][data-domain="RESTRICTED"]')).toHaveAttribute('data-member', 'yes');
  // The admin places every domain's objects on the server.
  await view(ws, 'objects');
  await ws.locator('[data-testid="placement"][data-name="server"]').getByTestId('placement-select').selectOption('*');
  await expect(srv.getByTestId('own-placement')).toContainText('every domain');

  // The collector imports the CSV into RESTRICTED: it is formed (ZSTD pages), then published.
  await view(col, 'objects');
  await expect(col.getByTestId('object-compression')).toHaveText('Objects formed here: ZSTD pages.');
  await col.getByTestId('object-domain').selectOption('RESTRICTED');
  await col
    .getByTestId('object-file')
    .setInputFiles({ name: 'Drill Cores.csv', mimeType: 'text/csv', buffer: Buffer.from(CSV) });
  await col.getByTestId('object-import').click();
  const cores = object(col, 'drill_cores');
  await expect(cores).toHaveAttribute('data-state', 'published');
  // The field no longer names the file it imported.
  await expect(col.getByTestId('object-file')).toHaveValue('');
  await expect(cores.getByTestId('object-summary')).toContainText('500 rows · 5 columns · by collector');
  const id = (await cores.getAttribute('data-id'))!;
  expect(id).toMatch(/^[0-9a-f]{64}$/);
  // And sample measurements into GENERAL, with a progress bar while it writes.
  await col.getByTestId('object-domain').selectOption('GENERAL');
  await col.getByTestId('sample-rows').fill('60000');
  await col.getByTestId('object-sample').click();
  await expect(col.getByTestId('import-progress')).toBeVisible();
  await expect(col.getByTestId('import-progress-text')).toContainText(
    /Writing · [\d,.\s\u202f]+ of 60[,.\s\u202f]000 rows/,
  );
  const measurements = object(col, 'measurements');
  await expect(measurements).toHaveAttribute('data-state', 'published');
  const sampleId = (await measurements.getAttribute('data-id'))!;

  // The workstation reads both in its catalog, with their manifests, and downloads the CSV decrypted.
  await expect(object(ws, 'drill_cores')).toHaveAttribute('data-readable', 'yes');
  await expect(object(ws, 'measurements').getByTestId('object-summary')).toContainText('60,000 rows');
  const stats = object(ws, 'drill_cores').locator('[data-column="depth_m"] td');
  await expect(stats).toHaveText(['depth_m', 'double', '0', '0', '124.75']);
  const download = ws.waitForEvent('download');
  await object(ws, 'drill_cores').getByTestId('download-csv').click();
  const saved = await download;
  expect(saved.suggestedFilename()).toBe('drill_cores.csv');
  const text = readFileSync(await saved.path(), 'utf8');
  const lines = text.trimEnd().split('\n');
  expect(lines).toHaveLength(501);
  expect(lines[0]).toBe('time,core,depth_m,intact,note,_row_id');
  expect(lines[43]).toMatch(new RegExp(`^2026-11-15T02:00:00.000Z,42,10.5,false,${CANARY},[0-9a-f]{32}$`));

  // And as a plaintext Parquet file any reader opens without a key.
  const parquetDownload = ws.waitForEvent('download');
  await object(ws, 'drill_cores').getByTestId('download-parquet').click();
  const parquet = await openParquet(
    new Uint8Array(readFileSync(await (await parquetDownload).path())),
    {},
    webPmeCipher,
  );
  expect(parquet.ok && parquet.value.rowCount).toBe(500);

  // The server copies both objects' bytes from the relay (placement), readable or not.
  await expect(async () => {
    await srv.getByTestId('objects-sync').click();
    await expect(byId(srv, id)).toHaveAttribute('data-held', 'yes', { timeout: 2000 });
    await expect(byId(srv, sampleId)).toHaveAttribute('data-held', 'yes', { timeout: 2000 });
  }).toPass({ timeout: 60_000 });
  // Positive control: it reads the GENERAL object, and one of its keys opens it.
  await expect(byId(srv, sampleId)).toHaveAttribute('data-readable', 'yes');
  await byId(srv, sampleId).getByTestId('object-summary').waitFor();
  // The RESTRICTED object: byte for byte what the collector formed, and sealed to it.
  await expect(byId(srv, id)).toHaveAttribute('data-readable', 'no');
  await expect(byId(srv, id)).toHaveAttribute('data-state', 'stored');
  await expect(byId(srv, id)).toHaveAttribute('data-table', '');
  expect(await heldDigest(srv, id)).toBe(await heldDigest(col, id));
  await byId(srv, id).getByTestId('object-try-keys').click();
  await expect(byId(srv, id).getByTestId('object-probe')).toHaveText(
    /^NoKeyOpens: none of [2-9]\d* keys opens this object$/,
  );
  // Nor does it learn the schema: the catalog row is a sealed event of RESTRICTED it cannot open.
  await expect(srv.getByText('depth_m')).toHaveCount(0);

  // The relay's copy is the same bytes, and holds none of the plaintext.
  const topicDir = join(relay.dataDir, 'objects', readdirSync(join(relay.dataDir, 'objects'))[0]!);
  const stored = readFileSync(join(topicDir, id));
  const digest = createHash('sha256').update(stored).digest('hex');
  expect(digest).toBe(await heldDigest(col, id));
  for (const needle of [CANARY, 'depth_m', 'drill_cores', 'shelf'])
    expect(stored.includes(Buffer.from(needle))).toBe(false);
});
