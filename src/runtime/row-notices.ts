/**
 * Telling a person what merging did to rows they cared about, naming each row by its name:
 *
 * - A deleted row came back: an edit newer than the delete (made offline, or on a machine
 *   that had not seen the delete yet) wins, and the row is alive again (core/materialize.ts
 *   records each such delete–edit pair). One notice per overtaken delete, however many later
 *   edits pair with it; recorded ones are shown again after a restart (as standing notices,
 *   which the headless node does not print again), and a replay of history announces
 *   nothing anew.
 * - An edit this machine made offline lost: another machine's edit of the same column, made
 *   before this one came back, is later and wins (state-service.ts picks these out). One
 *   notice per lost value: which column, the value lost, whose value won.
 */
import type { Overtaken } from '../core/merge.js';
import type { ColumnValue } from '../core/schema.js';
import type { Resurrection } from '../core/store.js';
import type { NodeFeed } from './node-feed.js';
import type { StatePort } from './ports.js';

/** How many recorded resurrections are shown again when a machine starts. */
const SHOWN_AT_START = 20;

/** What a table's row is called in a notice. */
const ROW_WORD: Readonly<Record<string, string>> = { device_profiles: 'device profile', notes: 'note' };

/** A value as a notice quotes it. */
function quoted(value: ColumnValue): string {
  if (value === null) return 'nothing';
  const text = typeof value === 'string' ? value : String(value);
  return `“${text.length > 80 ? `${text.slice(0, 79)}…` : text}”`;
}

export class RowNotices {
  readonly #feed: NodeFeed;
  readonly #state: StatePort;
  /** The machines' names by signer. */
  readonly #names: () => ReadonlyMap<string, string>;
  /** The deletes already announced (one notice each), by delete event id; and the lost values, by key. */
  readonly #announced = new Set<string>();

  constructor(feed: NodeFeed, state: StatePort, names: () => ReadonlyMap<string, string>) {
    this.#feed = feed;
    this.#state = state;
    this.#names = names;
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

  /** Announces the resurrections and lost offline edits a change brought, each once. */
  async announce(resurrections: readonly Resurrection[], overtaken: readonly Overtaken[] = []): Promise<void> {
    for (const r of resurrections) {
      if (this.#announced.has(r.deleteId)) continue;
      this.#announced.add(r.deleteId);
      await this.#notice(r, false);
    }
    for (const o of overtaken) {
      const key = `lost/${o.table}/${o.row}/${o.column}/${o.mineMs}`;
      if (this.#announced.has(key)) continue;
      this.#announced.add(key);
      const by = this.#names().get(o.by) || `machine ${o.by.slice(0, 8)}`;
      const what = await this.#rowWords(o.table, o.row, 'the');
      this.#feed.notice(
        'warning',
        `Your offline edit of ${what} lost: its ${o.column} stays ${quoted(o.theirs)} from ${by}, ` +
          `whose edit was later, not ${quoted(o.mine)}.`,
        { key, at: o.theirsMs },
      );
    }
  }

  /** "the device profile “Lab scope”", or, without a name, "a device profile (6cc08acc)". */
  async #rowWords(table: string, row: string, article: 'the' | 'The'): Promise<string> {
    const name = await this.#state.rowName(table, row).catch(() => undefined);
    const word = ROW_WORD[table] ?? `row of ${table}`;
    if (name) return `${article} ${word} “${name}”`;
    return `${article === 'The' ? 'A' : 'a'} ${word} (${row.slice(0, 8)})`;
  }

  async #notice(r: Resurrection, standing: boolean): Promise<void> {
    const what = await this.#rowWords(r.table, r.row, 'The');
    this.#feed.notice('resurrection', `${what} came back after it was deleted: an edit newer than the deletion won.`, {
      key: r.deleteId,
      at: r.at,
      standing,
    });
  }
}
