/**
 * The replica's storage contract. The core decides; an adapter (Dexie in
 * browsers, memory in tests and benchmarks, SQLite for headless nodes later)
 * only keeps. `transact` must be atomic and serialised: every write inside one
 * call lands together or not at all, so an apply and the watermark it moves can
 * never be split by a crash. Callbacks passed to `transact` touch only the
 * transaction (no other awaits), which is what IndexedDB requires.
 */
import type { EventBody, EventOp } from './event.js';
import type { Hlc, Stamp } from './hlc.js';
import type { RowState } from './merge.js';
import type { DomainName } from './schema.js';
import type { Awaitable } from './steps.js';

/** One envelope in the local log, in arrival order; `pos` starts at 1. */
export type LogEntry = {
  readonly pos: number;
  /**
   * Envelope id: the outer id (BLAKE3 of the ciphertext, verified on receipt)
   * with the domain and generation it was labelled with (`envelopeId` in
   * seal.ts); every machine can compute it without a key.
   */
  readonly outerId: string;
  readonly domain: DomainName;
  readonly sealed: Uint8Array;
  /** Known only when this machine could open the envelope. */
  readonly eventId?: string;
  readonly signer?: string;
  readonly seq?: number;
  /** The opened body, kept so rows can be rebuilt when a removal revokes events. */
  readonly body?: EventBody;
  /** `${table}\u0000${row}` of the opened body, for per-row history. */
  readonly rowKey?: string;
  /** The opened body's op, indexed with `rowKey` so a row's deletes are found without reading its edits. */
  readonly op?: EventOp;
  /** Set when a later removal of the signer revoked this event: kept for forwarding, never materialised. */
  readonly revoked?: true;
  /** The privacy lane outside the public one (sync-manifest.ts): whom the entry may be offered to. */
  readonly lane?: 'trusted' | 'local';
};

export type NewLogEntry = Omit<LogEntry, 'pos'>;

export type ChainHead = { readonly seq: number; readonly eventId: string };

/** Why an envelope waits instead of being applied, and when to look again. */
export const PARK_REASONS = ['UnknownSigner', 'NotAuthorized', 'ChainGap', 'ClockSkew'] as const;
export type ParkReason = (typeof PARK_REASONS)[number];

export type ParkedEnvelope = {
  readonly outerId: string;
  readonly sealed: Uint8Array;
  /** The opened, signature-checked event, so a retry needs no key and no crypto. */
  readonly event: Uint8Array;
  readonly reason: ParkReason;
  readonly detail: string;
  readonly parkedAt: number;
  readonly signer?: string;
  readonly seq?: number;
  /**
   * The log position where this envelope is held opaque: its key arrived but it could not apply yet
   * (a gap in its chain, a signer not yet known). Admitted later, it fills that entry.
   */
  readonly fill?: number;
};

export type RejectionRecord = {
  readonly outerId: string;
  readonly reason: string;
  readonly detail: string;
  readonly at: number;
  readonly peer: string;
};

/**
 * An envelope this machine may not hold now because of a privacy class
 * (sync-manifest.ts): only its identity is kept, never its content, so it is
 * asked for again when the class or this machine's trust widens. Not capped
 * like rejections: forgetting one would lose the event here for good. Only
 * authenticated events of the mesh create them (a forged one never opens).
 */
export type WithheldRecord = {
  readonly outerId: string;
  /** The event id; empty when the envelope was refused unopened, by its lane. */
  readonly eventId: string;
  /** The chain it is a link of here (its head moved past it); empty when it is not a link. */
  readonly chain: string;
  readonly seq: number;
  /** The table; empty when refused unopened. */
  readonly table: string;
  readonly lane: 'public' | 'trusted' | 'local';
  readonly reason: WithheldReason;
  readonly at: number;
};

export const WITHHELD_REASONS = ['NotSyncable', 'NotEligible'] as const;
export type WithheldReason = (typeof WITHHELD_REASONS)[number];

/** A delete overtaken by a later edit of the same row, reported once per pair. */
export type Resurrection = {
  readonly key: string;
  readonly table: string;
  readonly row: string;
  readonly deleteId: string;
  readonly editId: string;
  readonly at: number;
};

/**
 * Rejection records kept at most; the oldest go first. A flood of forged frames
 * must not fill the disk: a forgotten rejection only means a re-sent copy is
 * checked, and refused, again.
 */
export const MAX_REJECTION_RECORDS = 10_000;

export const rowKeyOf = (table: string, row: string): string => `${table}\u0000${row}`;

/** Whether `rowKey` is `rowKeyOf(table, row)`, without building that string. */
export const spellsRowKey = (rowKey: string, table: string, row: string): boolean =>
  rowKey.length === table.length + 1 + row.length &&
  rowKey.charCodeAt(table.length) === 0 &&
  rowKey.startsWith(table) &&
  rowKey.endsWith(row);

