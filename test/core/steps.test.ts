import { describe, expect, it } from 'vitest';
import { after, run, type Steps } from '../../src/core/steps.js';

/** Adds what it reads; each read is a value or a promise, as a store may answer. */
function* adding(reads: readonly (number | Promise<number>)[], log: string[]): Steps<number> {
  let sum = 0;
  try {
    for (const read of reads) sum += (yield read) as number;
    return sum;
  } finally {
    log.push('finally');
  }
}

describe('steps', () => {
  it('runs synchronously while every answer is a value', () => {
    const log: string[] = [];
    expect(run(adding([1, 2, 3], log))).toBe(6);
    expect(log).toEqual(['finally']);
  });

  it('turns asynchronous from the first promise on, and finishes in order', async () => {
    const log: string[] = [];
    const result = run(adding([1, Promise.resolve(2), 3, Promise.resolve(4), 5], log));
    expect(result).toBeInstanceOf(Promise);
    expect(log).toEqual([]);
    expect(await result).toBe(15);
    expect(log).toEqual(['finally']);
  });

  it('throws a failed read where it was yielded, so the steps clean up; the run rejects with it', async () => {
    const log: string[] = [];
    const failure = new Error('store failed');
    await expect(run(adding([1, Promise.reject(failure), 3], log))).rejects.toBe(failure);
    expect(log).toEqual(['finally']);
  });

  it('a read that throws at once throws out of run at once', () => {
    const failing = function* (): Steps<number> {
      yield 1;
      throw new Error('broken invariant');
    };
    expect(() => run(failing())).toThrow('broken invariant');
  });

  it('steps can catch a failed read and go on', async () => {
    const recovering = function* (): Steps<string> {
      try {
        yield Promise.reject(new Error('missing'));
        return 'unreachable';
      } catch {
        return `recovered after ${(yield 7) as number}`;
      }
    };
    expect(await run(recovering())).toBe('recovered after 7');
  });

  it('after maps a value at once and a promise when it settles', async () => {
    expect(after(2, (n) => n * 10)).toBe(20);
    const later = after(Promise.resolve(3), (n) => n * 10);
    expect(later).toBeInstanceOf(Promise);
    expect(await later).toBe(30);
  });

  it('waits for any thenable, a callable one too, and passes every other value straight back (null included)', async () => {
    const callable = Object.assign(() => undefined, { then: (resolve: (v: number) => void) => resolve(5) });
    const plain = { then: 'not a function' };
    const seen: unknown[] = [];
    const reads = function* (): Steps<string> {
      seen.push(yield null);
      seen.push(yield plain);
      seen.push(yield undefined);
      return 'done';
    };
    expect(run(reads())).toBe('done'); // nothing to wait for: answered at once
    expect(seen).toEqual([null, plain, undefined]);
    const waits = function* (): Steps<number> {
      return (yield callable) as number;
    };
    const answer = run(waits());
    expect(answer).toBeInstanceOf(Promise);
    expect(await answer).toBe(5);
  });
});
