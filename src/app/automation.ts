/**
 * An opt-in handle for driving this machine from a script, on pages opened with
 * `?automation` in the URL (the catch-up benchmark, load tests): the very calls the UI
 * makes — a profile saved through the app's write path, a page of rows, the sync view —
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
};

export function exposeAutomation(store: NodeStore): void {
  const automation: Automation = {
    saveProfile: (row, cols) => store.saveProfile(row, cols),
    page: (query) => store.page(query),
    sync: () => (store.snapshot ? (JSON.parse(JSON.stringify(store.snapshot.sync)) as SyncView) : undefined),
    error: () => store.error,
  };
  Object.assign(globalThis, { sovAutomation: automation });
}
