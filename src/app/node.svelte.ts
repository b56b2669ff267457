/**
 * UI state for this machine: owns the crypto worker and the MeshNode, and
 * mirrors the node's snapshots into runes for the components. Components call
 * its methods; they never reach the worker or the database themselves.
 */
import { proxy, transfer, wrap } from 'comlink';
import { saveFile } from './save.js';
import { formatBytes } from './locale.ts';
import { fromBase64Url, toHex } from '../core/bytes.js';
import type { KitExport } from '../runtime/mesh-recovery.js';
import { decodeTicket } from '../core/ticket.js';
import { missingFeatures, missingFeaturesMessage } from './features.ts';
import type { CryptoWorkerApi } from '../../workers/crypto.worker.ts';
import type { ParquetWorkerApi } from '../../workers/parquet.worker.ts';
import type { MlsService } from '../runtime/mls-service.js';
import type { QueryResult, RowsFound } from '../core/query/execute.js';
import { MeshNode, type NodeSnapshot, type PageQuery, type RowPage } from '../runtime/mesh-node.js';
import type { Result } from '../core/result.js';
import type { ColumnValue } from '../core/schema.js';
import type { Refusal, RefusalKind } from '../core/store.js';
import type { PrivacyClass } from '../core/sync-manifest.js';
import { isStorageFull, STORAGE_FULL_TEXT } from '../runtime/storage-full.js';
import { checkServedCode, type ServedCode } from '../runtime/code-check.js';

/** An import under way: rows written, its phase, the bytes of its file read in this phase, since when. */
export type Importing = {
  readonly rows: number;
  readonly phase: string;
  /** The rows a sample will have. */
  readonly of: number | undefined;
  readonly file: { readonly read: number; readonly size: number } | undefined;
  /** When this phase began (ms). */
  readonly since: number;
};

const SETUP_NOTICE = 'sov.setupNotice';
/** The notices this browser's person dismissed (their keys), kept across reloads. */
const DISMISSED = 'sov.dismissedNotices';
/** Dismissed keys remembered at most; the oldest are forgotten first. */
const MAX_DISMISSED = 500;

function readDismissed(): string[] {
  try {
    const kept: unknown = JSON.parse(localStorage.getItem(DISMISSED) ?? '[]');
    return Array.isArray(kept) ? kept.filter((k): k is string => typeof k === 'string') : [];
  } catch {
    return [];
  }
}

/** What a recovery kit's file is called when saved. */
export const KIT_FILE_NAME = 'sovereign-mesh-recovery-kit.sovkit';

export class NodeStore {
  snapshot = $state<NodeSnapshot | undefined>(undefined);
  /** Grows whenever rows change (before the snapshot that says so): paged views ask again. */
  rowsVersion = $state(0);
  error = $state('');
  persisted = $state<boolean | undefined>(undefined);
  /** What this site stores on the device and may store (the browser's estimate), once asked. */
  storage = $state<{ readonly usage: number; readonly quota: number } | undefined>(undefined);
  /** The import in progress: rows written so far and the phase, or undefined. */
  importing = $state<Importing | undefined>(undefined);
  /**
   * The invitation an admin is showing, kept here so that it outlives a visit to another
   * view; cleared once a machine uses it (a one-time ticket admits nobody else).
   */
  invitation = $state<{ readonly ticket: string; readonly inv: string } | undefined>(undefined);
  /**
   * What the first screen says about the pairing that ended there (declined here, or
   * cancelled). Ending a join reloads every tab of the machine, so it is kept in this tab's
   * session storage until the next mesh is created or joined.
   */
  setupNotice = $state(sessionStorage.getItem(SETUP_NOTICE) ?? '');
  /** Keys of the notices dismissed for good (see Notice.key). */
  dismissedNotices = $state<string[]>(readDismissed());
  /** A new version of the app took over the service worker while this tab ran the old one. */
  updateReady = $state(false);
  /** Who used the last invitation shown, once a machine did. */
  invitationUsedBy = $state('');
  /** The recovery kit just made: its file and code, shown once until hidden (the code is kept nowhere). */
  kit = $state.raw<KitExport | undefined>(undefined);
  /** The code this page was served, checked against its release manifest (runtime/code-check.ts); undefined while checking. */
  servedCode = $state.raw<ServedCode | undefined>(undefined);
  #node: MeshNode | undefined;
  #queryId: string | undefined;

