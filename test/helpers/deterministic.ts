/**
 * Deterministic test dependencies (STYLE §3): seeded randomness, a clock the
 * test moves by hand, Ed25519 keys derived from a seed, and machines wired from
 * them, so ciphertexts, signatures and HLC sequences are the same on every run.
 *
 * Also an in-memory network of `PeerChannel`s that queues whole frames and lets
 * a test lose, duplicate or reorder them before delivering, and a store wrapper
 * that crashes a transaction at a chosen write, like a tab closed mid-apply.
 */
import { ed25519 } from '@noble/curves/ed25519.js';
import { blake3 } from '@noble/hashes/blake3.js';
import { concat, toHex, utf8 } from '../../src/core/bytes.js';
import { encodeCbor } from '../../src/core/cbor.js';
import { DomainKeyring } from '../../src/core/domain-keys.js';
import type { Hlc } from '../../src/core/hlc.js';
import { decodePeerMessage, encodePeerMessage, type PeerMessage } from '../../src/core/peer-wire.js';
import type { Clock, Random, Signer, Verifier } from '../../src/core/ports.js';
import { Replica, type EnvelopeCrypto } from '../../src/core/replica.js';
import { TABLES, type DomainName } from '../../src/core/schema.js';
import { everyTablePublic, type PrivacyPolicy } from '../../src/core/sync-manifest.js';
import type { Awaitable } from '../../src/core/steps.js';
import type { ChainHead, RefusalKind, ReplicaStore, ReplicaTx } from '../../src/core/store.js';
import { isDeliveryMessage, SyncEngine, type PeerChannel, type SyncListener } from '../../src/core/sync.js';
import { MemoryReplicaStore } from '../../src/storage/memory-store.js';

export type TestRandom = Random & {
  /** A uniform integer in [0, n). */
  int(n: number): number;
  /** True with probability p. */
  chance(p: number): boolean;
};

/** BLAKE3-XOF of seed ‖ counter: a fresh, reproducible stream per seed. */
export function seededRandom(seed: string | Uint8Array): TestRandom {
  const seedBytes = typeof seed === 'string' ? utf8(seed) : seed;
  let counter = 0;
  const bytes = (length: number): Uint8Array => {
    const c = new Uint8Array(8);
    new DataView(c.buffer).setBigUint64(0, BigInt(counter++));
    return blake3(concat(utf8('test/random'), seedBytes, c), { dkLen: length });
  };
  const int = (n: number): number => {
    const b = bytes(4);
    return Math.floor(((b[0]! * 2 ** 24 + b[1]! * 2 ** 16 + b[2]! * 2 ** 8 + b[3]!) / 2 ** 32) * n);
  };
  return { bytes, int, chance: (p) => int(1_000_000) < p * 1_000_000 };
}

/**
 * A fast seeded stream (splitmix32, seeded by BLAKE3 of the seed) for choices a
 * test makes very often, such as which frame to deliver next; not for key material.
 */
export function fastSeededRandom(seed: string): Pick<TestRandom, 'int' | 'chance'> {
  const seedBytes = blake3(utf8(`test/fast-random/${seed}`), { dkLen: 4 });
  let state = new DataView(seedBytes.buffer, seedBytes.byteOffset, 4).getUint32(0);
  const next = (): number => {
    state = (state + 0x9e3779b9) | 0;
    let z = state;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
    return ((z ^ (z >>> 16)) >>> 0) / 2 ** 32;
  };
  return { int: (n) => Math.floor(next() * n), chance: (p) => next() < p };
}

export type TestClock = Clock & {
  advance(ms: number): void;
  set(ms: number): void;
};

/** Starts at 2024-01-01T00:00:00Z unless told otherwise. */
export function testClock(start = 1_704_067_200_000): TestClock {
  let now = start;
  return {
    now: () => now,
    advance: (ms) => void (now += ms),
    set: (ms) => void (now = ms),
  };
}

/** In-process Ed25519 signer whose key is derived from a seed (tests only: the key is extractable). */
export function unsafeTestingSigner(seed: string): Signer & { readonly secretKey: Uint8Array } {
  const secretKey = blake3(utf8(`test/ed25519/${seed}`), { dkLen: 32 });
  const publicKey = ed25519.getPublicKey(secretKey);
  return {
    publicKey,
    secretKey,
    sign: (message) => Promise.resolve(ed25519.sign(message, secretKey)),
  };
}

