/**
 * What a relay learns from sizes (issue 26), on the path a headless machine runs: two
 * machines (`sov node` as src/cli/headless.ts wires it) paired through a real relay started
 * with `--tap`; the writer saves notes of the given lengths one at a time, each a unique
 * marker, and each waits until the reader shows it. Then the relay's tap and data directory
 * are read the way an auditor would: the size of every frame the writer sent while it wrote,
 * and every place a marker could be, in every encoding `relay-audit.ts` knows.
 *
 * Shared by test/cli/metadata.test.ts (at most 12 sizes, no marker anywhere) and
 * `npm run bench -- metadata` (the same figures for the record, with padding's cost).
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { decodeFrame } from '../../src/core/frame.ts';
import { decodeEndpointMessage } from '../../src/core/relay-wire.ts';
import { readTap } from '../../src/relay/tap.ts';
import type { FrameTraffic } from '../../src/runtime/frame-channel.ts';
import { foundHeadless, machinesIn, pairHeadless, until } from './headless-mesh.ts';
import { forms, hits, relayHoldings } from './relay-audit.ts';
import { freePort, spawnRelay } from './relay-child.ts';

/** Markers shorter than this are not searched for: a few random characters occur by chance in ciphertext. */
const SEARCHABLE = 12;

export type MetadataRun = {
  /** Bytes of every frame the writer sent while it wrote the notes (as the relay received them). */
  readonly frameSizes: readonly number[];
  /** The writer's frames over the same time: messages' bytes and those bytes padded. */
  readonly traffic: FrameTraffic;
  /** How many markers were searched for, and those found anywhere the relay holds or saw. */
  readonly searched: number;
  readonly markerHits: readonly string[];
  /** Whether the search can find anything: the writer's endpoint id, which routes frames, is found. */
  readonly searchWorks: boolean;
};

/** A unique text of exactly `length` characters (from 12 on, unlike any other run's). */
function marker(i: number, length: number): string {
  const text = `mk${i.toString(36)}-${randomBytes(Math.ceil(length / 2)).toString('hex')}`;
  return text.slice(0, length);
}

const delta = (after: FrameTraffic, before: FrameTraffic): FrameTraffic => ({
  frames: after.frames - before.frames,
  messageBytes: after.messageBytes - before.messageBytes,
  paddedBytes: after.paddedBytes - before.paddedBytes,
});

export async function runMetadataScenario(dir: string, lengths: readonly number[]): Promise<MetadataRun> {
  const port = await freePort();
  const relayDir = join(dir, 'relay');
  const tapFile = join(dir, 'wire.tap');
  const relay = await spawnRelay(port, relayDir, ['--tap', tapFile]);
  const open = machinesIn(dir);
  const machines = [];
  try {
    const writer = await open('writer');
    machines.push(writer);
    await foundHeadless(writer, 'writer', port);
    const reader = await open('reader');
    machines.push(reader);
    await pairHeadless(writer, reader, 'reader');
    const endpoint = Buffer.from(writer.services.crypto.view().endpoint, 'hex');

    const started = Date.now();
    const before = writer.services.crypto.frameTraffic();
    const texts: string[] = [];
    for (const [i, length] of lengths.entries()) {
      const text = marker(i, length);
      texts.push(text);
      const written = await writer.node.writes.writeNote('GENERAL', 'note', text);
      if (!written.ok) throw new Error(`metadata: note not written (${written.error.type})`);
      await until(reader, (s) => s.notes.some((n) => n.values['text'] === text), `note ${i + 1} reaches the reader`);
    }
    const traffic = delta(writer.services.crypto.frameTraffic(), before);
    const ended = Date.now();

    const frameSizes = readTap(readFileSync(tapFile)).flatMap((r) => {
      if (r.direction !== 'in' || r.channel !== 'ws' || r.at < started || r.at > ended) return [];
      const m = decodeEndpointMessage(r.bytes);
      if (!m.ok || m.value.t !== 'send') return [];
      const frame = decodeFrame(m.value.body);
      return frame.ok && endpoint.equals(frame.value.header.from) ? [m.value.body.length] : [];
    });
    const held = relayHoldings(tapFile, relayDir);
    const needles = texts.filter((t) => t.length >= SEARCHABLE).map((t): [string, Buffer[]] => [t, forms(t)]);
    return {
      frameSizes,
      traffic,
      searched: needles.length,
      markerHits: hits(held, needles),
      searchWorks: held.some((h) => h.includes(endpoint)),
    };
  } finally {
    for (const m of machines) await m.close();
    relay.kill('SIGTERM');
  }
}
