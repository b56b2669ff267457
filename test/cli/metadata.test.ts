/**
 * Issue 26, on the path a headless machine runs (test/helpers/metadata-scenario.ts): notes of
 * 1 to 2,000 characters written through a real relay with `--tap`. The relay sees at most 12
 * frame sizes for all of them (frames are padded to size classes: core/padding.ts), and no
 * marker appears in its tap or its data directory in any encoding.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runMetadataScenario } from '../helpers/metadata-scenario.ts';

const dir = mkdtempSync(join(tmpdir(), 'sov-metadata-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** 1, 2,000 and 38 lengths between, spread evenly. */
const LENGTHS = [1, ...Array.from({ length: 38 }, (_, i) => Math.round(((i + 1) * 2000) / 39)), 2000];

describe('what the relay learns from sizes', () => {
  it('sees at most 12 frame sizes for notes of 1 to 2,000 characters, and none of their text', async () => {
    const run = await runMetadataScenario(dir, LENGTHS);
    expect(run.frameSizes.length).toBeGreaterThanOrEqual(LENGTHS.length);
    expect(new Set(run.frameSizes).size).toBeLessThanOrEqual(12);
    expect(run.traffic.paddedBytes).toBeGreaterThan(run.traffic.messageBytes);
    expect(run.searchWorks).toBe(true);
    expect(run.searched).toBeGreaterThan(30);
    expect(run.markerHits).toEqual([]);
  }, 180_000);
});
