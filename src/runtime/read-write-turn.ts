/**
 * Turns for readers and one writer within one context: any number of reads run together,
 * a write runs alone — it waits for the reads under way, and reads that come while it waits
 * or runs wait for it (a stream of reads cannot starve a write).
 *
 * What it is for (mesh-objects.ts): a read of the catalog takes this machine's unpublished
 * objects as they are when it starts, and resolves their manifests and secrets from their
 * pending records as it goes. Publication ends by deleting those records (the catalog row
 * holds the object from then on); done in the middle of a read, the read would find the
 * object in neither place and show, for instance, rows a delete object had just hidden.
 */
export class ReadWriteTurn {
  #readers = 0;
  /** Settles when the write holding the turn ends; undefined while no write holds or waits for it. */
  #writer: Promise<void> | undefined;
  #idle: (() => void)[] = [];

  async read<T>(fn: () => Promise<T>): Promise<T> {
    // Checked again after every wait, and counted in the same step: no write can slip in between.
    while (this.#writer) await this.#writer;
    this.#readers++;
    try {
      return await fn();
    } finally {
      this.#readers--;
      if (this.#readers === 0) for (const wake of this.#idle.splice(0)) wake();
    }
  }

  async write<T>(fn: () => Promise<T>): Promise<T> {
    while (this.#writer) await this.#writer;
    let done!: () => void;
    this.#writer = new Promise<void>((resolve) => (done = resolve));
    try {
      while (this.#readers > 0) await new Promise<void>((resolve) => this.#idle.push(resolve));
      return await fn();
    } finally {
      this.#writer = undefined;
      done();
    }
  }
}