/**
 * An opened, unrevoked entry of a row as the resurrection check needs it: its
 * event id and its stamp (the body's HLC and signer), without the body.
 */
export type StampedEntry = { readonly eventId: string; readonly stamp: Stamp };

/** What a batch will ask of the store (`ReplicaTx.prefetch`). */
export type Lookup = {
  readonly outerIds: readonly string[];
  /** Rows as (table, row). */
  readonly rows?: readonly (readonly [string, string])[];
};

/** What a replica already knows of an envelope, by its outer id (asked once per admission). */
export type EnvelopeState = {
  /** In the log (opened or opaque). */
  readonly logged: boolean;
  /** Finally refused (a rejection record). */
  readonly rejected: boolean;
  /** Held as identity only (a privacy class). */
  readonly withheld: WithheldRecord | undefined;
};

/**
 * Reads and writes inside one transaction. A store answers with a value when
 * it has it at once (memory, SQLite) and with a promise when it must wait
 * (IndexedDB); callers `await` or `yield` (steps.ts) either.
 */
export interface ReplicaTx {
  getHlc(): Awaitable<Hlc | undefined>;
  setHlc(hlc: Hlc): Awaitable<void>;
  /** The head of one chain, named by `chainKey(signer, lane)` (sync-manifest.ts). */
  head(chain: string): Awaitable<ChainHead | undefined>;
  setHead(chain: string, head: ChainHead): Awaitable<void>;
  hasOuterId(outerId: string): Awaitable<boolean>;
  /** `hasOuterId`, `isRejected` and `withheldRecord` in one read. */
  envelopeState(outerId: string): Awaitable<EnvelopeState>;
  /**
   * Optional: what the store knows of these envelopes (logged, rejected, withheld, parked),
   * events (logged) and rows (state, surviving deletes), looked up in bulk, so the checks
   * of them that follow in this transaction read nothing more. A store where each check
   * is cheap leaves it out.
   */
  prefetch?(batch: Lookup): Awaitable<void>;
  /**
   * Whether this event is logged: found by its signer and sequence number (the index a
   * store keeps for revocation), its id compared. Only duplicates and forks ask it, so a
   * store keeps no index of event ids (one more random B-tree entry per event).
   */
  hasEvent(signer: string, seq: number, eventId: string): Awaitable<boolean>;
  /**
   * Appends an entry; `bodyBytes`, when given, are the signed encoding of its
   * body (which decodes to exactly `entry.body`), for a store that keeps bodies
   * as bytes. Stores that keep the body as a record ignore them.
   */
  append(entry: NewLogEntry, bodyBytes?: Uint8Array): Awaitable<number>;
  /** Entries held opaque (no event id: a domain this machine had no key for) with pos > `after`, in order. */
  opaqueAfter(after: number, limit: number): Awaitable<LogEntry[]>;
  /** Fills an opaque entry in place with the event it turned out to hold (same outer id, same position). */
  fill(pos: number, entry: NewLogEntry, bodyBytes?: Uint8Array): Awaitable<void>;
  /** Opened entries of one row (revoked ones included), optionally of one op, in log order. */
  rowEntries(rowKey: string, op?: EventOp): Awaitable<LogEntry[]>;
  /**
   * The opened entries of one row and op that are not revoked, as ids and
   * stamps, in log order: `rowEntries` without reading any body.
   */
  rowStamps(rowKey: string, op: EventOp): Awaitable<StampedEntry[]>;
  /** Opened entries of one signer with seq > `seq`, in log order. */
  signerEntriesAbove(signer: string, seq: number): Awaitable<LogEntry[]>;
  setRevoked(pos: number, revoked: boolean): Awaitable<void>;
  getRow(table: string, row: string): Awaitable<RowState | undefined>;
  putRow(state: RowState): Awaitable<void>;
  deleteRow(table: string, row: string): Awaitable<void>;
  park(envelope: ParkedEnvelope): Awaitable<void>;
  unpark(outerId: string): Awaitable<void>;
  isParked(outerId: string): Awaitable<boolean>;
  parkedAll(): Awaitable<ParkedEnvelope[]>;
  parkedCount(): Awaitable<number>;
  recordRejection(record: RejectionRecord): Awaitable<void>;
  isRejected(outerId: string): Awaitable<boolean>;
  /** The recorded reason an envelope was refused, if it was. */
  rejectionReason(outerId: string): Awaitable<string | undefined>;
  withhold(record: WithheldRecord): Awaitable<void>;
  withheldRecord(outerId: string): Awaitable<WithheldRecord | undefined>;
  /** Forgets a withheld record: its envelope was taken in after all. */
  release(outerId: string): Awaitable<void>;
  addResurrection(resurrection: Resurrection): Awaitable<void>;
  hasResurrection(key: string): Awaitable<boolean>;
  dropResurrectionsOf(eventId: string): Awaitable<void>;
  /** The inbound watermark: the peer's log position up to which everything is applied or recorded. */
  setWatermark(peer: string, upto: number): Awaitable<void>;
}

