/**
 * Benchmark `metadata` (issue 26): what a relay learns from sizes, on the path a headless
 * machine runs (test/helpers/metadata-scenario.ts). Two `sov node` machines paired through a
 * real `sov relay --tap`; the writer saves 200 notes of 1 to 2,000 characters (every 10th
 * length), each a unique marker, one at a time, each waited for on the reader. Then the tap
 * and the relay's data directory are read as an auditor would.
 *
 *   figures.distinct_frame_sizes  sizes among every frame the writer sent while it wrote
 *                                 (notes, acknowledgements, anything else) — aim ≤ 12
 *   figures.frames                those frames
 *   figures.marker_hits           markers found in the tap or the data directory, as UTF-8,
 *                                 UTF-16LE, hex, base64 or base64url (aim 0)
 *   figures.markers_searched      markers of 12 characters or more (shorter ones occur by
 *                                 chance in ciphertext)
 *   figures.padded_message_bytes  the writer's frame messages over the same time, padded
 *   anchors.message_bytes         the same messages before padding (counted by the writer's
 *                                 frame channel: runtime/frame-channel.ts `sent`)
 *   ratios.padding_overhead       padded ÷ unpadded (aim ≤ 1.15)
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runMetadataScenario } from '../test/helpers/metadata-scenario.ts';
import type { BenchResult } from './run.ts';

const LENGTHS = [1, ...Array.from({ length: 199 }, (_, i) => (i + 1) * 10 + 1).filter((n) => n <= 2000), 2000];

export async function run(): Promise<BenchResult> {
  const dir = await mkdtemp(join(tmpdir(), 'sov-bench-metadata-'));
  try {
    const result = await runMetadataScenario(dir, LENGTHS);
    if (!result.searchWorks) throw new Error('metadata: the search finds nothing, not even the routing ids');
    const { messageBytes, paddedBytes } = result.traffic;
    return {
      figures: {
        edits: LENGTHS.length,
        frames: result.frameSizes.length,
        distinct_frame_sizes: new Set(result.frameSizes).size,
        marker_hits: result.markerHits.length,
        markers_searched: result.searched,
        padded_message_bytes: paddedBytes,
      },
      anchors: { message_bytes: messageBytes },
      ratios: { padding_overhead: paddedBytes / messageBytes },
    };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