const FAST_LABEL = utf8('test/fast-signature');

/**
 * A keyed-hash stand-in for Ed25519, thousands of times faster, for property
 * tests whose subject is merging and delivery, not signatures. Anyone can forge
 * it (the "signature" is a hash of the public key and the message): never use it
 * where a test is about forgery; those use `unsafeTestingSigner`.
 */
export function unsafeTestingFastSigner(seed: string): Signer {
  const publicKey = blake3(utf8(`test/fast-key/${seed}`), { dkLen: 32 });
  return { publicKey, sign: (message) => Promise.resolve(fastSignature(publicKey, message)) };
}

const fastSignature = (publicKey: Uint8Array, message: Uint8Array): Uint8Array =>
  blake3(concat(FAST_LABEL, publicKey, message), { dkLen: 64 });

export const unsafeTestingFastVerifier: Verifier = {
  verify: (publicKey, message, signature) =>
    Promise.resolve(toHex(fastSignature(publicKey, message)) === toHex(signature)),
};

export const nobleVerifier: Verifier = {
  verify(publicKey, message, signature) {
    try {
      return Promise.resolve(ed25519.verify(signature, message, publicKey));
    } catch {
      return Promise.resolve(false);
    }
  },
};

/** The shared secrets of one mesh: one key per domain, generation 1, and its admins. */
export type Mesh = {
  readonly keys: { readonly CONTROL: Uint8Array; readonly GENERAL: Uint8Array } & Readonly<
    Record<DomainName, Uint8Array>
  >;
  readonly anchors: string[];
};

export function makeMesh(seed: string): Mesh {
  const random = seededRandom(`mesh/${seed}`);
  return { keys: { CONTROL: random.bytes(32), GENERAL: random.bytes(32) }, anchors: [] };
}

export type MachineOptions = {
  /** Domains whose keys this machine holds (default: all of the mesh's). */
  readonly domains?: readonly DomainName[];
  /** Keys to use instead of the mesh's, e.g. to seal under a wrong key. */
  readonly keys?: Partial<Record<DomainName, Uint8Array>>;
  readonly clock?: TestClock;
  readonly maxSkewMs?: number;
  /** Bound on parked envelopes (the replica's default otherwise). */
  readonly maxParked?: number;
  /** Sign with `unsafeTestingFastSigner` instead of Ed25519 (property tests only). */
  readonly fastSignatures?: boolean;
  /** Which tables this machine holds (default: every table public, this machine trusted). */
  readonly privacy?: PrivacyPolicy;
  /** Wraps the machine's fresh in-memory store, e.g. in a `CrashingStore`. */
  readonly wrapStore?: (store: MemoryReplicaStore) => ReplicaStore;
  /** Wraps the machine's envelope crypto, e.g. to count what it opens. */
  readonly wrapEnvelopes?: (envelopes: EnvelopeCrypto) => EnvelopeCrypto;
};

export type Machine = {
  readonly name: string;
  readonly id: string;
  readonly signer: Signer;
  /** The store the replica uses (the wrapper when `wrapStore` was given). */
  readonly store: ReplicaStore;
  readonly replica: Replica;
  readonly keyring: DomainKeyring;
  readonly clock: TestClock;
  readonly random: TestRandom;
};

/** A machine of `mesh`, its signer derived from `seed`, with a fresh in-memory store. */
export function makeMachine(name: string, seed: string, mesh: Mesh, options: MachineOptions = {}): Machine {
  const signer = options.fastSignatures ? unsafeTestingFastSigner(seed) : unsafeTestingSigner(seed);
  const random = seededRandom(`machine/${seed}`);
  const clock = options.clock ?? testClock();
  const keyring = new DomainKeyring();
  for (const domain of options.domains ?? (['CONTROL', 'GENERAL'] as const)) {
    keyring.add(domain, 1, options.keys?.[domain] ?? mesh.keys[domain]!);
  }
  const memory = new MemoryReplicaStore();
  const store = options.wrapStore ? options.wrapStore(memory) : memory;
  const id = toHex(signer.publicKey);
  const replica = new Replica({
    store,
    signer,
    verifier: options.fastSignatures ? unsafeTestingFastVerifier : nobleVerifier,
    envelopes: options.wrapEnvelopes ? options.wrapEnvelopes(keyring.envelopes(random)) : keyring.envelopes(random),
    trust: { self: id, anchors: () => mesh.anchors },
    privacy: options.privacy ?? everyTablePublic,
    clock,
    ...(options.maxSkewMs === undefined ? {} : { maxSkewMs: options.maxSkewMs }),
    ...(options.maxParked === undefined ? {} : { maxParked: options.maxParked }),
  });
  return { name, id, signer, store, replica, keyring, clock, random };
}

