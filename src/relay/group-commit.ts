/**
 * Group commit for the relay's mailbox: frames received during one turn of the
 * event loop are stored in one transaction at its end (one fsync for the lot),
 * then each is handed on with its own result. If the store throws (the disk
 * failed, the database is gone), every frame of the batch is reported as failed
 * and nothing is handed on as stored.
 */
import type { Result } from '../core/result.js';
import type { MailboxError, NewFrame } from '../core/mailbox.js';

export interface GroupCommitDeps<T> {
  /** Stores the frames together; one result per frame, in order. */
  readonly store: (frames: readonly NewFrame[]) => Result<number, MailboxError>[];
  readonly stored: (item: T, result: Result<number, MailboxError>) => void;
  readonly failed: (items: readonly T[], error: unknown) => void;
  /** When to store what has been added (defaults to the end of this turn). */
  readonly schedule?: (run: () => void) => void;
}

export class GroupCommit<T> {
  readonly #deps: GroupCommitDeps<T>;
  #queue: { readonly item: T; readonly frame: NewFrame }[] = [];

  constructor(deps: GroupCommitDeps<T>) {
    this.#deps = deps;
  }

  add(item: T, frame: NewFrame): void {
    if (this.#queue.push({ item, frame }) > 1) return;
    (this.#deps.schedule ?? setImmediate)(() => this.flush());
  }

  /** Stores what was added so far, now (before a send that must follow them, or a close). */
  flush(): void {
    const queue = this.#queue;
    if (queue.length === 0) return;
    this.#queue = [];
    let results: Result<number, MailboxError>[];
    try {
      results = this.#deps.store(queue.map((q) => q.frame));
    } catch (e) {
      return this.#deps.failed(
        queue.map((q) => q.item),
        e,
      );
    }
    queue.forEach((q, i) => this.#deps.stored(q.item, results[i]!));
  }
}