  async start(): Promise<void> {
    void checkServedCode(`${location.origin}/`).then((served) => (this.servedCode = served));
    if (!isSecureContext) {
      this.error = 'This page needs a secure context (https:// or http://127.0.0.1) for its keys and offline mode.';
      return;
    }
    const missing = missingFeatures();
    if (missing.length > 0) {
      this.error = missingFeaturesMessage(missing);
      return;
    }
    try {
      // eslint-disable-next-line svelte/prefer-svelte-reactivity -- Vite's worker URL idiom, not state
      const worker = new Worker(new URL('../../workers/crypto.worker.ts', import.meta.url), {
        type: 'module',
        name: 'crypto',
      });
      // eslint-disable-next-line svelte/prefer-svelte-reactivity -- Vite's worker URL idiom, not state
      const mlsWorker = new Worker(new URL('../../workers/mls.worker.ts', import.meta.url), {
        type: 'module',
        name: 'mls',
      });
      // eslint-disable-next-line svelte/prefer-svelte-reactivity -- Vite's worker URL idiom, not state
      const parquetWorker = new Worker(new URL('../../workers/parquet.worker.ts', import.meta.url), {
        type: 'module',
        name: 'parquet',
      });
      // The crypto worker holds the keys and, beside them, the state plane's apply path.
      const keyHolder = wrap<CryptoWorkerApi>(worker);
      // The Parquet worker asks it about domain keys on a channel of their own; the keys stay there.
      const keys = new MessageChannel();
      await keyHolder.serveAccessKeys(transfer(keys.port1, [keys.port1]));
      const objects = await wrap<ParquetWorkerApi>(parquetWorker).open(transfer(keys.port2, [keys.port2]));
      this.#node = await MeshNode.open({
        crypto: keyHolder.crypto,
        state: keyHolder.state,
        mls: wrap<MlsService>(mlsWorker),
        objects,
      });
      this.#node.subscribe((s) => {
        this.snapshot = s;
        const used = this.invitation && s.pairings.find((p) => p.inv === this.invitation?.inv);
        if (used) {
          this.invitation = undefined;
          this.invitationUsedBy = used.name || 'a machine';
        }
      });
      this.#node.onRowsChanged((version) => (this.rowsVersion = version));
      this.persisted = 'storage' in navigator ? await navigator.storage.persist().catch(() => false) : false;
      await this.refreshStorage();
    } catch (e) {
      console.error('Could not start this machine:', e);
      this.error = `Could not start this machine: ${(e as Error).message}`;
    }
  }

  #require(): MeshNode {
    if (!this.#node) throw new Error('node not started');
    return this.#node;
  }

  /** Founds a mesh on `relay` (a ws:// or wss:// address; Setup.svelte checks it). */
  async createMesh(name: string, relay: string): Promise<void> {
    this.#sayOnSetup('');
    await this.#guard(() => this.#require().pairing.found(name, relay));
  }

  async join(ticket: string, name: string): Promise<void> {
    this.#sayOnSetup('');
    await this.#guard(async () => {
      const joined = await this.#require().pairing.join(ticket, name);
      if (!joined.ok) throw new Error(describe(joined.error));
    });
  }

  async cancelJoin(): Promise<void> {
    this.#sayOnSetup('Pairing cancelled: nothing was trusted. Paste a ticket again when you are ready.');
    await this.#guard(() => this.#require().pairing.cancelJoin());
  }

  /** A fresh one-time ticket, shown until it is used or hidden; the previous one is hidden at once. */
  async invite(): Promise<void> {
    this.hideInvitation();
    await this.#guard(async () => {
      const ticket = await this.#require().pairing.invite();
      const decoded = decodeTicket(ticket);
      if (decoded.ok) this.invitation = { ticket, inv: toHex(decoded.value.inv) };
    });
  }

  /** Admins: makes a recovery kit (mesh-recovery.ts); its code is shown until `hideKit`. */
  async makeKit(): Promise<void> {
    this.kit = undefined;
    await this.#guard(async () => {
      const made = await this.#require().recovery.makeKit();
      if (!made.ok) throw new Error(`No recovery kit: ${made.error.reason}`);
      this.kit = made.value;
    });
  }

  hideKit(): void {
    this.kit = undefined;
  }

  saveKit(): void {
    if (this.kit) saveFile(new Blob([new Uint8Array(this.kit.file)]), KIT_FILE_NAME);
  }

  /** Admins: writes a checkpoint for the recovery kits now. */
  async checkpoint(): Promise<void> {
    await this.#guard(async () => {
      const written = await this.#require().recovery.checkpoint();
      if (!written.ok) throw new Error(`No checkpoint: ${written.error.reason}`);
    });
  }

  /**
   * A fresh machine takes a recovery kit (its file's bytes, or the text its printed QR code
   * holds) and becomes the kit's machine; every tab reloads and the restore begins.
   */
  async restoreFromKit(kit: Uint8Array | string, code: string): Promise<void> {
    this.#sayOnSetup('');
    await this.#guard(async () => {
      const bytes = typeof kit === 'string' ? fromBase64Url(kit.trim()) : kit;
      if (!bytes) throw new Error('That text is not a recovery kit: paste what its QR code holds, or choose its file.');
      const imported = await this.#require().recovery.importKit(bytes, code);
      if (!imported.ok) throw new Error(`Not restored: ${imported.error.reason}.`);
      location.reload();
    });
  }

  /** A restore that found something missing tries again (an archive may be back). */
  async retryRestore(): Promise<void> {
    await this.#guard(async () => {
      await this.#require().recovery.restore();
    });
  }

  #sayOnSetup(text: string): void {
    this.setupNotice = text;
    if (text) sessionStorage.setItem(SETUP_NOTICE, text);
    else sessionStorage.removeItem(SETUP_NOTICE);
  }

  /** Dismisses a notice for good, also after a reload. */
  dismissNotice(key: string): void {
    this.dismissedNotices = [...this.dismissedNotices.filter((k) => k !== key), key].slice(-MAX_DISMISSED);
    localStorage.setItem(DISMISSED, JSON.stringify(this.dismissedNotices));
  }

  hideInvitation(): void {
    this.invitation = undefined;
    this.invitationUsedBy = '';
  }

  async answerPairing(inv: string, confirmed: boolean, by: 'code' | 'vouches' = 'code'): Promise<void> {
    await this.#guard(() => this.#require().pairing.answer(inv, confirmed, by));
  }

  setVouchThreshold(k: number): Promise<boolean> {
    return this.#write(() => this.#require().pairing.setVouchThreshold(k));
  }

  vouch(fingerprint: string): Promise<boolean> {
    return this.#write(() => this.#require().pairing.vouch(fingerprint));
  }

  async answerJoin(confirmed: boolean): Promise<void> {
    // Said before the answer goes: the first screen comes back while the inviting machine is told.
    if (!confirmed) {
      this.#sayOnSetup(
        'You stopped the pairing because the codes differed: nothing was trusted on either side. ' +
          'Ask the inviting machine for a new ticket, and compare the codes again.',
      );
    }
    await this.#guard(() => this.#require().pairing.answerJoin(confirmed));
  }

  /** A window of a table's rows (empty until the machine has started). */
  async page(query: PageQuery): Promise<RowPage> {
    if (!this.#node) return { total: 0, alive: 0, deleted: 0, offset: 0, rows: [] };
    return this.#node.page(query);
  }

  /** A page of envelopes not applied, newest first (empty until the machine has started). */
  async refusals(kind: RefusalKind, offset: number, limit: number): Promise<Refusal[]> {
    return this.#node ? this.#node.refusals(kind, offset, limit) : [];
  }

  saveProfile(row: string, cols: Record<string, ColumnValue>): Promise<boolean> {
    return this.#write(() => this.#require().writes.editProfile(row, cols));
  }

  /** The profile deleted last on this screen, until it is restored or another is deleted. */
  // Raw: its values go to the worker as they are (a deep state proxy cannot be cloned).
  lastDeleted = $state.raw<{
    readonly row: string;
    readonly name: string;
    readonly values: Record<string, ColumnValue>;
  }>();

  async deleteProfile(row: string, name: string, values: Record<string, ColumnValue>): Promise<boolean> {
    const deleted = await this.#write(() => this.#require().writes.deleteProfile(row));
    if (deleted) this.lastDeleted = { row, name, values };
    return deleted;
  }

  /** Undoes the last delete: an edit that writes the row's values again brings it back everywhere. */
  async undoDelete(): Promise<boolean> {
    const deleted = this.lastDeleted;
    if (!deleted) return false;
    const restored = await this.saveProfile(deleted.row, deleted.values);
    if (restored) this.lastDeleted = undefined;
    return restored;
  }

  removeMachine(signer: string): Promise<boolean> {
    return this.#write(() => this.#require().writes.removeMachine(signer));
  }

  setTrusted(signer: string, trusted: boolean): Promise<boolean> {
    return this.#write(() => this.#require().writes.setTrusted(signer, trusted));
  }

  setTableClass(table: string, privacy: PrivacyClass): Promise<boolean> {
    return this.#write(() => this.#require().writes.setTableClass(table, privacy));
  }

  async narrowTable(table: string, privacy: PrivacyClass | undefined): Promise<void> {
    await this.#guard(() => this.#require().writes.narrowTable(table, privacy));
  }

  createDomain(name: string, purpose: string, readers: readonly string[]): Promise<boolean> {
    return this.#write(() => this.#require().domains.create(name, purpose, readers));
  }

  addDomainReader(domain: string, signer: string, history: 'forward' | 'full' | 'fresh'): Promise<boolean> {
    return this.#write(() => this.#require().domains.addReader(domain, signer, history));
  }

  removeFromDomain(domain: string, signer: string): Promise<boolean> {
    return this.#write(() => this.#require().domains.removeReader(domain, signer));
  }

  /** Admin: a new key generation for a domain; its objects are rewrapped in the background. */
  rotateDomain(domain: string): Promise<boolean> {
    return this.#write(() => this.#require().domains.rotate(domain));
  }

  writeNote(domain: string, title: string, text: string): Promise<boolean> {
    return this.#write(() => this.#require().writes.writeNote(domain, title, text));
  }

  deleteNote(row: string): Promise<boolean> {
    return this.#write(() => this.#require().writes.deleteNote(row));
  }

  /** Forms an object of a CSV file (or, without one, of `rows` sample measurements) in `domain`. */
  async importObject(domain: string, source: File | number, table?: string): Promise<string | undefined> {
    let id: string | undefined;
    const started = Date.now();
    this.importing = {
      rows: 0,
      phase: typeof source === 'number' ? 'writing' : 'reading',
      of: typeof source === 'number' ? source : undefined,
      file: typeof source === 'number' ? undefined : { read: 0, size: source.size },
      since: started,
    };
    const progress = proxy((rows: number, phase: string, file?: { read: number; size: number }) => {
      const was = this.importing;
      if (!was) return;
      const since = phase === was.phase ? was.since : Date.now();
      this.importing = { ...was, rows, phase, since, ...(file ? { file } : {}) };
    });
    await this.#write(async () => {
      const node = this.#require();
      const formed =
        typeof source === 'number'
          ? await node.objects.importSample(domain, source, progress, table)
          : await node.objects.importCsv(source, domain, progress, table);
      if (formed.ok) id = formed.value.id;
      return formed;
    });
    this.importing = undefined;
    return id;
  }

  /** The page compression of the objects this machine forms (ZSTD, or Snappy where WebAssembly cannot start). */
  async objectCompression(): Promise<string | undefined> {
    const codec = await this.#node?.objects.compression();
    return codec?.ok ? codec.value : undefined;
  }

  /** Saves an object decrypted, as CSV or plaintext Parquet, through the browser's download. */
  async downloadObject(id: string, format: 'csv' | 'parquet', name: string): Promise<void> {
    await this.#write(async () => {
      const bytes = await this.#require().objects.download(id, format);
      if (bytes.ok) {
        const type = format === 'csv' ? 'text/csv' : 'application/vnd.apache.parquet';
        saveFile(new Blob([new Uint8Array(bytes.value)], { type }), `${name}.${format}`);
      }
      return bytes;
    });
  }

  /** Every key this machine holds, tried on one object it stores; the typed answer as text. */
  async tryKeysOnObject(id: string): Promise<string> {
    let text = '';
    await this.#guard(async () => {
      const tried = await this.#require().objects.tryEveryKey(id);
      text = tried.ok
        ? 'opened with a key this machine holds'
        : tried.error.type === 'NoKeyOpens'
          ? `NoKeyOpens: none of ${tried.error.keys} keys opens this object`
          : describe(tried.error);
    });
    return text;
  }

  /** Runs SQL over this machine's catalog; the result (or the typed error) as text for the page. */
  async query(
    sql: string,
    progress: (done: number, total: number) => void,
    onRows: RowsFound,
  ): Promise<{ result?: QueryResult; error?: string; id: string }> {
    const id = crypto.randomUUID();
    this.#queryId = id;
    const ran = await this.#require().objects.query(sql, { id, progress: proxy(progress), onRows: proxy(onRows) });
    if (this.#queryId === id) this.#queryId = undefined;
    return ran.ok ? { result: ran.value, id } : { error: describeQueryError(ran.error), id };
  }

  async cancelQuery(): Promise<void> {
    if (this.#queryId) await this.#require().objects.cancelQuery(this.#queryId);
  }

  async syncObjects(): Promise<void> {
    await this.#guard(() => this.#require().objects.sync());
  }

  /** Deletes rows of an object table picked in a query result (delete objects, published like any). */
  deleteRows(table: string, rowIds: readonly string[]): Promise<boolean> {
    return this.#write(() => this.#require().objects.deleteRows(table, rowIds));
  }

  /**
   * Compacts the small objects of a table in a domain, a round at a time (each takes up to 100
   * objects) until none is left worth it; what happened, as text for the page.
   */
  async compact(domain: string, table: string): Promise<string> {
    let text = '';
    await this.#guard(async () => {
      const sum = { rounds: 0, inputs: 0, rows: 0, dropped: 0 };
      for (;;) {
        const done = await this.#require().objects.compact(domain, table);
        if (!done.ok) throw new Error(describeQueryError(done.error));
        const c = done.value;
        if (!c) break;
        sum.rounds++;
        sum.inputs += c.inputs;
        sum.rows += c.rows;
        sum.dropped += c.dropped;
      }
      const into = sum.rounds === 1 ? 'one' : `${sum.rounds}`;
      text = sum.rounds
        ? `Compacted ${sum.inputs} objects (${sum.rows} rows${sum.dropped ? `, ${sum.dropped} deleted rows left out` : ''}) into ${into}: ${sum.rounds === 1 ? 'it replaces' : 'they replace'} them once published.`
        : `Nothing to compact: ${table} has fewer than two small objects in ${domain}.`;
    });
    return text;
  }

  /** An admin lets the rows of an object table be deleted, for good. */
  allowDeletes(table: string): Promise<boolean> {
    return this.#write(() => this.#require().objects.allowDeletes(table));
  }

  /** An admin signs the build this page was served, once it matches its release manifest. */
  signRelease(): Promise<boolean> {
    const served = this.servedCode;
    if (served?.state !== 'matches') return Promise.resolve(false);
    return this.#write(() => this.#require().writes.signRelease(served.digest, served.version));
  }

  setPlacement(signer: string, domains: string): Promise<boolean> {
    return this.#write(() => this.#require().writes.setPlacement(signer, domains));
  }

  /** Sealed rows held but unreadable here, by domain, and the result of trying every key on them. */
  async unreadable(): Promise<string> {
    let text = '';
    await this.#guard(async () => {
      const { byDomain, attempt } = await this.#require().domains.unreadable();
      const held = Object.entries(byDomain)
        .map(([d, n]) => `${n} of ${d}`)
        .join(', ');
      text = attempt.ok
        ? `${attempt.value.opened} opened with one of ${attempt.value.keys} keys (${held || 'none held'})`
        : `${attempt.error.type}: none of ${attempt.error.keys} keys opens any of ${attempt.error.envelopes} sealed rows held (${held || 'none held'})`;
    });
    return text;
  }

  async #write(action: () => Promise<Result<unknown, { type: string; reason?: string }>>): Promise<boolean> {
    let done = false;
    await this.#guard(async () => {
      const result = await action();
      if (!result.ok) throw new Error(describe(result.error));
      done = true;
    });
    return done;
  }

  /** Why a write failed for want of room, with what is stored of what the browser allows. */
  #storageFullText(): string {
    const used = this.storage
      ? ` This site stores ${formatBytes(this.storage.usage)} of the ${formatBytes(this.storage.quota)} this browser allows it.`
      : '';
    const evictable = this.persisted
      ? ''
      : ' The browser has not granted this site persistent storage, so it may also clear its data to make room: ' +
        'installing the app usually grants it.';
    return `${STORAGE_FULL_TEXT}${used}${evictable}`;
  }

  /** Asks the browser again what this site stores and may store (shown in the Sync view). */
  async refreshStorage(): Promise<void> {
    if (!('storage' in navigator)) return; // an insecure context, or an old WebView
    const estimate = await navigator.storage.estimate().catch(() => undefined);
    if (estimate?.usage !== undefined && estimate.quota !== undefined) {
      this.storage = { usage: estimate.usage, quota: estimate.quota };
    }
  }

  async #guard(action: () => Promise<void>): Promise<void> {
    this.error = '';
    try {
      await action();
    } catch (e) {
      // A full store fails a write whole: nothing of it was kept or sent, all before it stays.
      if (isStorageFull(e)) {
        await this.refreshStorage();
        this.error = this.#storageFullText();
      } else this.error = (e as Error).message;
    }
  }
}

function describeQueryError(error: { type: string } & Record<string, unknown>): string {
  const detail = ['detail', 'reason', 'column', 'table', 'id']
    .map((k) => error[k])
    .find((v): v is string => typeof v === 'string');
  return detail ? `${error.type}: ${detail}` : error.type;
}

function describe(error: { type: string; reason?: string }): string {
  return error.reason ? `${error.type}: ${error.reason}` : error.type;
}
