/**
 * This machine's object plane as the main thread drives it (SOP/1; seed 003 "Writing an
 * object", DESIGN §4): between the Parquet worker (forming, object secrets, bytes) and the state
 * plane (the catalog).
 *
 *   - import: a CSV file or sample measurements become one encrypted object, formed in
 *     the worker and kept there, unpublished;
 *   - publication, only with a live relay session and after the domains caught up (so the
 *     access record is sealed under the then-current generation): the bytes go to the
 *     relay's blind store, then the access record into `object_access` and the sealed
 *     manifest into `object_catalog`, both sealed events of the object's domain. A
 *     machine the keyring removed publishes nothing more: what it formed is refused;
 *   - placement: a machine the admins' `placement` record names as a store copies the
 *     objects of those domains from the relay, whether or not it can read them;
 *   - rewrap: after a rotation, admins give each object a record under the new
 *     generation (rewrap-job.ts);
 *   - the catalog view: every object this machine can read (manifest opened), formed,
 *     or merely stores (bytes only, unreadable here).
 */
import { tableName } from '../core/object/csv-import.js';
import { toBase64Url } from '../core/bytes.js';
import type { WriteError, WriteOutcome } from '../core/replica.js';
import { err, ok, type Result } from '../core/result.js';
import { isDomainName, meshDomainNames, type DomainName } from '../core/schema.js';
import type { RowState } from '../core/merge.js';
import type { RowsFound } from '../core/query/execute.js';
import type { Codec } from '../core/parquet/write.js';
import type { DomainView } from './mls-service.js';
import { RewrapJob, type RewrapProgress } from './rewrap-job.js';
import { ACCESS_TABLE, CATALOG_TABLE, CatalogRows } from './catalog-rows.js';
import { ReadWriteTurn } from './read-write-turn.js';
import type {
  CatalogEntry,
  HeldObject,
  ImportProgress,
  ManifestView,
  ObjectError,
  ObjectService,
  PendingObject,
} from './object-service.js';

/** The Parquet worker as the main thread sees it (a comlink Remote, or the service itself in tests). */
export type ObjectPort = {
  [
    K in
      | 'reload'
      | 'importCsv'
      | 'importSample'
      | 'pending'
      | 'publication'
      | 'published'
      | 'refuseAll'
      | 'openManifest'
      | 'export'
      | 'held'
      | 'uploadPending'
      | 'place'
      | 'tryEveryKey'
      | 'query'
      | 'cancelQuery'
      | 'compression'
      | 'rewrap'
      | 'deleteRows'
      | 'compact'
      | 'dropSuperseded'
      | 'putRecovery'
      | 'recoveryRoots'
      | 'recoveryCheckpoint'
      | 'missingObjects'
  ]: (...args: Parameters<ObjectService[K]>) => Promise<Awaited<ReturnType<ObjectService[K]>>>;
};

export type ObjectsDeps = {
  readonly service: ObjectPort;
  readonly self: () => string;
  readonly relayUrl: () => string | undefined;
  /** A local state-plane write (replicated like any other). */
  readonly write: (
    table: string,
    row: string,
    cols: Record<string, string>,
  ) => Promise<Result<WriteOutcome, WriteError>>;
  /** Materialised rows of a table (only rows of domains this machine reads are there). */
  readonly rows: (table: string) => Promise<RowState[]>;
  /** Whether a relay session is up (publication waits for one). */
  readonly online: () => boolean;
  /** Brings every domain's group up to date (the current generation) before publishing. */
  readonly catchUp: () => Promise<void>;
  /** The keyring removed this machine. */
  readonly removed: () => boolean;
  readonly notice: (kind: 'info' | 'warning', text: string) => void;
  readonly changed: () => void;
  /** What this machine stores while no placement record names it (an archive: every domain). */
  readonly defaultPlacement?: '*' | undefined;
  /** The domains' groups (rewrapping follows their generations, members and entitlements). */
  readonly views: () => readonly DomainView[];
  readonly isAdmin: () => boolean;
};

export type ObjectState = 'pending' | 'refused' | 'published' | 'stored';

