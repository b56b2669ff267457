/**
 * The in-memory replica log, kept in columns (MemoryReplicaStore's log).
 *
 * A replica holds millions of entries. Kept as one object per entry (with its
 * body, its id strings and byte views), a million entries are ~10 million heap
 * objects that every major collection walks; the merge benchmark spent a fifth
 * of its time collecting them and most of the rest chasing their pointers.
 * Here an entry is a row of typed arrays:
 *
 *   bytes    sealed envelope and signed body, copied into shared arena chunks
 *            (`Arena`), addressed by position and length
 *   names    outer id and event id as 32 raw bytes each plus an interned
 *            suffix (`NameColumn`), found through an open-addressing index
 *            keyed by the id's leading bytes (ids are BLAKE3 digests)
 *   scalars  signer, row slot, domain and lane as indexes into small interned
 *            tables; seq, op and the revoked flag as numbers
 *
 * `entryAt` builds the `LogEntry` a reader asked for, decoding the body from
 * its signed bytes only when the reader touches it. Nothing of the caller's
 * objects is kept, so a caller may reuse its buffers after an append.
 */
import { hexThen, internedHex } from '../core/bytes.js';
import { decodeCbor, encodeCbor } from '../core/cbor.js';
import { MAX_EVENT_BYTES, type EventBody, type EventOp } from '../core/event.js';
import type { LogEntry, NewLogEntry, StampedEntry } from '../core/store.js';

/**
 * Copies of small byte strings packed into shared chunks: one buffer per chunk,
 * not per entry. A copy is addressed by `chunk * CHUNK + offset`.
 */
export class Arena {
  static readonly CHUNK = 1 << 20;
  readonly #chunks: Uint8Array[] = [new Uint8Array(Arena.CHUNK)];
  /** Copies too large for a chunk, by negative address. */
  readonly #large: Uint8Array[] = [];
  #used = 0;

  /** Keeps a copy of `bytes`; returns its address. */
  put(bytes: Uint8Array): number {
    if (bytes.length > Arena.CHUNK / 16) {
      this.#large.push(bytes.slice());
      return -this.#large.length;
    }
    if (this.#used + bytes.length > Arena.CHUNK) {
      this.#chunks.push(new Uint8Array(Arena.CHUNK));
      this.#used = 0;
    }
    const chunk = this.#chunks.length - 1;
    this.#chunks[chunk]!.set(bytes, this.#used);
    const at = chunk * Arena.CHUNK + this.#used;
    this.#used += bytes.length;
    return at;
  }

  /**
   * The copy at `at`, as a view of its chunk: fine to read and send, not to
   * hand to a structured clone (which would copy the whole chunk).
   */
  view(at: number, length: number): Uint8Array {
    if (at < 0) return this.#large[-at - 1]!;
    const chunk = this.#chunks[Math.floor(at / Arena.CHUNK)]!;
    // The constructor, not subarray() (which looks up a species constructor on every call).
    return new Uint8Array(chunk.buffer, at % Arena.CHUNK, length);
  }
}

const HEX_VALUE = new Int8Array(128).fill(-1);
for (let i = 0; i < 16; i++) HEX_VALUE['0123456789abcdef'.charCodeAt(i)] = i;

/**
 * Names of log entries (outer ids, event ids), kept per position. A name that
 * is 64 lowercase hex digits and a suffix (`envelopeId`: `<hex>.<domain>.<gen>`;
 * `eventIdOf`: bare hex) is kept as 32 bytes and an interned suffix, and found
 * by an open-addressing index of positions; any other name (tests use short
 * ones) is kept as a string in a map. Names are unique per column.
 * (In the storage layer, not the core: it may draw its own random seed.)
 */
