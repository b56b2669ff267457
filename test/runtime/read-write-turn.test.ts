/**
 * Turns for readers and one writer (src/runtime/read-write-turn.ts): reads run together, a
 * write waits for the reads under way and runs alone, and reads that come meanwhile wait for it.
 */
import { describe, expect, it } from 'vitest';
import { ReadWriteTurn } from '../../src/runtime/read-write-turn.js';

/** A promise and the call that settles it. */
function gate(): { readonly opened: Promise<void>; open(): void } {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { opened, open };
}

const tick = () => new Promise<void>((resolve) => setTimeout(resolve, 0));

describe('read-write turn', () => {
  it('runs reads together', async () => {
    const turn = new ReadWriteTurn();
    const log: string[] = [];
    const first = gate();
    const a = turn.read(async () => {
      log.push('a starts');
      await first.opened;
      log.push('a ends');
    });
    const b = turn.read(async () => void log.push('b runs'));
    await b;
    expect(log).toEqual(['a starts', 'b runs']);
    first.open();
    await a;
  });

  it('a write waits for the reads under way; a read that comes meanwhile waits for the write', async () => {
    const turn = new ReadWriteTurn();
    const log: string[] = [];
    const reading = gate();
    const early = turn.read(async () => {
      log.push('read 1 starts');
      await reading.opened;
      log.push('read 1 ends');
    });
    await tick();
    const write = turn.write(async () => void log.push('write'));
    await tick();
    const late = turn.read(async () => void log.push('read 2'));
    await tick();
    expect(log).toEqual(['read 1 starts']);
    reading.open();
    await Promise.all([early, write, late]);
    expect(log).toEqual(['read 1 starts', 'read 1 ends', 'write', 'read 2']);
  });

  it('writes run one at a time, and a failing one hands the turn on', async () => {
    const turn = new ReadWriteTurn();
    const log: string[] = [];
    const holding = gate();
    const first = turn.write(async () => {
      log.push('w1 starts');
      await holding.opened;
      throw new Error('w1 fails');
    });
    const second = turn.write(async () => void log.push('w2'));
    const read = turn.read(async () => void log.push('read'));
    await tick();
    expect(log).toEqual(['w1 starts']);
    holding.open();
    await expect(first).rejects.toThrow('w1 fails');
    await Promise.all([second, read]);
    expect(log).toEqual(['w1 starts', 'w2', 'read']);
  });

  it('a read that throws still lets a waiting write run', async () => {
    const turn = new ReadWriteTurn();
    const failing = turn.read(async () => {
      await tick();
      throw new Error('read fails');
    });
    const write = turn.write(async () => 'written');
    await expect(failing).rejects.toThrow('read fails');
    expect(await write).toBe('written');
  });
});
