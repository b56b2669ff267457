/**
 * Telling a person that a deleted row came back: an edit newer than the delete (made
 * offline, or on a machine that had not seen the delete yet) wins, and the row is alive
 * again (core/materialize.ts records each such delete–edit pair).
 *
 * One notice per overtaken delete, however many later edits pair with it, naming the row
 * by its name; recorded ones are shown again after a restart (as standing notices, which
 * the headless node does not print again), and a replay of history announces nothing anew.
 */
import type { Resurrection } from '../core/store.js';
import type { NodeFeed } from './node-feed.js';
import type { StatePort } from './ports.js';

/** How many recorded resurrections are shown again when a machine starts. */
const SHOWN_AT_START = 20;

/** What a table's row is called in a notice. */
const ROW_WORD: Readonly<Record<string, string>> = { device_profiles: 'device profile', notes: 'note' };

export class ResurrectionNotices {
  readonly #feed: NodeFeed;
  readonly #state: StatePort;
  /** The deletes already announced (one notice each), by delete event id. */
  readonly #announced = new Set<string>();

  constructor(feed: NodeFeed, state: StatePort) {
    this.#feed = feed;
    this.#state = state;
  }

  /** Shows the newest recorded resurrections again, oldest first, as standing notices. */
  async load(): Promise<void> {
    const recorded = await this.#state.resurrections(SHOWN_AT_START * 4);
    const first = new Map<string, Resurrection>();
    for (const r of recorded) if (!this.#announced.has(r.deleteId)) first.set(r.deleteId, r);
    const shown = [...first.values()].slice(0, SHOWN_AT_START).reverse();
    for (const r of shown) await this.#notice(r, true);
    // Older ones are not shown, and not announced again either.
    for (const r of recorded) this.#announced.add(r.deleteId);
  }

  /** Announces the resurrections a change brought, once per overtaken delete. */
  async announce(resurrections: readonly Resurrection[]): Promise<void> {
    for (const r of resurrections) {
      if (this.#announced.has(r.deleteId)) continue;
      this.#announced.add(r.deleteId);
      await this.#notice(r, false);
    }
  }

  async #notice(r: Resurrection, standing: boolean): Promise<void> {
    const name = await this.#state.rowName(r.table, r.row).catch(() => undefined);
    const word = ROW_WORD[r.table] ?? `row of ${r.table}`;
    const what = name ? `The ${word} “${name}”` : `A ${word} (${r.row.slice(0, 8)})`;
    this.#feed.notice('resurrection', `${what} came back after it was deleted: an edit newer than the deletion won.`, {
      key: r.deleteId,
      at: r.at,
      standing,
    });
  }
}