export class NameColumn {
  #ids = new Uint8Array(32 * 1024);
  /** Per position: 0 none, 1 an irregular name (in `#odd`), else 2 + index of the suffix. */
  #kind = new Int32Array(1024);
  readonly #suffixes: string[] = [];
  readonly #suffixIndex = new Map<string, number>();
  readonly #odd = new Map<string, number>();
  readonly #oddAt = new Map<number, string>();
  /**
   * Open addressing, linear probing, sized to stay under half full: pairs of
   * (position, hash) — position 0 is empty. The whole 32-bit hash is kept, so
   * another id in the same run is ruled out without reading its bytes, and an
   * entry's home slot is known without them.
   */
  #table = new Int32Array(2 << 12);
  /**
   * Per-column random seed of the hash: ids are digests, but not every name is
   * (tests count upwards), and a member grinding ids with shared leading bytes
   * must not be able to line them up into one long probe run.
   */
  readonly #seed = crypto.getRandomValues(new Uint32Array(1))[0]!;
  #count = 0;
  readonly #probe = new Uint8Array(32);
  /** The name parsed last and its suffix: an append looks a name up, then sets it. */
  #parsedName = '';
  #parsedSuffix: string | undefined = undefined;

  grow(capacity: number): void {
    if (capacity <= this.#kind.length) return;
    const ids = new Uint8Array(32 * capacity);
    ids.set(this.#ids);
    this.#ids = ids;
    const kind = new Int32Array(capacity);
    kind.set(this.#kind);
    this.#kind = kind;
  }

  /** Parses `name` into the probe bytes; returns its suffix, or undefined when it is irregular. */
  #parse(name: string): string | undefined {
    if (name === this.#parsedName) return this.#parsedSuffix;
    const suffix = this.#parseNew(name);
    this.#parsedName = name;
    this.#parsedSuffix = suffix;
    return suffix;
  }

  #parseNew(name: string): string | undefined {
    if (name.length < 64) return undefined;
    const probe = this.#probe;
    for (let i = 0; i < 32; i++) {
      const hi = name.charCodeAt(2 * i);
      const lo = name.charCodeAt(2 * i + 1);
      const h = hi < 128 ? HEX_VALUE[hi]! : -1;
      const l = lo < 128 ? HEX_VALUE[lo]! : -1;
      if (h < 0 || l < 0) return undefined;
      probe[i] = (h << 4) | l;
    }
    return name.length === 64 ? '' : name.slice(64);
  }

  /** The seeded hash of the 32 id bytes at `at` (a multiply-xorshift over its eight words). */
  #hash(bytes: Uint8Array, at: number): number {
    let h = this.#seed;
    for (let i = at; i < at + 32; i += 4) {
      const word = (bytes[i]! << 24) | (bytes[i + 1]! << 16) | (bytes[i + 2]! << 8) | bytes[i + 3]!;
      h = Math.imul(h ^ word, 0x9e3779b1);
      h ^= h >>> 15;
    }
    return h | 0;
  }

  #matches(pos: number, kind: number): boolean {
    if (this.#kind[pos] !== kind) return false;
    const ids = this.#ids;
    const probe = this.#probe;
    const base = 32 * pos;
    for (let i = 0; i < 32; i++) if (ids[base + i] !== probe[i]) return false;
    return true;
  }

  /** The position named `name`, or 0. */
  find(name: string): number {
    const suffix = this.#parse(name);
    if (suffix === undefined) return this.#odd.get(name) ?? 0;
    const index = this.#suffixIndex.get(suffix);
    if (index === undefined) return 0;
    const table = this.#table;
    const mask = (table.length >> 1) - 1;
    const hash = this.#hash(this.#probe, 0);
    for (let slot = hash & mask; ; slot = (slot + 1) & mask) {
      const pos = table[2 * slot]!;
      if (pos === 0) return 0;
      if (table[2 * slot + 1] === hash && this.#matches(pos, 2 + index)) return pos;
    }
  }

  /** Names position `pos` (which has no name yet in this column). */
  set(pos: number, name: string): void {
    const suffix = this.#parse(name);
    if (suffix === undefined) {
      this.#odd.set(name, pos);
      this.#oddAt.set(pos, name);
      this.#kind[pos] = 1;
      return;
    }
    let index = this.#suffixIndex.get(suffix);
    if (index === undefined) {
      index = this.#suffixes.push(suffix) - 1;
      this.#suffixIndex.set(suffix, index);
    }
    if (4 * (this.#count + 1) > this.#table.length) this.#rehash(this.#table.length * 2);
    this.#ids.set(this.#probe, 32 * pos);
    this.#kind[pos] = 2 + index;
    this.#insert(pos, this.#hash(this.#probe, 0));
    this.#count++;
  }

  #insert(pos: number, hash: number): void {
    const table = this.#table;
    const mask = (table.length >> 1) - 1;
    let slot = hash & mask;
    while (table[2 * slot] !== 0) slot = (slot + 1) & mask;
    table[2 * slot] = pos;
    table[2 * slot + 1] = hash;
  }

  #rehash(size: number): void {
    const old = this.#table;
    this.#table = new Int32Array(size);
    for (let i = 0; i < old.length; i += 2) if (old[i] !== 0) this.#insert(old[i]!, old[i + 1]!);
  }

  /** Forgets the name of `pos` (a rolled-back append or fill). */
  clear(pos: number): void {
    const kind = this.#kind[pos]!;
    this.#kind[pos] = 0;
    if (kind === 0) return;
    if (kind === 1) {
      this.#odd.delete(this.#oddAt.get(pos)!);
      this.#oddAt.delete(pos);
      return;
    }
    // Backward-shift deletion keeps every other probe sequence unbroken, in any order of removal.
    const table = this.#table;
    const mask = (table.length >> 1) - 1;
    let hole = this.#hash(this.#ids, 32 * pos) & mask;
    while (table[2 * hole] !== pos) hole = (hole + 1) & mask;
    for (let slot = (hole + 1) & mask; table[2 * slot] !== 0; slot = (slot + 1) & mask) {
      const at = table[2 * slot + 1]! & mask;
      // Move the entry back when its home does not lie cyclically in (hole, slot].
      const between = hole <= slot ? at > hole && at <= slot : at > hole || at <= slot;
      if (!between) {
        table[2 * hole] = table[2 * slot]!;
        table[2 * hole + 1] = table[2 * slot + 1]!;
        hole = slot;
      }
    }
    table[2 * hole] = 0;
    table[2 * hole + 1] = 0;
    this.#count--;
  }

  named(pos: number): boolean {
    return this.#kind[pos] !== 0;
  }

  /** The name of `pos`, or undefined. */
  at(pos: number): string | undefined {
    const kind = this.#kind[pos]!;
    if (kind === 0) return undefined;
    if (kind === 1) return this.#oddAt.get(pos);
    return hexThen(new Uint8Array(this.#ids.buffer, 32 * pos, 32), this.#suffixes[kind - 2]!);
  }
}

/** Small interned tables: values seen over and over (domains, signer ids, row keys) kept once. */
export class Interned<T> {
  readonly values: T[] = [];
  readonly #index = new Map<string, number>();

  indexOf(key: string, make: () => T): number {
    let index = this.#index.get(key);
    if (index === undefined) {
      index = this.values.push(make()) - 1;
      this.#index.set(key, index);
    }
    return index;
  }
}

const OPS: readonly (EventOp | undefined)[] = [undefined, 'put', 'del', 'remove'];
const opCode = (op: EventOp | undefined): number => (op === undefined ? 0 : OPS.indexOf(op));
const LANES: readonly ('trusted' | 'local' | undefined)[] = [undefined, 'trusted', 'local'];

/** A snapshot of one position's columns, to put back when a fill is rolled back. */
export type EntrySnapshot = { readonly pos: number; readonly values: readonly number[]; readonly eventId?: string };

/**
 * The columns. Positions start at 1 (slot 0 is never used); every column grows
 * together. `slot` indexes the caller's row slots (-1: no row), `signer` the
 * interned signer ids (-1: none).
 */
export class CompactLog {
  #length = 0;
  #capacity = 1024;
  readonly arena = new Arena();
  readonly #outer = new NameColumn();
  readonly #event = new NameColumn();
  readonly domains = new Interned<string>();
  readonly signers = new Interned<string>();
  #sealedAt = new Float64Array(1024);
  #sealedLength = new Int32Array(1024);
  /** Address of the body's signed bytes; `#bodyLength` -1 when the entry has no body. */
  #bodyAt = new Float64Array(1024);
  #bodyLength = new Int32Array(1024);
  #seq = new Float64Array(1024);
  #signer = new Int32Array(1024);
  #slot = new Int32Array(1024);
  #domain = new Int32Array(1024);
  /** op code, lane code, revoked flag and whether seq is present, a byte each. */
  #flags = new Uint8Array(4 * 1024);
  /** The previous position of the same row (any op), and of the same row and op; 0 when none. */
  #prevInRow = new Int32Array(1024);
  #prevOfOp = new Int32Array(1024);
  /** The body's stamp without the body: HLC millis and counter, and its signer key (interned; -1 without a body). */
  #ms = new Float64Array(1024);
  #counter = new Float64Array(1024);
  #key = new Int32Array(1024);
  /** Signer keys of bodies, by their hex, each kept once (read-only, like every stamp's node). */
  readonly #keys = new Interned<Uint8Array>();

  get length(): number {
    return this.#length;
  }

  #grow(): void {
    const capacity = this.#capacity * 2;
    const widen = <A extends Float64Array | Int32Array | Uint8Array>(old: A, make: (n: number) => A, per = 1) => {
      const next = make(capacity * per);
      next.set(old);
      return next;
    };
    this.#sealedAt = widen(this.#sealedAt, (n) => new Float64Array(n));
    this.#sealedLength = widen(this.#sealedLength, (n) => new Int32Array(n));
    this.#bodyAt = widen(this.#bodyAt, (n) => new Float64Array(n));
    this.#bodyLength = widen(this.#bodyLength, (n) => new Int32Array(n));
    this.#seq = widen(this.#seq, (n) => new Float64Array(n));
    this.#signer = widen(this.#signer, (n) => new Int32Array(n));
    this.#slot = widen(this.#slot, (n) => new Int32Array(n));
    this.#domain = widen(this.#domain, (n) => new Int32Array(n));
    this.#flags = widen(this.#flags, (n) => new Uint8Array(n), 4);
    this.#prevInRow = widen(this.#prevInRow, (n) => new Int32Array(n));
    this.#prevOfOp = widen(this.#prevOfOp, (n) => new Int32Array(n));
    this.#ms = widen(this.#ms, (n) => new Float64Array(n));
    this.#counter = widen(this.#counter, (n) => new Float64Array(n));
    this.#key = widen(this.#key, (n) => new Int32Array(n));
    this.#outer.grow(capacity);
    this.#event.grow(capacity);
    this.#capacity = capacity;
  }

  /** Appends `entry` in row slot `slot` (-1: none); returns its position. */
  append(entry: NewLogEntry, slot: number, bodyBytes?: Uint8Array): number {
    if (this.#length + 1 >= this.#capacity) this.#grow();
    const pos = ++this.#length;
    this.#outer.set(pos, entry.outerId);
    this.#write(pos, entry, slot, bodyBytes);
    return pos;
  }

  /** Drops the newest entry (a rolled-back append); its arena bytes stay unused. */
  pop(): void {
    const pos = this.#length--;
    this.#outer.clear(pos);
    this.#event.clear(pos);
  }

  /** Writes the opened part of `entry` at an opaque position (a fill). */
  fill(pos: number, entry: NewLogEntry, slot: number, bodyBytes?: Uint8Array): void {
    this.#write(pos, entry, slot, bodyBytes);
  }

  #write(pos: number, entry: NewLogEntry, slot: number, bodyBytes?: Uint8Array): void {
    const sealed = entry.sealed;
    this.#sealedAt[pos] = this.arena.put(sealed);
    this.#sealedLength[pos] = sealed.length;
    const body = entry.body;
    if (body !== undefined) {
      // A verified event's signed bytes decode to its body; a body given without them is encoded here.
      const bytes = bodyBytes ?? encodeCbor(body);
      this.#bodyAt[pos] = this.arena.put(bytes);
      this.#bodyLength[pos] = bytes.length;
      this.#ms[pos] = body.hlc.ms;
      this.#counter[pos] = body.hlc.counter;
      this.#key[pos] = this.#keys.indexOf(internedHex(body.signer), () => body.signer.slice());
    } else {
      this.#bodyLength[pos] = -1;
      this.#key[pos] = -1;
    }
    if (entry.eventId !== undefined) this.#event.set(pos, entry.eventId);
    const signer = entry.signer;
    this.#signer[pos] = signer === undefined ? -1 : this.signers.indexOf(signer, () => signer);
    this.#seq[pos] = entry.seq ?? 0;
    this.#slot[pos] = slot;
    this.#domain[pos] = this.domains.indexOf(entry.domain, () => entry.domain);
    const flags = 4 * pos;
    this.#flags[flags] = opCode(entry.op);
    this.#flags[flags + 1] = LANES.indexOf(entry.lane);
    this.#flags[flags + 2] = entry.revoked ? 1 : 0;
    this.#flags[flags + 3] = entry.seq === undefined ? 0 : 1;
  }

  /** The columns of `pos`, to restore with `restore` (a fill rolled back). */
  snapshot(pos: number): EntrySnapshot {
    const f = 4 * pos;
    const eventId = this.#event.at(pos);
    return {
      pos,
      values: [
        this.#sealedAt[pos]!,
        this.#sealedLength[pos]!,
        this.#bodyAt[pos]!,
        this.#bodyLength[pos]!,
        this.#seq[pos]!,
        this.#signer[pos]!,
        this.#slot[pos]!,
        this.#domain[pos]!,
        this.#flags[f]!,
        this.#flags[f + 1]!,
        this.#flags[f + 2]!,
        this.#flags[f + 3]!,
        this.#prevInRow[pos]!,
        this.#prevOfOp[pos]!,
        this.#ms[pos]!,
        this.#counter[pos]!,
        this.#key[pos]!,
      ],
      ...(eventId === undefined ? {} : { eventId }),
    };
  }

  restore(snapshot: EntrySnapshot): void {
    const { pos, values: v } = snapshot;
    this.#sealedAt[pos] = v[0]!;
    this.#sealedLength[pos] = v[1]!;
    this.#bodyAt[pos] = v[2]!;
    this.#bodyLength[pos] = v[3]!;
    this.#seq[pos] = v[4]!;
    this.#signer[pos] = v[5]!;
    this.#slot[pos] = v[6]!;
    this.#domain[pos] = v[7]!;
    this.#flags.set(v.slice(8, 12), 4 * pos);
    this.#prevInRow[pos] = v[12]!;
    this.#prevOfOp[pos] = v[13]!;
    this.#ms[pos] = v[14]!;
    this.#counter[pos] = v[15]!;
    this.#key[pos] = v[16]!;
    this.#event.clear(pos);
    if (snapshot.eventId !== undefined) this.#event.set(pos, snapshot.eventId);
  }

  /** Row chain links (see MemoryReplicaStore's row slots). */
  setLinks(pos: number, prevInRow: number, prevOfOp: number): void {
    this.#prevInRow[pos] = prevInRow;
    this.#prevOfOp[pos] = prevOfOp;
  }

  prevInRow(pos: number): number {
    return this.#prevInRow[pos]!;
  }

  setPrevInRow(pos: number, prev: number): void {
    this.#prevInRow[pos] = prev;
  }

  prevOfOp(pos: number): number {
    return this.#prevOfOp[pos]!;
  }

  setPrevOfOp(pos: number, prev: number): void {
    this.#prevOfOp[pos] = prev;
  }

  posOfOuterId(outerId: string): number {
    return this.#outer.find(outerId);
  }

  hasEventId(eventId: string): boolean {
    return this.#event.find(eventId) !== 0;
  }

  /** Whether the entry at `pos` was opened (it has an event id); an opaque one was not. */
  hasEvent(pos: number): boolean {
    return this.#event.named(pos);
  }

  outerIdAt(pos: number): string {
    return this.#outer.at(pos)!;
  }

  /**
   * The event id and body stamp of `pos` when it is opened (has an event id
   * and a body) and not revoked; undefined otherwise. Reads no body.
   */
  stampedAt(pos: number): StampedEntry | undefined {
    const key = this.#key[pos]!;
    if (key < 0 || this.#flags[4 * pos + 2] === 1) return undefined;
    const eventId = this.#event.at(pos);
    if (!eventId) return undefined;
    return { eventId, stamp: { ms: this.#ms[pos]!, counter: this.#counter[pos]!, node: this.#keys.values[key]! } };
  }

  seqAt(pos: number): number {
    return this.#flags[4 * pos + 3] === 1 ? this.#seq[pos]! : 0;
  }

  slotAt(pos: number): number {
    return this.#slot[pos]!;
  }

  revokedAt(pos: number): boolean {
    return this.#flags[4 * pos + 2] === 1;
  }

  setRevoked(pos: number, revoked: boolean): void {
    this.#flags[4 * pos + 2] = revoked ? 1 : 0;
  }

  /** The entry at `pos` as readers see it; `rowKey` is the row's shared key string. */
  entryAt(pos: number, rowKey: (slot: number) => string): LogEntry {
    const f = 4 * pos;
    const entry: {
      -readonly [K in keyof LogEntry]: LogEntry[K];
    } = {
      pos,
      outerId: this.#outer.at(pos)!,
      domain: this.domains.values[this.#domain[pos]!]!,
      sealed: this.arena.view(this.#sealedAt[pos]!, this.#sealedLength[pos]!),
    };
    const eventId = this.#event.at(pos);
    if (eventId !== undefined) entry.eventId = eventId;
    const signer = this.#signer[pos]!;
    if (signer >= 0) entry.signer = this.signers.values[signer]!;
    if (this.#flags[f + 3] === 1) entry.seq = this.#seq[pos]!;
    const bodyLength = this.#bodyLength[pos]!;
    if (bodyLength >= 0) lazyBody(entry, this.arena.view(this.#bodyAt[pos]!, bodyLength));
    const slot = this.#slot[pos]!;
    if (slot >= 0) entry.rowKey = rowKey(slot);
    const op = OPS[this.#flags[f]!];
    if (op !== undefined) entry.op = op;
    if (this.#flags[f + 2] === 1) entry.revoked = true;
    const lane = LANES[this.#flags[f + 1]!];
    if (lane !== undefined) entry.lane = lane;
    return entry;
  }
}

/** Gives `entry` a `body` decoded from `bytes` on first read (an own, enumerable property, like a plain field). */
function lazyBody(entry: { body?: EventBody }, bytes: Uint8Array): void {
  let body: EventBody | undefined;
  Object.defineProperty(entry, 'body', {
    enumerable: true,
    configurable: true,
    get(): EventBody {
      if (body === undefined) {
        const decoded = decodeCbor(bytes, MAX_EVENT_BYTES);
        if (!decoded.ok) throw new Error(`memory-log: a kept body does not decode: ${decoded.error.reason}`);
        body = decoded.value as EventBody;
      }
      return body;
    },
  });
}