/** One object as the Objects page shows it. */
export type ObjectEntry = {
  readonly id: string;
  readonly state: ObjectState;
  /** Known when this machine formed the object or reads its catalog row. */
  readonly domain: string | undefined;
  readonly producer: string | undefined;
  readonly manifest: ManifestView | undefined;
  /** Why the manifest did not open here (a typed error), when it did not. */
  readonly error: string | undefined;
  /** Bytes held on this machine, and their size. */
  readonly held: boolean;
  readonly size: number | undefined;
  readonly uploaded: boolean;
  readonly refused: string | undefined;
};

/** How a caller follows a query: `id` to cancel it, progress by object, rows as found. */
export type QueryOptions = {
  readonly id?: string;
  readonly progress?: (done: number, total: number) => void;
  readonly onRows?: RowsFound;
  /** Only objects of these domains are read (an API client scoped to some domains); every one by default. */
  readonly domains?: ReadonlySet<string>;
};

export const PLACEMENT_TABLE = 'placement';
export const OBJECT_TABLES = 'object_tables';

/** How often superseded copies are looked for. */
const DROP_EVERY_MS = 3600_000;
const OBJECT_TABLE = /^[a-z][a-z0-9_]{0,63}$/;
/** A catalog this large is listed for the UI at most every LISTING_MS (`entries`). */
const LARGE_CATALOG = 1_000;
const LISTING_MS = 2_000;
const LISTING_COST = 10;

/** The object tables whose rows may be deleted, of the `object_tables` rows. */
export function deletableTables(rows: readonly RowState[]): string[] {
  return rows
    .filter((r) => r.cells['rows']?.value === 'deletable')
    .map((r) => r.row)
    .sort();
}

/** A placement record's value: '*' (every domain), or domain names separated by commas. */
export function parsePlacement(value: unknown): '*' | DomainName[] | undefined {
  if (typeof value !== 'string' || value.trim() === '') return undefined;
  if (value.trim() === '*') return '*';
  const names = value.split(',').map((d) => d.trim());
  return names.every(isDomainName) ? names : undefined;
}

const describe = (e: ObjectError): string =>
  'reason' in e && typeof e.reason === 'string'
    ? `${e.type}: ${e.reason}`
    : 'detail' in e && typeof e.detail === 'string'
      ? `${e.type}: ${e.detail}`
      : e.type;

export class MeshObjects {
  readonly #deps: ObjectsDeps;
  /** Manifests are immutable: one that opened is kept; failures are retried when keys change. */
  readonly #opened = new Map<string, ManifestView>();
  readonly #failed = new Map<string, string>();
  #cycle: Promise<void> = Promise.resolve();
  #uploadFailure: string | undefined;
  /** When superseded copies were last looked for (`#dropSuperseded`). */
  #droppedAt = -Infinity;
  readonly #rewrap: RewrapJob;
  #listed: { readonly at: number; readonly took: number; readonly entries: ObjectEntry[] } | undefined;
  readonly #catalogRows: CatalogRows;
  /**
   * Reads of the catalog with this machine's unpublished objects (`#withOwnPending`) against
   * the end of publication, which deletes an object's pending record: never in the middle of one.
   */
  readonly #pendingTurn = new ReadWriteTurn();