/** Every materialised row of every table, keyed by table. */
export async function allRows(store: ReplicaStore): Promise<Record<string, unknown>> {
  const out: Record<string, unknown> = {};
  for (const table of Object.keys(TABLES)) {
    out[table] = (await store.rows(table)).sort((a, b) => (a.row < b.row ? -1 : a.row > b.row ? 1 : 0));
  }
  return out;
}

export type Snapshot = {
  readonly lastPos: number;
  readonly rows: unknown;
  readonly hlc: Hlc | undefined;
  readonly heads: unknown;
};

/** The chain heads of `signers`, in order (a store may answer each at once or later). */
async function headsOf(tx: ReplicaTx, signers: readonly string[]): Promise<(ChainHead | undefined)[]> {
  const heads: (ChainHead | undefined)[] = [];
  for (const signer of signers) heads.push(await tx.head(signer));
  return heads;
}

/** Everything an ingest may touch (heads of the given signers), for before/after comparison. */
export async function snapshot(machine: Machine, signers: readonly string[] = []): Promise<Snapshot> {
  const { hlc, heads } = await machine.store.transact(async (tx) => ({
    hlc: await tx.getHlc(),
    heads: await headsOf(tx, signers),
  }));
  return {
    lastPos: await machine.store.lastPos(),
    rows: await allRows(machine.store),
    hlc,
    heads,
  };
}

/**
 * Everything durable a store holds, in plain comparable form: the log (in
 * order), rows as canonical CBOR, parked envelopes, rejection records and
 * resurrections (without arrival times), clock, the heads of `signers` and the
 * watermarks of `peers`. Equal values mean equal stores.
 */
export async function durableState(
  store: ReplicaStore,
  { signers = [], peers = [] }: { signers?: readonly string[]; peers?: readonly string[] } = {},
): Promise<DurableState> {
  const { hlc, heads } = await store.transact(async (tx) => ({
    hlc: await tx.getHlc(),
    heads: await headsOf(tx, signers),
  }));
  const rows = await allRows(store);
  const byKey = <T>(items: T[], key: (t: T) => string): T[] => items.sort((a, b) => (key(a) < key(b) ? -1 : 1));
  return {
    log: (await store.entriesAfter(0, 1_000_000)).map((e) =>
      [e.pos, e.outerId, e.eventId ?? '-', e.revoked ? 'revoked' : 'kept'].join(' '),
    ),
    rows: toHex(encodeCbor(rows)),
    parked: byKey(await store.parked(1_000_000), (p) => p.outerId).map((p) => `${p.outerId} ${p.reason}`),
    rejections: byKey(await store.rejections(1_000_000), (r) => r.outerId).map((r) => `${r.outerId} ${r.reason}`),
    resurrections: (await store.resurrections(1_000_000)).map((r) => r.key).sort(),
    hlc,
    heads,
    watermarks: await Promise.all(peers.map((p) => store.watermark(p))),
  };
}

export type DurableState = {
  readonly log: string[];
  readonly rows: string;
  readonly parked: string[];
  readonly rejections: string[];
  readonly resurrections: string[];
  readonly hlc: Hlc | undefined;
  readonly heads: unknown[];
  readonly watermarks: number[];
};

// ---- in-memory network ---------------------------------------------------------------

type InFlight = { readonly from: string; readonly to: string; readonly bytes: Uint8Array };

export type Frame = { readonly from: string; readonly to: string; readonly message: PeerMessage };

export type NetworkFaults = {
  /** Probability that a frame is lost. */
  loss?: number;
  /** Probability that a delivered frame is delivered twice. */
  duplicate?: number;
  /** Deliver queued frames in a random order instead of FIFO. */
  reorder?: boolean;
  /** Frames between these pairs (either direction) are dropped. */
  partitions?: [string, string][];
  /** Drops exactly the frames this returns true for (decided before loss). */
  drop?: (frame: Frame) => boolean;
};

