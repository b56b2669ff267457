/**
 * Deterministic test dependencies (STYLE §3): seeded randomness, a clock the
 * test moves by hand, Ed25519 keys derived from a seed, and machines wired from
 * them, so ciphertexts, signatures and HLC sequences are the same on every run.
 *
 * Also an in-memory network of `PeerChannel`s that queues whole frames and lets
 * a test lose, duplicate or reorder them before delivering.
 */
import { ed25519 } from '@noble/curves/ed25519.js';
import { blake3 } from '@noble/hashes/blake3.js';
import { concat, toHex, utf8 } from '../../src/core/bytes.js';
import { DomainKeyring } from '../../src/core/domain-keys.js';
import type { Hlc } from '../../src/core/hlc.js';
import { decodePeerMessage, encodePeerMessage, type PeerMessage } from '../../src/core/peer-wire.js';
import type { Clock, Random, Signer, Verifier } from '../../src/core/ports.js';
import { Replica } from '../../src/core/replica.js';
import type { DomainName } from '../../src/core/schema.js';
import { SyncEngine, type PeerChannel } from '../../src/core/sync.js';
import { keyringTrust } from '../../src/core/trust.js';
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
  readonly keys: Readonly<Record<DomainName, Uint8Array>>;
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
};

export type Machine = {
  readonly name: string;
  readonly id: string;
  readonly signer: ReturnType<typeof unsafeTestingSigner>;
  readonly store: MemoryReplicaStore;
  readonly replica: Replica;
  readonly keyring: DomainKeyring;
  readonly clock: TestClock;
  readonly random: TestRandom;
};

/** A machine of `mesh`, its signer derived from `seed`, with a fresh in-memory store. */
export function makeMachine(name: string, seed: string, mesh: Mesh, options: MachineOptions = {}): Machine {
  const signer = unsafeTestingSigner(seed);
  const random = seededRandom(`machine/${seed}`);
  const clock = options.clock ?? testClock();
  const keyring = new DomainKeyring();
  for (const domain of options.domains ?? (['CONTROL', 'GENERAL'] as const)) {
    keyring.add(domain, 1, options.keys?.[domain] ?? mesh.keys[domain]);
  }
  const store = new MemoryReplicaStore();
  const id = toHex(signer.publicKey);
  const replica = new Replica({
    store,
    signer,
    verifier: nobleVerifier,
    envelopes: keyring.envelopes(random),
    trust: keyringTrust(id, () => mesh.anchors),
    clock,
    ...(options.maxSkewMs === undefined ? {} : { maxSkewMs: options.maxSkewMs }),
  });
  return { name, id, signer, store, replica, keyring, clock, random };
}

export type Snapshot = {
  readonly lastPos: number;
  readonly rows: unknown;
  readonly hlc: Hlc | undefined;
  readonly heads: unknown;
};

/** Everything an ingest may touch (heads of the given signers), for before/after comparison. */
export async function snapshot(machine: Machine, signers: readonly string[] = []): Promise<Snapshot> {
  const { hlc, heads } = await machine.store.transact(async (tx) => ({
    hlc: await tx.getHlc(),
    heads: await Promise.all(signers.map((s) => tx.head(s))),
  }));
  return {
    lastPos: await machine.store.lastPos(),
    rows: {
      keyring: await machine.store.rows('keyring'),
      device_profiles: await machine.store.rows('device_profiles'),
    },
    hlc,
    heads,
  };
}

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
  readonly #random: TestRandom;
  faults: NetworkFaults = {};
  /** Frames sent between machines that are not partitioned from each other. */
  sent = 0;
  delivered = 0;
  dropped = 0;

  constructor(seed: string) {
    this.#random = seededRandom(`network/${seed}`);
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
  join(machine: Machine): SyncEngine {
    const engine = new SyncEngine(machine.replica, machine.store, this.channel(machine.id));
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
    for (let n = 0; this.#queue.length > 0; n++) {
      if (n >= maxFrames) throw new Error('test network: flush did not settle');
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
  }

  async #deliver(frame: Frame): Promise<void> {
    const engine = this.engines.get(frame.to);
    if (!engine) throw new Error(`test network: no machine ${frame.to.slice(0, 8)}`);
    const { message } = frame;
    if (message.t !== 'events' && message.t !== 'ack') throw new Error(`test network: ${message.t} is not delivery`);
    this.delivered++;
    await engine.receive(frame.from, message);
  }

  /** Every engine re-offers what its peers have not acknowledged (the batch cycle). */
  async resendAll(): Promise<void> {
    for (const engine of this.engines.values()) await engine.resend();
  }

  async offerAll(): Promise<void> {
    for (const engine of this.engines.values()) await engine.offerAll();
  }

  /** Every engine goes online and offers to every other machine on the network. */
  async connectAll(): Promise<void> {
    for (const [id, engine] of this.engines) {
      engine.setPeers([...this.engines.keys()].filter((peer) => peer !== id));
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