/** Counts by reason, for the Sync panel (reasons with none are left out). */
export type ReasonCounts = {
  readonly parked: Readonly<Record<string, number>>;
  readonly withheld: Readonly<Record<string, number>>;
  readonly rejected: Readonly<Record<string, number>>;
};

/** The three lists of envelopes not applied: waiting, not to be held here, refused for good. */
export type RefusalKind = 'parked' | 'withheld' | 'rejected';

/** One entry of those lists as the Sync panel pages through it. */
export type Refusal = {
  readonly outerId: string;
  readonly reason: string;
  readonly detail: string;
  readonly at: number;
};

/** A list entry of any kind, in the one shape the panel shows. */
export function refusalOf(record: ParkedEnvelope | WithheldRecord | RejectionRecord): Refusal {
  if ('parkedAt' in record) {
    return { outerId: record.outerId, reason: record.reason, detail: record.detail, at: record.parkedAt };
  }
  if ('lane' in record) {
    const what = record.table === '' ? 'sealed, refused by its lane' : `a row of ${record.table}`;
    return { outerId: record.outerId, reason: record.reason, detail: `${what} (${record.lane} lane)`, at: record.at };
  }
  return { outerId: record.outerId, reason: record.reason, detail: record.detail, at: record.at };
}

/** The order views list a table's rows in: the `name` column, lower-cased, then the row id. */
export function rowSortKey(state: RowState): string {
  const name = state.cells['name']?.value;
  return `${typeof name === 'string' ? name.toLowerCase() : ''}\u0000${state.row}`;
}

/** A window of a table's alive rows in `rowSortKey` order, with the table's counts. */
export type RowWindow = {
  readonly rows: readonly RowState[];
  readonly alive: number;
  readonly deleted: number;
};

/**
 * A log entry as it is sent to a peer: its place, its sealed bytes, and who may hold it
 * (signer, lane; its own machine never sends an own entry it revoked: republish.ts).
 */
export type SealedEntry = Pick<LogEntry, 'pos' | 'sealed' | 'signer' | 'lane' | 'revoked'>;

export interface ReplicaStore {
  transact<T>(fn: (tx: ReplicaTx) => Awaitable<T>): Promise<T>;
  /** Log entries with pos > `after`, in order, at most `limit`. */
  entriesAfter(after: number, limit: number): Promise<LogEntry[]>;
  /**
   * Entries with `after` < pos ≤ `through` not signed by `except`, in order, at most
   * `limit`: what an offer to a peer reads (never the peer's own entries back). A store
   * that would decode each entry's body for `entriesAfter` leaves it undecoded here, and
   * one that can leaves `except`'s entries unread: a catch-up passes over every entry.
   */
  sealedAfter(after: number, through: number, limit: number, except?: string): Promise<SealedEntry[]>;
  /**
   * Entries of one lane (`trusted`, `local`) with `after` < pos ≤ `through`, in order, at
   * most `limit`: what a sweep sends. A store that indexes lanes reads only those entries
   * (a 100,000-entry log with none in the lane is one empty read, not 100,000 records).
   */
  laneAfter(lane: 'trusted' | 'local', after: number, through: number, limit: number): Promise<SealedEntry[]>;
  lastPos(): Promise<number>;
  /** Highest log position the peer has acknowledged (0 if none). */
  cursor(peer: string): Promise<number>;
  /** Moves the peer's cursor forward; never backward. */
  advanceCursor(peer: string, pos: number): Promise<void>;
  /** The log entries with these outer ids that exist here, in log order. */
  entriesByOuterId(outerIds: readonly string[]): Promise<LogEntry[]>;
  /** Withheld records, oldest first, at most `limit`. */
  withheld(limit: number): Promise<WithheldRecord[]>;
  /** Highest position of the peer's log applied or recorded here (0 if none). */
  watermark(peer: string): Promise<number>;
  rows(table: string): Promise<RowState[]>;
  row(table: string, row: string): Promise<RowState | undefined>;
  parked(limit: number): Promise<ParkedEnvelope[]>;
  parkedCount(): Promise<number>;
  /** How many envelopes wait parked, are withheld and were rejected, by reason, without reading them. */
  reasonCounts(): Promise<ReasonCounts>;
  /** One page of a list of envelopes not applied, newest first. */
  refusals(kind: RefusalKind, offset: number, limit: number): Promise<Refusal[]>;
  rejections(limit: number): Promise<RejectionRecord[]>;
  resurrections(limit: number): Promise<Resurrection[]>;
  /**
   * The alive rows of `table` from `offset` in `rowSortKey` order, at most `limit`, read
   * through an index kept in that order, so the first screen of a large table costs a
   * page, not the table. Optional: a store without it is paged from an index in memory.
   */
  rowWindow?(table: string, offset: number, limit: number): Promise<RowWindow>;
}