/**
 * Frames are queued on send and delivered only by `flush`, one at a time, each
 * through the peer-wire codec. Faults apply per frame, decided by the seeded random.
 */
export class TestNetwork {
  readonly engines = new Map<string, SyncEngine>();
  readonly #queue: InFlight[] = [];
  readonly #random: Pick<TestRandom, 'int' | 'chance'>;
  faults: NetworkFaults = {};
  /** Frames sent between machines that are not partitioned from each other. */
  sent = 0;
  delivered = 0;
  dropped = 0;
  /** Deliveries whose receiver crashed with an `InjectedFault`. */
  crashed = 0;

  constructor(seed: string) {
    this.#random = fastSeededRandom(`network/${seed}`);
  }

  channel(from: string): PeerChannel {
    return {
      send: (to: string, message: PeerMessage) => {
        if (!this.#partitioned(from, to)) this.sent++;
        this.#queue.push({ from, to, bytes: encodePeerMessage(message) });
        return Promise.resolve();
      },
    };
  }

  /** Adds a machine with a sync engine on this network; the test sets its peers. */
  join(machine: Machine, listener: SyncListener = {}): SyncEngine {
    const engine = new SyncEngine(machine.replica, machine.store, this.channel(machine.id), listener);
    this.engines.set(machine.id, engine);
    return engine;
  }

  get pending(): number {
    return this.#queue.length;
  }

  #partitioned(a: string, b: string): boolean {
    return (this.faults.partitions ?? []).some(([x, y]) => (x === a && y === b) || (x === b && y === a));
  }

  /** Delivers queued frames (and everything they cause) until the queue is empty. */
  async flush(maxFrames = 100_000): Promise<void> {
    if ((await this.deliver(maxFrames)) === maxFrames && this.#queue.length > 0) {
      throw new Error('test network: flush did not settle');
    }
  }

  /** Takes up to `frames` frames off the queue (lost ones count); returns how many were taken. */
  async deliver(frames: number): Promise<number> {
    let n = 0;
    for (; n < frames && this.#queue.length > 0; n++) {
      const index = this.faults.reorder ? this.#random.int(this.#queue.length) : 0;
      const [frame] = this.#queue.splice(index, 1);
      if (!frame) break;
      const message = decodePeerMessage(frame.bytes);
      if (!message.ok) throw new Error(`test network: ${message.error.reason}`);
      const decoded = { from: frame.from, to: frame.to, message: message.value };
      if (
        this.#partitioned(frame.from, frame.to) ||
        this.faults.drop?.(decoded) ||
        this.#random.chance(this.faults.loss ?? 0)
      ) {
        this.dropped++;
        continue;
      }
      const copies = this.#random.chance(this.faults.duplicate ?? 0) ? 2 : 1;
      for (let i = 0; i < copies; i++) await this.#deliver(decoded);
    }
    return n;
  }

  async #deliver(frame: Frame): Promise<void> {
    const engine = this.engines.get(frame.to);
    if (!engine) throw new Error(`test network: no machine ${frame.to.slice(0, 8)}`);
    const { message } = frame;
    if (!isDeliveryMessage(message)) throw new Error(`test network: ${message.t} is not delivery`);
    this.delivered++;
    try {
      await engine.receive(frame.from, message);
    } catch (e) {
      // A crash injected mid-apply: the receiver died with the frame, as a closed tab would.
      if (!(e instanceof InjectedFault)) throw e;
      this.crashed++;
    }
  }

  /** Every engine re-offers what its peers have not acknowledged (the batch cycle). */
  async resendAll(): Promise<void> {
    // Healing rounds re-offer everything at once; pacing is proven in sync-pacing.test.ts.
    for (const engine of this.engines.values()) await engine.resend(true);
  }

  async offerAll(): Promise<void> {
    for (const engine of this.engines.values()) await engine.offerAll();
  }

  /**
   * Every engine goes online and offers to its peers: every other machine on the
   * network, or its neighbours in `links` (pairs of machine ids, either direction).
   */
  async connectAll(links?: readonly (readonly [string, string])[]): Promise<void> {
    for (const [id, engine] of this.engines) {
      const peers = links
        ? links.flatMap(([x, y]) => (x === id ? [y] : y === id ? [x] : []))
        : [...this.engines.keys()].filter((peer) => peer !== id);
      engine.setPeers(peers);
      await engine.connected();
    }
  }

  /**
   * Batch cycles (resend, then deliver) until a cycle sends nothing across a
   * link that is up, i.e. every reachable peer has acknowledged everything; throws if that takes more than `maxRounds`.
   */
  async settle(maxRounds = 50): Promise<number> {
    await this.flush();
    for (let round = 1; round <= maxRounds; round++) {
      const before = this.sent;
      await this.resendAll();
      await this.flush();
      if (this.sent === before) return round;
    }
    throw new Error('test network: did not settle');
  }
}

