/**
 * An opt-in handle for driving this machine from a script, on pages opened with
 * `?automation` in the URL (the catch-up and lifecycle benchmarks, load tests): the very
 * calls the UI makes — a profile saved through the app's write path, a page of rows, the
 * sync view, a sample object formed, a table compacted —
 * and nothing the UI cannot do: no key, no store, no shortcut past the workers.
 */
import type { NodeStore } from './node.svelte.ts';
import type { PageQuery, RowPage } from '../runtime/mesh-node.js';
import type { ColumnValue } from '../core/schema.js';
import type { SyncView } from '../runtime/views.js';

export type Automation = {
  saveProfile(row: string, cols: Record<string, ColumnValue>): Promise<boolean>;
  page(query: PageQuery): Promise<RowPage>;
  /** The sync view of the latest snapshot, as plain data; undefined before the machine started. */
  sync(): SyncView | undefined;
  /** The error the page shows, if any. */
  error(): string;
  /** Forms a sample object of `rows` rows in `table` (the Objects view's "Generate sample"); its id. */
  importSample(domain: string, rows: number, table: string): Promise<string | undefined>;
  /** Compacts a table's small objects (the Objects view's "Compact"); what the page would say. */
  compact(domain: string, table: string): Promise<string>;
  /** Objects by state ('pending', 'published', …), as the Objects view counts them. */
  objectStates(): Record<string, number>;
  /** Publishes, uploads and places objects now (the Objects view's "Publish and fetch now"). */
  syncObjects(): Promise<void>;
};

export function exposeAutomation(store: NodeStore): void {
  const automation: Automation = {
    saveProfile: (row, cols) => store.saveProfile(row, cols),
    page: (query) => store.page(query),
    sync: () => (store.snapshot ? (JSON.parse(JSON.stringify(store.snapshot.sync)) as SyncView) : undefined),
    error: () => store.error,
    importSample: (domain, rows, table) => store.importObject(domain, rows, table),
    compact: (domain, table) => store.compact(domain, table),
    objectStates: () => {
      const states: Record<string, number> = {};
      for (const o of store.snapshot?.objects ?? []) states[o.state] = (states[o.state] ?? 0) + 1;
      return states;
    },
    syncObjects: () => store.syncObjects(),
  };
  Object.assign(globalThis, { sovAutomation: automation });
}
