/**
 * Benchmark `catchup`: a peer that was offline while 100,000 events were
 * written catches up through the real relay on 127.0.0.1, verifying everything.
 *
 *   setup    relay (startRelay, port 0, temp data dir) on its own thread — it is
 *            another machine in production, so its SQLite and WebSocket work
 *            is not billed to the reader — enforcing admission as `sov relay`
 *            does: the first writer (an admin) pushes the group's signed list
 *            naming every reader and writer (bench/lib/admission.ts) before any
 *            other session opens; SIGNERS writers each write their share through
 *            Replica.write (WebCrypto Ed25519, sealed) and offer their whole log
 *            to the reader as peer-wire `events` frames of MAX_EVENTS_PER_FRAME
 *            envelopes — what the batch cycle sends — which the relay stores in
 *            the reader's mailbox.
 *   timed    the reader connects; the relay pumps the mailbox; every frame is
 *            opened (frame.ts), decoded, and ingested by the SyncEngine: every
 *            envelope decrypted and decoded, signatures checked by chain segment
 *            (core/chain-verify.ts: one Ed25519 check per linked run of a signer
 *            in a batch), admitted and acknowledged. Done when all are applied.
 *   modes    `opener: in-thread` (everything on the main thread), and a pool of
 *            worker threads opening envelopes (runtime/node-open-pool.ts) while
 *            the main thread admits; figures are the faster, both are reported.
 *   anchor   `naive`: bare WebCrypto Ed25519 verification of every one of the
 *            EVENTS signatures the writers made (the same keys, signed payloads
 *            and signatures the reader receives), measured in the same run, at
 *            the faster of sequential and 64-in-flight issue — the time checking
 *            every signature would take before doing anything else.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fromHex, toHex } from '../src/core/bytes.js';
import { DomainKeyring } from '../src/core/domain-keys.js';
import { topicOf } from '../src/core/identity.js';
import { MAX_EVENTS_PER_FRAME } from '../src/core/peer-wire.js';
import { systemClock } from '../src/runtime/clock.js';
import { NodeOpenPool } from '../src/runtime/node-open-pool.js';
import { generateSigningIdentity, webRandom, webSigner } from '../src/runtime/webcrypto.js';
import { signAdmission } from './lib/admission.ts';
import { NodePeer, type Group } from './lib/node-peer.ts';
import { startRelayThread, type RelayThread } from './lib/relay-thread.ts';
import type { BenchResult } from './run.ts';
import type { EnvelopeOpener } from '../src/core/open.js';
import type { Signer } from '../src/core/ports.js';
import type { ReplicaStore } from '../src/core/store.js';

export const EVENTS = 100_000;
const SIGNERS = 2;
const POOL_THREADS = 1;

async function makeGroup(): Promise<Group> {
  const keyring = new DomainKeyring();
  keyring.add('CONTROL', 1, webRandom.bytes(32));
  keyring.add('GENERAL', 1, webRandom.bytes(32));
  return { secret: webRandom.bytes(32), keyring, anchors: [], frameKeys: new Map() };
}

/** One signature a writer made: what the reader will verify. */
type Signature = { readonly publicKey: Uint8Array; readonly message: Uint8Array; readonly sig: Uint8Array };

/** A signer that keeps every signature it makes (setup only: the writes are not timed). */
function recording(signer: Signer, made: Signature[]): Signer {
  return {
    publicKey: signer.publicKey,
    async sign(message) {
      const sig = await signer.sign(message);
      made.push({ publicKey: signer.publicKey, message, sig });
      return sig;
    },
  };
}

type Writer = { readonly peer: NodePeer; readonly signer: Signer };

/** A writer whose events' signatures are kept in `made`; the group trusts it as an admin. */
async function writer(relay: RelayThread, group: Group, made: Signature[]): Promise<Writer> {
  const signer = webSigner(await generateSigningIdentity());
  group.anchors.push(toHex(signer.publicKey));
  const peer = await NodePeer.create({
    relayUrl: relay.wsUrl,
    group,
    signer: recording(signer, made),
    clock: systemClock,
  });
  return { peer, signer };
}

