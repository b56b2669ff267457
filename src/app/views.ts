/**
 * The app's views: one panel each, reached through the navigation and by URL. A view's
 * address is the URL's fragment (`#/machines`), so it needs nothing from the server that
 * served the page: it works offline from the service worker's copy, and the back button
 * walks through the views a user opened.
 */

export const VIEWS = [
  { id: 'profiles', label: 'Device profiles', short: 'Profiles' },
  { id: 'machines', label: 'Machines', short: 'Machines' },
  { id: 'domains', label: 'Domains', short: 'Domains' },
  { id: 'objects', label: 'Objects', short: 'Objects' },
  { id: 'query', label: 'Query', short: 'Query' },
  { id: 'privacy', label: 'Privacy classes', short: 'Privacy' },
  { id: 'sync', label: 'Sync', short: 'Sync' },
] as const;

export type ViewId = (typeof VIEWS)[number]['id'];

/** The view shown when the URL names none (or one that does not exist). */
export const HOME: ViewId = 'profiles';

const IDS: ReadonlySet<string> = new Set(VIEWS.map((v) => v.id));

/** The view a URL fragment names (`#/query`, `#query`, `#/query/`), or HOME. */
export function viewOf(hash: string): ViewId {
  const id = hash.replace(/^#\/?/, '').replace(/\/$/, '');
  return IDS.has(id) ? (id as ViewId) : HOME;
}

/** The URL fragment of a view. */
export const hrefOf = (view: ViewId): string => `#/${view}`;
