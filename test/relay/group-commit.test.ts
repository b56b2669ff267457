/**
 * The relay's group commit (relay/group-commit.ts): frames added in one turn are
 * stored in one call, in order, each handed on with its own result; a flush
 * stores at once; a store that throws fails the whole batch and hands nothing
 * on as stored, and the next batch is stored normally.
 */
import { describe, expect, it } from 'vitest';
import { err, ok, type Result } from '../../src/core/result.js';
import { GroupCommit } from '../../src/relay/group-commit.js';
import type { MailboxError, NewFrame } from '../../src/core/mailbox.js';

const frame = (n: number): NewFrame => ({
  topic: new Uint8Array(32),
  recipient: new Uint8Array(32).fill(n % 2),
  sender: new Uint8Array(32).fill(9),
  body: Uint8Array.of(n),
});

function harness(store: (frames: readonly NewFrame[]) => Result<number, MailboxError>[]) {
  const calls: number[][] = [];
  const stored: [string, Result<number, MailboxError>][] = [];
  const failed: [string[], string][] = [];
  const pending: (() => void)[] = [];
  const commit = new GroupCommit<string>({
    store: (frames) => {
      calls.push(frames.map((f) => f.body[0]!));
      return store(frames);
    },
    stored: (item, result) => stored.push([item, result]),
    failed: (items, e) => failed.push([[...items], (e as Error).message]),
    schedule: (run) => pending.push(run),
  });
  const endOfTurn = () => pending.splice(0).forEach((run) => run());
  return { commit, calls, stored, failed, pending, endOfTurn };
}

let nextId = 0;
const numbered = (frames: readonly NewFrame[]) => frames.map(() => ok(++nextId));

describe('group commit', () => {
  it('stores the frames of one turn in one call, in order, and hands each on with its result', () => {
    const h = harness((frames) =>
      frames.map((f) =>
        f.body[0] === 3
          ? err<MailboxError>({ type: 'MailboxFull', reason: 'full', frames: 2, bytes: 0 })
          : ok(++nextId),
      ),
    );
    for (const n of [1, 2, 3, 4]) h.commit.add(`f${n}`, frame(n));
    expect(h.pending).toHaveLength(1);
    expect(h.calls).toEqual([]);
    h.endOfTurn();
    expect(h.calls).toEqual([[1, 2, 3, 4]]);
    expect(h.stored.map(([item, r]) => [item, r.ok])).toEqual([
      ['f1', true],
      ['f2', true],
      ['f3', false],
      ['f4', true],
    ]);
    const ids = h.stored.flatMap(([, r]) => (r.ok ? [r.value] : []));
    expect(ids).toEqual([...ids].sort((a, b) => a - b));
  });

  it('stores at once on flush, and a later end of turn finds nothing left', () => {
    const h = harness(numbered);
    h.commit.add('a', frame(1));
    h.commit.flush();
    expect(h.calls).toEqual([[1]]);
    h.endOfTurn();
    expect(h.calls).toEqual([[1]]);
    h.commit.flush();
    expect(h.calls).toEqual([[1]]);
  });

  it('fails the whole batch when the store throws, hands nothing on as stored, and carries on', () => {
    let broken = true;
    const h = harness((frames) => {
      if (broken) throw new Error('disk I/O error');
      return numbered(frames);
    });
    h.commit.add('a', frame(1));
    h.commit.add('b', frame(2));
    h.endOfTurn();
    expect(h.failed).toEqual([[['a', 'b'], 'disk I/O error']]);
    expect(h.stored).toEqual([]);
    broken = false;
    h.commit.add('c', frame(3));
    h.endOfTurn();
    expect(h.stored.map(([item, r]) => [item, r.ok])).toEqual([['c', true]]);
  });
});