/** The first writer, an admin, pushes the list naming every peer (stewards: the writers, the admins). */
async function admitAll(group: Group, writers: readonly Writer[], readers: readonly NodePeer[]): Promise<void> {
  const record = await signAdmission({
    topic: topicOf(group.secret),
    signer: writers[0]!.signer,
    admins: group.anchors.map((a) => fromHex(a)!),
    endpoints: [...writers.map((w) => w.peer), ...readers].map((p) => p.endpoint),
    stewards: writers.map((w) => w.peer.endpoint),
  });
  await writers[0]!.peer.admit(record);
}

async function writeShare(peer: NodePeer, count: number, offset: number): Promise<void> {
  for (let i = 0; i < count; i++) {
    const n = offset + i;
    const result = await peer.replica.write('device_profiles', `device-${n % 1000}`, {
      name: `Device ${n}`,
      location: `field ${n % 17}`,
      notes: 'routine inspection, filters replaced',
      active: n % 2 === 0,
    });
    if (!result.ok) throw new Error(`bench catchup: write failed: ${result.error.type}`);
  }
}

/** Offers the writer's whole log to `to` in frames, as the batch cycle would; returns the frame count. */
async function offerAll(peer: NodePeer, to: Uint8Array): Promise<number> {
  let frames = 0;
  for (let after = 0; ; frames++) {
    const entries = await peer.store.entriesAfter(after, MAX_EVENTS_PER_FRAME);
    if (entries.length === 0) return frames;
    const upto = entries[entries.length - 1]!.pos;
    void peer.sendMessage(to, { t: 'events', after, upto, events: entries.map((e) => e.sealed) });
    after = upto;
  }
}

async function pendingAt(relay: RelayThread, group: Group, endpoint: Uint8Array): Promise<number> {
  const url = `${relay.url}/api/presence?topic=${toHex(topicOf(group.secret))}&endpoint=${toHex(endpoint)}`;
  const body = (await (await fetch(url)).json()) as { pending: number };
  return body.pending;
}

