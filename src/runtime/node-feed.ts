/**
 * What a machine tells its UI, and how often: notices, refusals counted without being
 * stored, the data version paged views follow, and snapshots delivered to subscribers.
 *
 * Snapshot builds are coalesced. While one build runs, every request joins the one queued
 * after it, so a burst of frames or writes costs two builds, not one each. A request
 * resolves once a build that started after it was delivered. A build that hangs (a worker
 * busy at start-up) holds the queue for at most `watchdogMs`; one that finishes after a
 * newer one was delivered is dropped, so the UI never steps back.
 */
import type { NodeSnapshot, Notice } from './node-snapshot.js';

const MAX_NOTICES = 30;
/** Longest a snapshot build holds back the next one. */
const SNAPSHOT_WATCHDOG_MS = 3000;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export class NodeFeed {
  readonly #build: () => Promise<NodeSnapshot>;
  readonly #watchdogMs: number;
  readonly #counts: Record<string, number> = {};
  readonly #notices: Notice[] = [];
  #noticeId = 0;
  #dataVersion = 0;
  readonly #rowListeners = new Set<(version: number) => void>();
  readonly #listeners = new Set<(snapshot: NodeSnapshot) => void>();
  /** Snapshots started, and the newest one delivered: an older build that finishes late is dropped. */
  #started = 0;
  #delivered = 0;
  /** The newest snapshot delivered. */
  #last: NodeSnapshot | undefined;
  /** The build running (or the watchdog's end), and the one queued behind it. */
  #inFlight: Promise<unknown> = Promise.resolve();
  #queued: Promise<void> | undefined;

  constructor(build: () => Promise<NodeSnapshot>, watchdogMs = SNAPSHOT_WATCHDOG_MS) {
    this.#build = build;
    this.#watchdogMs = watchdogMs;
  }

  /** Refusals and other events counted by type, never stored (frames refused before any import). */
  get counts(): Readonly<Record<string, number>> {
    return this.#counts;
  }

  /** The newest notices first, at most MAX_NOTICES. */
  get notices(): readonly Notice[] {
    return this.#notices;
  }

  /** Grows with every change to rows (snapshot `dataVersion`). */
  get dataVersion(): number {
    return this.#dataVersion;
  }

  count(type: string): void {
    this.#counts[type] = (this.#counts[type] ?? 0) + 1;
  }

  notice(
    kind: Notice['kind'],
    text: string,
    about: { readonly key?: string; readonly at?: number; readonly standing?: boolean } = {},
  ): void {
    const { key, at = Date.now(), standing } = about;
    this.#notices.unshift({
      id: ++this.#noticeId,
      at,
      kind,
      text,
      ...(key !== undefined ? { key } : {}),
      ...(standing ? { standing } : {}),
    });
    this.#notices.length = Math.min(this.#notices.length, MAX_NOTICES);
  }

  /**
   * Calls back at once whenever rows change, with the new data version: views that page a
   * table ask for their window again without waiting for the next snapshot.
   */
  onRowsChanged(listener: (version: number) => void): () => void {
    this.#rowListeners.add(listener);
    return () => this.#rowListeners.delete(listener);
  }

  rowsChanged(): void {
    this.#dataVersion++;
    for (const listener of this.#rowListeners) listener(this.#dataVersion);
  }

  subscribe(listener: (snapshot: NodeSnapshot) => void): () => void {
    this.#listeners.add(listener);
    void this.publish();
    return () => this.#listeners.delete(listener);
  }

  /** Builds and delivers a snapshot, coalesced with every other request made while one builds. */
  publish(): Promise<void> {
    if (this.#listeners.size === 0) return Promise.resolve();
    return (this.#queued ??= this.#inFlight.then(() => {
      this.#queued = undefined;
      const n = ++this.#started;
      const deliver = (snapshot: NodeSnapshot) => {
        if (n < this.#delivered) return;
        this.#delivered = n;
        this.#last = snapshot;
        for (const listener of this.#listeners) listener(snapshot);
      };
      const build = this.#build().then(deliver, (e: unknown) => {
        // The store cannot be read (a full disk closed it): what the machine has to say
        // still reaches its person, on the last snapshot that could be built.
        if (this.#last) deliver({ ...this.#last, notices: [...this.#notices] });
        throw e;
      });
      this.#inFlight = Promise.race([build, sleep(this.#watchdogMs)]).catch(() => undefined);
      return build;
    }));
  }

  /** Publishes without waiting; a build that fails is counted, not thrown. */
  publishSoon(): void {
    this.publish().catch(() => this.count('SnapshotFailed'));
  }
}
