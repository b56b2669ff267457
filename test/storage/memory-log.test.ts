/**
 * The memory store's columnar log (memory-log.ts): the name index against a
 * plain map under any order of naming and forgetting, and arena copies.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { toHex } from '../../src/core/bytes.js';
import { Arena, NameColumn } from '../../src/storage/memory-log.js';
import { runs } from '../helpers/runs.js';

/** Names as replicas make them: hex ids with an envelope suffix, bare hex, and short irregular ones. */
const name = fc.oneof(
  fc.uint8Array({ minLength: 32, maxLength: 32 }).map((b) => `${toHex(b)}.GENERAL.1`),
  fc.uint8Array({ minLength: 32, maxLength: 32 }).map((b) => toHex(b)),
  // Ids that share their leading bytes collide in the index: probing and deletion must cope.
  fc.uint8Array({ minLength: 2, maxLength: 2 }).map((b) => `${'ab'.repeat(30)}${toHex(b)}`),
  fc.string({ maxLength: 12 }),
  fc.constant('AB'.repeat(32)),
);

describe('NameColumn', () => {
  it('finds exactly the names it holds, however names are set and cleared (1,000 runs)', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.boolean(), name, fc.nat()), { maxLength: 300 }), (ops) => {
        const column = new NameColumn();
        column.grow(400);
        const model = new Map<string, number>();
        const byPos = new Map<number, string>();
        let next = 1;
        for (const [add, n, pick] of ops) {
          if (add && !model.has(n) && next < 400) {
            column.set(next, n);
            model.set(n, next);
            byPos.set(next, n);
            next++;
          } else if (byPos.size > 0) {
            const positions = [...byPos.keys()];
            const pos = positions[pick % positions.length]!;
            column.clear(pos);
            model.delete(byPos.get(pos)!);
            byPos.delete(pos);
          }
          for (const [held, pos] of model) {
            expect(column.find(held)).toBe(pos);
            expect(column.at(pos)).toBe(held);
          }
        }
        for (const pos of [...byPos.keys()]) expect(column.named(pos)).toBe(true);
        expect(column.find('ff'.repeat(32))).toBe(model.get('ff'.repeat(32)) ?? 0);
      }),
      { numRuns: runs(1000) },
    );
  });

  it('keeps an uppercase spelling apart from the lowercase one', () => {
    const column = new NameColumn();
    column.set(1, 'ab'.repeat(32));
    column.set(2, 'AB'.repeat(32));
    expect(column.find('ab'.repeat(32))).toBe(1);
    expect(column.find('AB'.repeat(32))).toBe(2);
    expect(column.find('aB'.repeat(32))).toBe(0);
  });

  it('grows its index past many thousands of names', () => {
    const column = new NameColumn();
    column.grow(20_001);
    const names = Array.from({ length: 20_000 }, (_, i) => `${i.toString(16).padStart(64, '0')}.GENERAL.2`);
    names.forEach((n, i) => column.set(i + 1, n));
    names.forEach((n, i) => expect(column.find(n)).toBe(i + 1));
    expect(column.find(`${'0'.repeat(64)}.GENERAL.1`)).toBe(0);
  });
});

describe('Arena', () => {
  it('keeps its own copies, small ones in shared chunks and large ones apart', () => {
    const arena = new Arena();
    const small = Uint8Array.from({ length: 300 }, (_, i) => i & 255);
    const large = new Uint8Array(Arena.CHUNK / 8).fill(7);
    const kept = [...Array.from({ length: 5000 }, () => arena.put(small)), arena.put(large)];
    small.fill(0);
    large.fill(0);
    for (const at of kept.slice(0, -1)) expect(arena.view(at, 300)[299]).toBe(299 & 255);
    expect(arena.view(kept.at(-1)!, large.length).every((b) => b === 7)).toBe(true);
  });
});
