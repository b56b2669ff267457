/**
 * Store work written once for stores that answer at once and stores that must
 * wait.
 *
 * The memory and SQLite stores answer a read immediately; IndexedDB answers
 * later. An `async` function that awaits every store call pays for the
 * slowest kind on every kind: each `await` suspends the function, allocates
 * its reactions and goes through the microtask queue even when the value is
 * already there — on the apply path that was a quarter of the time and most
 * of the garbage per event.
 *
 * So the apply path is written as steps: a generator that yields each store
 * call's result (a value, or a promise of one) and gets the value back.
 * `run` drives it synchronously for as long as the answers are values, and
 * turns asynchronous only from the first promise on. A `yield` gives back
 * `unknown`, so each read says what it expects, as the store's type declares
 * it: `const row = (yield tx.getRow(table, key)) as RowState | undefined`.
 */

/** A value, or a promise of it: what a store call returns. */
export type Awaitable<T> = T | Promise<T>;

/** Steps that end with an `R`. Each `yield` hands over an `Awaitable` and resumes with its value. */
export type Steps<R> = Generator<unknown, R, unknown>;

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return (
    (typeof value === 'object' || typeof value === 'function') &&
    value !== null &&
    typeof (value as { then?: unknown }).then === 'function'
  );
}

/** Runs steps: synchronously while every yielded value is ready, then asynchronously. */
export function run<R>(steps: Steps<R>): Awaitable<R> {
  let next = steps.next();
  while (!next.done) {
    if (isThenable(next.value)) return resume(steps, next.value);
    next = steps.next(next.value);
  }
  return next.value;
}

async function resume<R>(steps: Steps<R>, first: PromiseLike<unknown>): Promise<R> {
  let pending = first;
  for (;;) {
    let settled: { readonly ok: true; readonly value: unknown } | { readonly ok: false; readonly error: unknown };
    try {
      settled = { ok: true, value: await pending };
    } catch (error) {
      settled = { ok: false, error };
    }
    // A failed store call is thrown where it was yielded, so the steps' own try/finally runs.
    let next = settled.ok ? steps.next(settled.value) : steps.throw(settled.error);
    while (!next.done && !isThenable(next.value)) next = steps.next(next.value);
    if (next.done) return next.value;
    pending = next.value as PromiseLike<unknown>;
  }
}

/** `f` applied to a value that may still be coming (not named `then`: a module exporting `then` is itself a thenable). */
export function after<T, U>(value: Awaitable<T>, f: (value: T) => U): Awaitable<U> {
  return isThenable(value) ? Promise.resolve(value).then(f) : f(value);
}
