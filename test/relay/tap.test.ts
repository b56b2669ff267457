/**
 * The audit tap's file (src/relay/tap.ts): records read back as written, with time, channel,
 * connection and head; files of earlier releases still read; a record cut off by a crash is
 * left out, never misread.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { fileTap, readTap } from '../../src/relay/tap.js';

describe('tap file', () => {
  let dir = '';
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'sov-tap-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('reads back what it wrote: direction, channel, time, connection, head and bytes', () => {
    const path = join(dir, 'wire.tap');
    let t = 1_765_000_000_000;
    const tap = fileTap(path, () => (t += 1.5));
    tap({ direction: 'in', channel: 'ws', conn: 7, head: '', bytes: Uint8Array.of(1, 2, 3) });
    tap({
      direction: 'in',
      channel: 'http',
      conn: 2,
      head: 'POST /api/v1/objects/get\nsov-auth: ✓',
      bytes: new Uint8Array(0),
    });
    // A second tap on the same file (a restarted relay) appends, without a second file header.
    fileTap(path, () => t + 10)({ direction: 'out', channel: 'http', conn: 2, head: '200', bytes: Uint8Array.of(9) });
    expect(readTap(readFileSync(path)).map((r) => ({ ...r, bytes: [...r.bytes] }))).toEqual([
      { direction: 'in', channel: 'ws', conn: 7, at: 1_765_000_000_001.5, head: '', bytes: [1, 2, 3] },
      {
        direction: 'in',
        channel: 'http',
        conn: 2,
        at: 1_765_000_000_003,
        head: 'POST /api/v1/objects/get\nsov-auth: ✓',
        bytes: [],
      },
      { direction: 'out', channel: 'http', conn: 2, at: 1_765_000_000_013, head: '200', bytes: [9] },
    ]);
    // Cut inside the last record: the whole records before it are read, the cut one is not.
    const whole = readFileSync(path);
    expect(readTap(whole.subarray(0, whole.length - 1))).toHaveLength(2);
  });

  it('reads a file of an earlier release (direction, length, bytes) as WebSocket records without time', () => {
    const old = Buffer.from([1, 0, 0, 0, 2, 0xaa, 0xbb, 2, 0, 0, 0, 1, 0xcc, 1, 0, 0, 0, 9]);
    writeFileSync(join(dir, 'old.tap'), old);
    expect(
      readTap(readFileSync(join(dir, 'old.tap'))).map((r) => [r.direction, r.channel, r.conn, r.at, [...r.bytes]]),
    ).toEqual([
      ['in', 'ws', 0, 0, [0xaa, 0xbb]],
      ['out', 'ws', 0, 0, [0xcc]],
    ]);
  });
});