async function until(check: () => Promise<boolean>, what: string, timeoutMs = 120_000): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!(await check())) {
    if (performance.now() > deadline) throw new Error(`bench catchup: timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** Fills the relay mailboxes of the readers with EVENTS events from the writers; returns frames per reader. */
async function fillMailboxes(
  relay: RelayThread,
  group: Group,
  writers: readonly NodePeer[],
  readers: readonly NodePeer[],
): Promise<number> {
  await Promise.all(writers.map((w, i) => writeShare(w, EVENTS / SIGNERS, i * (EVENTS / SIGNERS))));
  let frames = 0;
  for (const w of writers) {
    await w.connect();
    for (const reader of readers) frames += await offerAll(w, reader.endpoint);
  }
  frames /= readers.length;
  for (const reader of readers) {
    await until(async () => (await pendingAt(relay, group, reader.endpoint)) >= frames, 'the mailbox to fill');
  }
  await Promise.all(writers.map((w) => w.disconnect()));
  return frames;
}

/** Connects the reader (its first session since the writes) and times until every event is applied. */
async function catchUp(reader: NodePeer, applied: { count: number }): Promise<number> {
  const start = performance.now();
  await reader.connect();
  await until(async () => applied.count >= EVENTS, 'the reader to catch up');
  const ms = performance.now() - start;
  if ((await reader.store.lastPos()) !== EVENTS) throw new Error('bench catchup: reader log is incomplete');
  await reader.disconnect();
  return ms;
}

type Reader = { readonly peer: NodePeer; readonly applied: { count: number } };

async function reader(
  relay: RelayThread,
  group: Group,
  signer: Signer,
  opener: EnvelopeOpener | undefined,
  store: ReplicaStore | undefined,
): Promise<Reader> {
  const applied = { count: 0 };
  const peer = await NodePeer.create({
    relayUrl: relay.wsUrl,
    group,
    signer,
    clock: systemClock,
    ...(opener ? { opener } : {}),
    ...(store ? { store } : {}),
    listener: { onApplied: (outcomes) => (applied.count += outcomes.filter((o) => o.type === 'Applied').length) },
  });
  return { peer, applied };
}

type Timings = {
  inThreadMs: number;
  pooledMs: number;
  frames: number;
  signatures: Signature[];
  /** The readers' stores, as they are after catching up. */
  stores: ReplicaStore[];
};

/**
 * One relay and one set of writes; an in-thread reader and a pooled reader catch up one
 * after the other, each into the store `readerStore` makes (memory when not given).
 */
export async function measure(readerStore?: (index: number) => ReplicaStore): Promise<Timings> {
  const dataDir = await mkdtemp(join(tmpdir(), 'sov-bench-catchup-'));
  const relay = await startRelayThread({ dataDir, mailboxLimits: { maxFrames: 10_000, maxBytes: 512 * 1024 * 1024 } });
  const group = await makeGroup();
  const pool = await NodeOpenPool.start(POOL_THREADS, group.keyring.list());
  try {
    const signers = await Promise.all([0, 1].map(async () => webSigner(await generateSigningIdentity())));
    const readers = [
      await reader(relay, group, signers[0]!, undefined, readerStore?.(0)),
      await reader(relay, group, signers[1]!, pool, readerStore?.(1)),
    ];
    const signatures: Signature[] = [];
    const writers = await Promise.all(Array.from({ length: SIGNERS }, () => writer(relay, group, signatures)));
    const readerPeers = readers.map((r) => r.peer);
    await admitAll(group, writers, readerPeers);
    const frames = await fillMailboxes(
      relay,
      group,
      writers.map((w) => w.peer),
      readerPeers,
    );
    if (signatures.length !== EVENTS)
      throw new Error(`bench catchup: ${signatures.length} signatures for ${EVENTS} events`);
    const inThreadMs = await catchUp(readers[0]!.peer, readers[0]!.applied);
    const pooledMs = await catchUp(readers[1]!.peer, readers[1]!.applied);
    return { inThreadMs, pooledMs, frames, signatures, stores: readers.map((r) => r.peer.store) };
  } finally {
    await pool.close();
    await relay.close();
    await rm(dataDir, { recursive: true, force: true });
  }
}

/** Seconds bare WebCrypto Ed25519 takes to verify every signature, sequentially and with 64 in flight. */
async function verifyAllSeconds(signatures: readonly Signature[]): Promise<{ sequential: number; concurrent: number }> {
  const keys = new Map<string, CryptoKey>();
  for (const { publicKey } of signatures) {
    const id = toHex(publicKey);
    if (keys.has(id)) continue;
    keys.set(
      id,
      await crypto.subtle.importKey('raw', new Uint8Array(publicKey), { name: 'Ed25519' }, false, ['verify']),
    );
  }
  const checks = signatures.map((s) => ({
    key: keys.get(toHex(s.publicKey))!,
    message: new Uint8Array(s.message),
    sig: new Uint8Array(s.sig),
  }));
  const once = async (c: (typeof checks)[number]) => {
    if (!(await crypto.subtle.verify({ name: 'Ed25519' }, c.key, c.sig, c.message))) {
      throw new Error('bench catchup: a signature of a writer did not verify');
    }
  };
  let start = performance.now();
  for (const c of checks) await once(c);
  const sequential = (performance.now() - start) / 1000;
  start = performance.now();
  for (let i = 0; i < checks.length; i += 64) await Promise.all(checks.slice(i, i + 64).map(once));
  const concurrent = (performance.now() - start) / 1000;
  return { sequential, concurrent };
}

export async function run(): Promise<BenchResult> {
  const { inThreadMs, pooledMs, frames, signatures } = await measure();
  const best = Math.min(inThreadMs, pooledMs);
  const raw = await verifyAllSeconds(signatures);
  const naiveMs = Math.min(raw.sequential, raw.concurrent) * 1000;
  return {
    figures: {
      seconds_100k_events: best / 1000,
      events_per_s: EVENTS / (best / 1000),
      seconds_in_thread: inThreadMs / 1000,
      seconds_worker_pool: pooledMs / 1000,
      pool_threads: POOL_THREADS,
      events: EVENTS,
      signers: SIGNERS,
      frames,
    },
    anchors: {
      raw_ed25519_verify_per_s: EVENTS / (naiveMs / 1000),
      raw_ed25519_verify_sequential_per_s: EVENTS / raw.sequential,
      naive_verify_all_seconds: naiveMs / 1000,
    },
    ratios: { catchup_time_vs_naive_verify_all: best / naiveMs },
  };
}
