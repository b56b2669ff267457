/**
 * Issue 26, on the path a headless machine runs (test/helpers/metadata-scenario.ts): notes of
 * 1 to 2,000 characters written through a real relay with `--tap`. The relay sees at most 12
 * frame sizes for all of them (frames are padded to size classes: core/padding.ts), and no
 * marker appears in its tap or its data directory in any encoding. And a machine that does not
 * read a domain asks the relay for the same sequencer traffic as one that does.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { toHex } from '../../src/core/bytes.ts';
import { decodeEndpointMessage } from '../../src/core/relay-wire.ts';
import { readTap } from '../../src/relay/tap.ts';
import type { Headless } from '../../src/cli/headless.ts';
import { foundHeadless, machinesIn, pairHeadless, until } from '../helpers/headless-mesh.ts';
import { runMetadataScenario } from '../helpers/metadata-scenario.ts';
import { freePort, spawnRelay } from '../helpers/relay-child.ts';

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

  it('cannot tell from sequencer traffic which machines read a domain', async () => {
    const port = await freePort();
    const tapFile = join(dir, 'membership.tap');
    const relay = await spawnRelay(port, join(dir, 'membership-relay'), ['--tap', tapFile]);
    const open = machinesIn(join(dir, 'membership'));
    const machines: Headless[] = [];
    try {
      const admin = await open('admin');
      machines.push(admin);
      await foundHeadless(admin, 'admin', port);
      for (const name of ['reader', 'outsider']) {
        const m = await open(name);
        machines.push(m);
        await pairHeadless(admin, m, name);
      }
      const [, reader, outsider] = machines as [Headless, Headless, Headless];
      const readerSigner = reader.services.crypto.view().signer;
      expect((await admin.node.domains.create('LAB', 'a domain only the reader reads', [readerSigner])).ok).toBe(true);
      const joined = (s: Parameters<Parameters<typeof until>[1]>[0]) =>
        s.domains.some((d) => d.domain === 'LAB' && d.mls?.epoch !== undefined && !d.mls.awaiting);
      await until(reader, joined, 'the reader reads LAB');
      await until(outsider, (s) => s.domains.some((d) => d.domain === 'LAB'), 'the outsider knows LAB exists');
      expect(joined(await until(outsider, () => true, 'a snapshot'))).toBe(false);

      // Both come back, each starting a new relay session: what each asks the sequencer for.
      const endpoints = new Map<string, string>();
      for (const name of ['reader', 'outsider'] as const) {
        const index = name === 'reader' ? 1 : 2;
        endpoints.set(machines[index]!.services.crypto.view().endpoint, name);
        await machines[index]!.close();
        const again = await open(name);
        machines[index] = again;
        await until(again, (s) => s.relay === 'ready', `${name} is back online`);
      }
      await new Promise((resolve) => setTimeout(resolve, 2_000));
      const asked = new Map<string, string[]>();
      const owner = new Map<number, string>();
      for (const r of readTap(readFileSync(tapFile))) {
        if (r.direction !== 'in' || r.channel !== 'ws') continue;
        const m = decodeEndpointMessage(r.bytes);
        if (!m.ok) continue;
        if (m.value.t === 'auth') {
          const name = endpoints.get(toHex(m.value.endpoint));
          if (name) owner.set(r.conn, name);
          asked.set(`${r.conn}`, []);
        }
        if (m.value.t === 'commits' && owner.has(r.conn)) {
          asked.get(`${r.conn}`)!.push(`${toHex(m.value.group)}@${m.value.from}`);
        }
      }
      // The last session of each: the same groups, from the same epochs.
      const last = (name: string) =>
        [...owner]
          .filter(([, n]) => n === name)
          .map(([conn]) => conn)
          .pop()!;
      const [ofReader, ofOutsider] = [asked.get(`${last('reader')}`)!, asked.get(`${last('outsider')}`)!];
      expect(new Set(ofReader).size).toBe(3); // CONTROL, GENERAL, LAB
      expect([...new Set(ofOutsider)].sort()).toEqual([...new Set(ofReader)].sort());
    } finally {
      for (const m of machines) await m.close();
      relay.kill('SIGTERM');
    }
  }, 180_000);
});
