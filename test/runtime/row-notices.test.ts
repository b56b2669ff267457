/**
 * A deleted row that came back is told once per overtaken delete, by the row's name, and
 * recorded ones are shown again at start as standing notices (runtime/row-notices.ts),
 * over a real NodeFeed and a fake state port.
 */
import { describe, expect, it } from 'vitest';
import type { Overtaken } from '../../src/core/merge.js';
import type { Resurrection } from '../../src/core/store.js';
import { NodeFeed } from '../../src/runtime/node-feed.js';
import type { NodeSnapshot } from '../../src/runtime/node-snapshot.js';
import type { StatePort } from '../../src/runtime/ports.js';
import { RowNotices } from '../../src/runtime/row-notices.js';

const resurrection = (
  deleteId: string,
  editId: string,
  row = 'r1',
  table = 'device_profiles',
  at = 1000,
): Resurrection => ({
  key: `${deleteId}:${editId}`,
  table,
  row,
  deleteId,
  editId,
  at,
});

function setup(recorded: Resurrection[] = [], names: Record<string, string> = { r1: 'Tank' }) {
  const feed = new NodeFeed(() => Promise.resolve({} as NodeSnapshot));
  const state = {
    resurrections: (limit: number) => Promise.resolve(recorded.slice(0, limit)),
    rowName: (_table: string, row: string) => Promise.resolve(names[row]),
  } as unknown as StatePort;
  return { feed, notices: new RowNotices(feed, state, () => new Map([['b'.repeat(64), 'collector']])) };
}

const lost = (column: string, mine: string | null, theirs: string, by = 'b'.repeat(64)): Overtaken => ({
  table: 'device_profiles',
  row: 'r1',
  column,
  mine,
  mineMs: 100,
  theirs,
  theirsMs: 200,
  by,
});

describe('lost offline edits', () => {
  it('say which column of which row, the value lost and whose value won, once each', async () => {
    const { feed, notices } = setup();
    await notices.announce([], [lost('location', 'yard', 'roof')]);
    await notices.announce([], [lost('location', 'yard', 'roof')]);
    await notices.announce([], [lost('notes', null, 'x'.repeat(100), 'c'.repeat(64))]);
    expect(feed.notices.map((n) => [n.kind, n.text, n.key, n.at])).toEqual([
      [
        'warning',
        `Your offline edit of the device profile “Tank” lost: its notes stays “${'x'.repeat(79)}…” from machine cccccccc, whose edit was later, not nothing.`,
        'lost/device_profiles/r1/notes/100',
        200,
      ],
      [
        'warning',
        'Your offline edit of the device profile “Tank” lost: its location stays “roof” from collector, whose edit was later, not “yard”.',
        'lost/device_profiles/r1/location/100',
        200,
      ],
    ]);
  });

  it('name a row without a name by its id', async () => {
    const { feed, notices } = setup([], {});
    await notices.announce([], [lost('location', 'yard', 'roof')]);
    expect(feed.notices[0]!.text).toMatch(/^Your offline edit of a device profile \(r1\) lost/);
  });
});

describe('resurrection notices', () => {
  it('tell each overtaken delete once, by the row’s name, however many edits pair with it', async () => {
    const { feed, notices } = setup();
    await notices.announce([resurrection('d1', 'e1'), resurrection('d1', 'e2')]);
    await notices.announce([resurrection('d1', 'e3')]);
    expect(feed.notices.map((n) => [n.kind, n.text, n.key, n.standing])).toEqual([
      [
        'resurrection',
        'The device profile “Tank” came back after it was deleted: an edit newer than the deletion won.',
        'd1',
        undefined,
      ],
    ]);
    // Another delete of the same row, overtaken again, is news again.
    await notices.announce([resurrection('d2', 'e4')]);
    expect(feed.notices.map((n) => n.key)).toEqual(['d2', 'd1']);
  });

  it('name a row without a name by its table and the start of its id', async () => {
    const { feed, notices } = setup([], {});
    await notices.announce([resurrection('d1', 'e1', 'abcdef0123456789', 'notes')]);
    await notices.announce([resurrection('d2', 'e1', 'r9', 'sensors')]);
    expect(feed.notices.map((n) => n.text)).toEqual([
      'A row of sensors (r9) came back after it was deleted: an edit newer than the deletion won.',
      'A note (abcdef01) came back after it was deleted: an edit newer than the deletion won.',
    ]);
  });

  it('show recorded ones again at start, standing, oldest first, and never announce them anew', async () => {
    // Newest first, as the store lists them: d2 (two pairs) and d1.
    const recorded = [
      resurrection('d2', 'e9', 'r1', 'device_profiles', 3000),
      resurrection('d2', 'e8', 'r1', 'device_profiles', 2000),
      resurrection('d1', 'e1', 'r1', 'device_profiles', 1000),
    ];
    const { feed, notices } = setup(recorded);
    await notices.load();
    expect(feed.notices.map((n) => [n.key, n.at, n.standing])).toEqual([
      ['d2', 2000, true],
      ['d1', 1000, true],
    ]);
    await notices.announce([resurrection('d1', 'e5'), resurrection('d2', 'e6')]);
    expect(feed.notices).toHaveLength(2);
  });

  it('show at most 20 at start; older ones are neither shown nor announced again', async () => {
    const recorded = Array.from({ length: 30 }, (_, i) =>
      resurrection(`d${30 - i}`, 'e', 'r1', 'device_profiles', 30 - i),
    );
    const { feed, notices } = setup(recorded);
    await notices.load();
    expect(feed.notices.map((n) => n.key)).toEqual(Array.from({ length: 20 }, (_, i) => `d${30 - i}`));
    await notices.announce([resurrection('d3', 'e7')]);
    expect(feed.notices).toHaveLength(20);
  });
});