  constructor(deps: ObjectsDeps) {
    this.#deps = deps;
    this.#catalogRows = new CatalogRows(deps.rows);
    this.#rewrap = new RewrapJob({
      views: deps.views,
      isAdmin: deps.isAdmin,
      self: deps.self,
      catalog: () => this.#catalog(),
      rewrap: (domain, gen, entries) => deps.service.rewrap(domain, gen, entries),
      writeAccess: (row, wrapped) => deps.write(ACCESS_TABLE, row, { wrapped }),
      changed: deps.changed,
    });
  }

  /** Each domain's rewrap under its current generation (rewrap-job.ts). */
  rewraps(): RewrapProgress[] {
    return this.#rewrap.progress();
  }

  /**
   * New KEK generations reached the key holder (the crypto worker), or a new mesh the key
   * store: the Parquet worker takes up the group secret, manifests that did not open are
   * tried again, and a cycle runs (a rotation's rewrap starts there).
   */
  async keysChanged(): Promise<void> {
    await this.#deps.service.reload(this.#deps.relayUrl());
    this.#failed.clear();
    void this.sync();
  }

  /** Forms an object of a CSV file, in a table named `table` (by default after the file). */
  async importCsv(
    file: File,
    domain: DomainName,
    progress?: ImportProgress,
    table?: string,
  ): Promise<Result<PendingObject, ObjectError>> {
    const formed = await this.#deps.service.importCsv(file, { domain, ...tableOption(table) }, progress);
    return this.#formed(formed);
  }

  /** Forms an object of generated measurements, in a table named `table` (by default `measurements`). */
  async importSample(
    domain: DomainName,
    rows: number,
    progress?: ImportProgress,
    table?: string,
  ): Promise<Result<PendingObject, ObjectError>> {
    const formed = await this.#deps.service.importSample({ domain, rows, ...tableOption(table) }, progress);
    return this.#formed(formed);
  }

  #formed(formed: Result<PendingObject, ObjectError>): Result<PendingObject, ObjectError> {
    if (formed.ok) {
      if (!this.#deps.online())
        this.#deps.notice('info', 'object formed offline: it is published once the relay is back');
      void this.sync();
    }
    this.#deps.changed();
    return formed;
  }

  /** Publication, upload and placement, one run at a time (batch cycle, session ready, after an import). */
  sync(): Promise<void> {
    this.#cycle = this.#cycle
      .then(() => this.#run())
      .catch((e: unknown) => {
        this.#deps.notice('warning', `objects: ${String(e)}`);
      });
    return this.#cycle;
  }

  async #run(): Promise<void> {
    const { service } = this.#deps;
    if (this.#deps.removed()) {
      const refused = await service.refuseAll('this machine was removed from the mesh before publishing it');
      if (refused > 0) {
        this.#deps.notice(
          'warning',
          `${refused} object(s) formed here can no longer be published: this machine was removed`,
        );
        this.#deps.changed();
      }
      return;
    }
    if (!this.#deps.online()) return;
    const waiting = (await service.pending()).filter((p) => !p.refused);
    // The bytes go first, then the access record, then the manifest (#publishOne): whoever
    // sees an object in the catalog can open it and fetch it. So a compaction's object never
    // hides the objects it supersedes before it can be read in their place, on any machine,
    // even if this one stops between two of the steps.
    const uploaded = await service.uploadPending();
    const failure = uploaded.ok ? undefined : describe(uploaded.error);
    // Retried every cycle: said once per reason, not every 15 seconds.
    if (failure && failure !== this.#uploadFailure) {
      this.#deps.notice('warning', `objects: upload to the relay failed (${failure}); retrying`);
    }
    this.#uploadFailure = failure;
    if (uploaded.ok && waiting.length > 0) {
      // Catching up hands new generations to the key holder, which wraps each access record.
      await this.#deps.catchUp();
      for (const p of waiting) await this.#publishOne(p.id);
    }
    await this.#place();
    await this.#rewrap.run();
    await this.#dropSuperseded();
    this.#deps.changed();
  }

  /** At most hourly: copies of objects a compaction superseded a week ago go. */
  async #dropSuperseded(): Promise<void> {
    const now = Date.now();
    if (now - this.#droppedAt < DROP_EVERY_MS) return;
    this.#droppedAt = now;
    await this.dropSuperseded();
  }

  /** Drops the copies held here of objects a compaction superseded a week ago (ObjectService.dropSuperseded). */
  async dropSuperseded(): Promise<number> {
    return this.#deps.service.dropSuperseded([...(await this.#catalog()).values()]);
  }

  async #publishOne(id: string): Promise<void> {
    const { service, write } = this.#deps;
    const publication = await service.publication(id);
    if (!publication.ok) {
      this.#deps.notice('warning', `object ${id.slice(0, 12)} not published yet: ${describe(publication.error)}`);
      return;
    }
    const p = publication.value;
    const self = this.#deps.self();
    // One chain (signer, domain, generation) carries both rows in this order, so every machine
    // applies the access record before the manifest that makes the object visible.
    const access = await write(ACCESS_TABLE, `${p.domain}:${self}:${id}:${p.gen}`, { wrapped: toBase64Url(p.wrapped) });
    const catalog =
      access.ok &&
      (await write(CATALOG_TABLE, `${p.domain}:${self}:${id}`, { manifest: toBase64Url(p.sealedManifest) }));
    if (!access.ok || !catalog || !catalog.ok) {
      const failed = !access.ok ? access.error : catalog && !catalog.ok ? catalog.error : undefined;
      const reason = failed ? ('reason' in failed ? `${failed.type}: ${failed.reason}` : failed.type) : 'not written';
      this.#deps.notice('warning', `object ${id.slice(0, 12)} not published: ${reason}`);
      return;
    }
    await this.#pendingTurn.write(() => service.published(id));
  }

  async #place(): Promise<void> {
    const record = (await this.#deps.rows(PLACEMENT_TABLE)).find((r) => r.row === this.#deps.self());
    const policy = record ? parsePlacement(record.cells['domains']?.value) : this.#deps.defaultPlacement;
    if (!policy) return;
    // Every domain: the built-in ones and those the mesh's domains table names, each listed by its
    // own placement tag (object-service.ts `place`). A domain whose record has not arrived yet is
    // placed on the cycle after it does.
    const domains = policy === '*' ? meshDomainNames(await this.#deps.rows('domains')) : policy;
    const placed = await this.#deps.service.place(domains);
    if (!placed.ok) this.#deps.notice('warning', `objects: placement failed (${describe(placed.error)})`);
    else if (placed.value.reseeded > 0) {
      this.#deps.notice('info', `objects: gave the relay back ${placed.value.reseeded} objects it no longer held`);
    }
  }

  // ---- recovery (mesh-recovery.ts): checkpoints and roots in the blind store, and what a restore checks
  readonly putRecovery: ObjectPort['putRecovery'] = (kind, bytes) => this.#deps.service.putRecovery(kind, bytes);
  readonly recoveryRoots: ObjectPort['recoveryRoots'] = (after) => this.#deps.service.recoveryRoots(after);
  readonly recoveryCheckpoint: ObjectPort['recoveryCheckpoint'] = (id) => this.#deps.service.recoveryCheckpoint(id);
  readonly missingObjects: ObjectPort['missingObjects'] = (objects) => this.#deps.service.missingObjects(objects);

  /** Each catalog object with the generations its access records are under. */
  async catalogObjects(): Promise<{ id: string; domain: DomainName; gens: number[] }[]> {
    return [...(await this.#catalog()).values()].map((e) => ({
      id: e.id,
      domain: e.domain,
      gens: e.access.map((a) => a.gen),
    }));
  }

  #catalog(): Promise<Map<string, CatalogEntry>> {
    return this.#catalogRows.read();
  }

  /**
   * The Objects view's list, rebuilt for every snapshot — except that a large catalog's is
   * rebuilt at most every LISTING_MS, or LISTING_COST times as long as the last rebuild took:
   * reading it costs as much as the catalog, and a burst of writes (a rewrap writes one row
   * per object) asks for a snapshot after every batch. At 100,000 objects a rebuild takes
   * about a second, so the list keeps the rest of the machine's time at about nine tenths.
   */
  async entries(): Promise<ObjectEntry[]> {
    const listed = this.#listed;
    const fresh = listed && Date.now() - listed.at < Math.max(LISTING_MS, LISTING_COST * listed.took);
    if (listed && fresh && listed.entries.length > LARGE_CATALOG) return listed.entries;
    const started = Date.now();
    const entries = await this.#entries();
    this.#listed = { at: Date.now(), took: Date.now() - started, entries };
    return entries;
  }

  async #entries(): Promise<ObjectEntry[]> {
    const { service } = this.#deps;
    // Pending first, as in `#withOwnPending`: one published meanwhile is in the catalog read after.
    const pending = await service.pending();
    const catalog = await this.#catalog();
    const held = new Map<string, HeldObject>((await service.held()).map((h) => [h.id, h]));
    const out: ObjectEntry[] = [];
    const bytes = (id: string) => {
      const h = held.get(id);
      return { held: h !== undefined, size: h?.size, uploaded: h?.uploaded ?? false };
    };
    for (const p of pending) {
      out.push({
        id: p.id,
        state: p.refused ? 'refused' : 'pending',
        domain: p.domain,
        producer: this.#deps.self(),
        manifest: p.manifest,
        error: undefined,
        refused: p.refused,
        ...bytes(p.id),
      });
    }
    const listed = new Set(out.map((e) => e.id));
    for (const entry of catalog.values()) {
      if (listed.has(entry.id)) continue;
      listed.add(entry.id);
      const manifest = await this.#manifest(entry);
      out.push({
        id: entry.id,
        state: 'published',
        domain: entry.domain,
        producer: entry.producer,
        manifest: manifest.ok ? manifest.value : undefined,
        error: manifest.ok ? undefined : manifest.error,
        refused: undefined,
        ...bytes(entry.id),
      });
    }
    for (const h of held.values()) {
      if (listed.has(h.id)) continue;
      out.push({
        id: h.id,
        state: 'stored',
        domain: undefined,
        producer: undefined,
        manifest: undefined,
        error: undefined,
        refused: undefined,
        ...bytes(h.id),
      });
    }
    return out.sort((a, b) => (b.manifest?.formedAt ?? 0) - (a.manifest?.formedAt ?? 0) || a.id.localeCompare(b.id));
  }

  async #manifest(entry: CatalogEntry): Promise<Result<ManifestView, string>> {
    const cached = this.#opened.get(entry.id);
    if (cached) return ok(cached);
    const failed = this.#failed.get(`${entry.id}/${entry.access.length}`);
    if (failed) return err(failed);
    const opened = await this.#deps.service.openManifest(entry);
    if (opened.ok) {
      this.#opened.set(entry.id, opened.value);
      return ok(opened.value);
    }
    const reason = describe(opened.error);
    this.#failed.set(`${entry.id}/${entry.access.length}`, reason);
    return err(reason);
  }

  /** The page compression of the objects this machine forms. */
  compression(): Promise<Codec> {
    return this.#deps.service.compression();
  }

  /** The object decrypted, for the user to save (fetched from the relay first if need be). */
  download(id: string, format: 'csv' | 'parquet'): Promise<Result<Uint8Array, ObjectError>> {
    return this.#pendingTurn.read(() => this.#download(id, format));
  }

  async #download(id: string, format: 'csv' | 'parquet'): Promise<Result<Uint8Array, ObjectError>> {
    const entry = (await this.#catalog()).get(id);
    const pending = (await this.#deps.service.pending()).find((p) => p.id === id);
    const at: CatalogEntry | undefined =
      entry ??
      (pending && {
        id,
        domain: pending.domain,
        producer: this.#deps.self(),
        sealedManifest: new Uint8Array(0),
        access: [],
      });
    if (!at) return err({ type: 'UnknownObject', id });
    const catalog = await this.#withOwnPending();
    const exported = await this.#deps.service.export(at, format, catalog, await this.deletable());
    this.#deps.changed();
    return exported;
  }

  /** Runs SQL over every object of this machine's catalog (objects it cannot read are not in it). */
  query(sql: string, options: QueryOptions = {}): Promise<Awaited<ReturnType<ObjectService['query']>>> {
    return this.#pendingTurn.read(async () => {
      // Rows this machine formed or deleted show here at once, before they are published.
      const all = await this.#withOwnPending();
      const scope = options.domains;
      const entries = scope ? all.filter((e) => scope.has(e.domain)) : all;
      const deletable = await this.deletable();
      return this.#deps.service.query(sql, entries, options.id, options.progress, options.onRows, deletable);
    });
  }

  /**
   * The catalog and this machine's own unpublished objects, each once: its own are read first,
   * so one published meanwhile is in the catalog read after (never in neither). Only in a read
   * turn (`#pendingTurn`): the pending records stay until the read has resolved them.
   */
  async #withOwnPending(): Promise<CatalogEntry[]> {
    const own = await this.#ownPending();
    const catalog = await this.#catalog();
    return [...catalog.values(), ...own.filter((e) => !catalog.has(e.id))];
  }

  /**
   * The data and delete objects formed here and not yet published, as catalog entries (their
   * manifests and secrets are local): this machine's own rows and deletes show here at once,
   * offline too, while publication waits for the relay (bytes first: #run). A compaction formed
   * here is not among them: it replaces its inputs only once published, as on every machine.
   */
  #ownPending(): Promise<CatalogEntry[]> {
    return this.#pendingEntries((m) => m.supersedes.length === 0);
  }

  /** Objects formed here, not yet published, whose manifests say `keep`, as catalog entries. */
  async #pendingEntries(keep: (m: ManifestView) => boolean): Promise<CatalogEntry[]> {
    const self = this.#deps.self();
    return (await this.#deps.service.pending())
      .filter((p) => p.manifest !== undefined && keep(p.manifest) && p.refused === undefined)
      .map((p) => ({ id: p.id, domain: p.domain, producer: self, sealedManifest: new Uint8Array(0), access: [] }));
  }

  /**
   * Compacts the small objects of `table` in `domain` into one (core/object/compact.ts), published
   * like any object; undefined when there is nothing worth compacting.
   */
  async compact(domain: DomainName, table: string): Promise<Awaited<ReturnType<ObjectService['compact']>>> {
    // In turn with publication: a compaction formed here must be pending or in the catalog
    // when the next round reads them, never between the two.
    const round = this.#cycle.then(async () => {
      // A compaction formed here and not yet published already takes its inputs: the next round takes others.
      const pending = await this.#pendingEntries((m) => m.kind === 'delete' || m.supersedes.length > 0);
      const entries = [...(await this.#catalog()).values(), ...pending];
      return this.#deps.service.compact({ domain, table, entries, deletable: await this.deletable() });
    });
    this.#cycle = round.then(
      () => undefined,
      () => undefined,
    );
    const compacted = await round;
    if (compacted.ok && compacted.value) void this.sync();
    this.#deps.changed();
    return compacted;
  }

  /** The object tables whose rows may be deleted (an admin said so in `object_tables`, for good). */
  async deletable(): Promise<string[]> {
    return deletableTables(await this.#deps.rows(OBJECT_TABLES));
  }

  /** An admin lets the rows of an object table be deleted, for good. */
  async allowDeletes(table: string): Promise<Result<void, ObjectError | WriteError>> {
    if (!this.#deps.isAdmin()) return err({ type: 'NotAuthorized', table: OBJECT_TABLES, reason: 'admins only' });
    if (!OBJECT_TABLE.test(table)) return err({ type: 'InvalidEdit', reason: `not an object table name: ${table}` });
    const written = await this.#deps.write(OBJECT_TABLES, table, { rows: 'deletable' });
    this.#deps.changed();
    return written.ok ? ok(undefined) : written;
  }

  /**
   * Deletes rows of `table` (their identities, as a query answered them) with delete objects
   * (core/object/deletes.ts), published like any object; refused unless the table's rows
   * may be deleted.
   */
  async deleteRows(table: string, rowIds: readonly string[]): Promise<Result<PendingObject[], ObjectError>> {
    if (!(await this.deletable()).includes(table)) {
      return err({ type: 'InvalidDelete', detail: `rows of ${table} may not be deleted (no admin allowed it)` });
    }
    const formed = await this.#pendingTurn.read(async () =>
      this.#deps.service.deleteRows({ table, rowIds, entries: await this.#withOwnPending() }),
    );
    if (formed.ok) void this.sync();
    this.#deps.changed();
    return formed;
  }

  cancelQuery(id: string): Promise<void> {
    return this.#deps.service.cancelQuery(id);
  }

  /**
   * Holding is not reading: every key this machine holds, tried on an object whose bytes
   * it holds (with every access record it can see). `NoKeyOpens` for a domain it does not read.
   */
  async tryEveryKey(id: string): Promise<Result<{ readonly opened: true }, ObjectError>> {
    const entry = (await this.#catalog()).get(id);
    const access = entry?.access.map((a) => ({ ...a, domain: entry.domain })) ?? [];
    return this.#deps.service.tryEveryKey(id, access);
  }
}

/**
 * A table name a person typed, made one as a file's name is (lower case, letters, digits
 * and underscores, starting with a letter); none when nothing usable was typed.
 */
function tableOption(typed: string | undefined): { table?: string } {
  const name = typed?.trim() ? tableName(`${typed.trim()}.csv`) : '';
  return name && name !== 'imported' ? { table: name } : {};
}