// ---- crashing store ------------------------------------------------------------------

/** The error a `CrashingStore` throws; anything else escaping a test is a real failure. */
export class InjectedFault extends Error {
  constructor(write: string, n: number) {
    super(`injected fault at write ${n} (${write})`);
    this.name = 'InjectedFault';
  }
}

const TX_WRITES = [
  'setHlc',
  'setHead',
  'append',
  'setRevoked',
  'putRow',
  'deleteRow',
  'park',
  'unpark',
  'recordRejection',
  'withhold',
  'release',
  'addResurrection',
  'dropResurrectionsOf',
  'setWatermark',
] as const satisfies readonly (keyof ReplicaTx)[];

/**
 * A store whose next transaction throws at its `n`-th write, once (`crashAt`),
 * in the middle of the callback, after earlier writes of the same transaction
 * have landed in the inner store: exactly what a crash mid-apply looks like.
 * Every write of every transaction is counted, so a test can aim at any of them.
 */
export class CrashingStore implements ReplicaStore {
  readonly inner: ReplicaStore;
  #crashAt: number | undefined;
  /** Writes made by the last transaction (the crashed one included). */
  lastWrites = 0;
  crashes = 0;

  constructor(inner: ReplicaStore) {
    this.inner = inner;
  }

  /** Arms a crash at the `n`-th write (1-based) of the next transaction that gets that far. */
  crashAt(n: number | undefined): void {
    this.#crashAt = n;
  }

  get armed(): boolean {
    return this.#crashAt !== undefined;
  }

  transact<T>(fn: (tx: ReplicaTx) => Awaitable<T>): Promise<T> {
    return this.inner.transact((tx) => {
      this.lastWrites = 0;
      return fn(this.#wrap(tx));
    });
  }

  #wrap(tx: ReplicaTx): ReplicaTx {
    const writes: Partial<Record<keyof ReplicaTx, unknown>> = {};
    for (const name of TX_WRITES) {
      const write = tx[name] as (...args: unknown[]) => Awaitable<unknown>;
      writes[name] = (...args: unknown[]) => {
        this.lastWrites++;
        if (this.#crashAt === this.lastWrites) {
          this.#crashAt = undefined;
          this.crashes++;
          return Promise.reject(new InjectedFault(name, this.lastWrites));
        }
        return write.apply(tx, args);
      };
    }
    return { ...tx, ...writes } as ReplicaTx;
  }

  entriesAfter = (after: number, limit: number) => this.inner.entriesAfter(after, limit);
  sealedAfter = (after: number, through: number, limit: number, except?: string) =>
    this.inner.sealedAfter(after, through, limit, except);
  laneAfter = (lane: 'trusted' | 'local', after: number, through: number, limit: number) =>
    this.inner.laneAfter(lane, after, through, limit);
  lastPos = () => this.inner.lastPos();
  cursor = (peer: string) => this.inner.cursor(peer);
  advanceCursor = (peer: string, pos: number) => this.inner.advanceCursor(peer, pos);
  entriesByOuterId = (ids: readonly string[]) => this.inner.entriesByOuterId(ids);
  withheld = (limit: number) => this.inner.withheld(limit);
  watermark = (peer: string) => this.inner.watermark(peer);
  rows = (table: string) => this.inner.rows(table);
  row = (table: string, row: string) => this.inner.row(table, row);
  parked = (limit: number) => this.inner.parked(limit);
  parkedCount = () => this.inner.parkedCount();
  reasonCounts = () => this.inner.reasonCounts();
  refusals = (kind: RefusalKind, offset: number, limit: number) => this.inner.refusals(kind, offset, limit);
  rejections = (limit: number) => this.inner.rejections(limit);
  resurrections = (limit: number) => this.inner.resurrections(limit);
}
