/**
 * Coalesced refreshes: many requests, at most one run in flight and one queued. A machine that
 * catches up applies frames far faster than it can rebuild what the UI shows; rebuilding once
 * per frame made a catch-up cost O(frames × rows). With this, requests that arrive while a run
 * is in progress share the one queued run, which starts when the current one ends.
 *
 * The promise `request()` returns settles once a run that started after the request has
 * finished, so a caller that awaits it sees everything it changed before asking.
 */
export class Coalesced {
  readonly #run: () => Promise<void>;
  #running: Promise<void> | undefined;
  #queued: Promise<void> | undefined;

  constructor(run: () => Promise<void>) {
    this.#run = run;
  }

  request(): Promise<void> {
    if (this.#queued) return this.#queued;
    if (!this.#running) return this.#start();
    const queued = this.#running
      .catch(() => undefined) // the failed run's callers see its error; the queued one runs regardless
      .then(() => {
        this.#queued = undefined;
        return this.#start();
      });
    this.#queued = queued;
    return queued;
  }

  #start(): Promise<void> {
    const running: Promise<void> = Promise.resolve()
      .then(() => this.#run())
      .finally(() => {
        if (this.#running === running) this.#running = undefined;
      });
    this.#running = running;
    return running;
  }
}
