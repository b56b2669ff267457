/**
 * Benchmark `realtime`: push latency between two Node peers through the real
 * relay on 127.0.0.1 (startRelay, port 0, temp data dir), enforcing admission
 * as `sov relay` does: before any other session, peer A (an admin) pushes the
 * group's signed list naming A, B and every bare client below
 * (bench/lib/admission.ts), so every send is checked against it.
 *
 *   measured   peer A writes an event (Replica.write: HLC, WebCrypto Ed25519
 *              signature, sealed envelope, recorded) and its SyncEngine pushes
 *              it at once as a peer-wire `events` frame, sealed end to end, over
 *              a `ws` WebSocket speaking sov-relay/1 (bench/lib/node-peer.ts);
 *              the relay stores and forwards it; peer B opens the frame, opens
 *              and verifies the envelope and admits it (Replica.ingest returns).
 *              Latency = from before `write` on A to B's ingest outcome, one
 *              clock (one process). The next write waits for B's ack to reach A,
 *              so every sample is a fresh push, never a queued one.
 *   loaded     the same while LOAD_PEERS simulated peers are connected and each
 *              sends a frame of the same size to a random other one every
 *              LOAD_INTERVAL_MS and acknowledges what it receives.
 *   anchor     raw relay round trip: an opaque body of the same size as A's
 *              frame, sent X → Y and echoed Y → X by bare relay clients; also
 *              the one-way time X → Y, for comparison.
 *
 * ratios.p50_vs_raw_relay = p50_ms ÷ raw round-trip p50 (the cost of our
 * protocol over two bare relay hops); p50_vs_raw_relay_one_way likewise.
 */
import { ed25519 } from '@noble/curves/ed25519.js';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { toHex } from '../src/core/bytes.js';
import { DomainKeyring } from '../src/core/domain-keys.js';
import { topicOf } from '../src/core/identity.js';
import { encodePeerMessage } from '../src/core/peer-wire.js';
import type { IngestOutcome } from '../src/core/replica.js';
import { startRelay, type RelayHandle } from '../src/relay/server.js';
import { systemClock } from '../src/runtime/clock.js';
import { NodeRelayClient, type RelayFrame } from '../src/runtime/node-relay-client.js';
import { generateSigningIdentity, webRandom, webSigner } from '../src/runtime/webcrypto.js';
import { signAdmission } from './lib/admission.ts';
import { NodePeer, type Group } from './lib/node-peer.ts';
import type { BenchResult } from './run.ts';

const WARMUP = 50;
const SAMPLES = 500;
const LOAD_PEERS = 50;
const LOAD_INTERVAL_MS = 200;
const RAW_SAMPLES = 500;

const percentile = (sorted: readonly number[], p: number): number => sorted[Math.floor(p * (sorted.length - 1))]!;
const sortedOf = (values: readonly number[]): number[] => [...values].sort((a, b) => a - b);

async function makeGroup(): Promise<Group> {
  const keyring = new DomainKeyring();
  keyring.add('CONTROL', 1, webRandom.bytes(32));
  keyring.add('GENERAL', 1, webRandom.bytes(32));
  return { secret: webRandom.bytes(32), keyring, anchors: [], frameKeys: new Map() };
}

/** Resolves each outer id as soon as the peer reports it applied. */
class AppliedWaiter {
  readonly #waiting = new Map<string, (at: number) => void>();

  onApplied = (outcomes: readonly IngestOutcome[]): void => {
    const at = performance.now();
    for (const o of outcomes) if (o.type === 'Applied') this.#waiting.get(o.outerId)?.(at);
  };

  wait(outerId: string): Promise<number> {
    return new Promise((resolve) => this.#waiting.set(outerId, resolve));
  }
}

type Pair = { a: NodePeer; b: NodePeer; applied: AppliedWaiter };

/** A and B, both admins of the group; A pushes the list naming them and the bare clients, then both connect. */
async function pair(relay: RelayHandle, group: Group, bare: readonly Uint8Array[]): Promise<Pair> {
  const signers = await Promise.all([0, 1].map(async () => webSigner(await generateSigningIdentity())));
  group.anchors.push(...signers.map((s) => toHex(s.publicKey)));
  const applied = new AppliedWaiter();
  const peer = (i: number, listener = {}) =>
    NodePeer.create({ relayUrl: relay.wsUrl, group, signer: signers[i]!, clock: systemClock, listener });
  const a = await peer(0);
  const b = await peer(1, { onApplied: applied.onApplied });
  const record = await signAdmission({
    topic: topicOf(group.secret),
    signer: signers[0]!,
    admins: signers.map((s) => s.publicKey),
    endpoints: [a.endpoint, b.endpoint, ...bare.map((key) => ed25519.getPublicKey(key))],
    stewards: [a.endpoint, b.endpoint],
  });
  await a.admit(record);
  await a.connect();
  await b.connect();
  a.engine.setPeers([b.id]);
  b.engine.setPeers([a.id]);
  return { a, b, applied };
}

async function until(check: () => Promise<boolean>, what: string): Promise<void> {
  const deadline = performance.now() + 10_000;
  while (!(await check())) {
    if (performance.now() > deadline) throw new Error(`bench realtime: timed out waiting for ${what}`);
    await new Promise((resolve) => setImmediate(resolve));
  }
}

/** One write on A, pushed; ms until B applied it. Waits for B's ack to reach A before returning. */
async function pushOnce(p: Pair, i: number): Promise<number> {
  const start = performance.now();
  const written = await p.a.replica.write('device_profiles', `device-${i % 50}`, {
    name: `Device ${i}`,
    location: `field ${i % 17}`,
    notes: 'routine inspection, filters replaced',
    active: i % 2 === 0,
  });
  if (!written.ok) throw new Error(`bench realtime: write failed: ${written.error.type}`);
  const applied = p.applied.wait(written.value.outerId);
  await p.a.engine.offerAll();
  const at = await applied;
  const last = await p.a.store.lastPos();
  await until(async () => (await p.a.store.cursor(p.b.id)) >= last, 'the ack');
  return at - start;
}

async function latencies(p: Pair, n: number, offset: number): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) out.push(await pushOnce(p, offset + i));
  return out;
}

type Bare = { readonly endpoint: Uint8Array; readonly client: NodeRelayClient };

/** A bare relay client: a session of the endpoint key `key` (on the admission list), and a hook for frames. */
async function bareClient(
  relay: RelayHandle,
  topic: Uint8Array,
  key: Uint8Array,
  onFrame: (client: NodeRelayClient, frame: RelayFrame) => void,
): Promise<Bare> {
  const endpoint = ed25519.getPublicKey(key);
  const client = await NodeRelayClient.connect({
    url: relay.wsUrl,
    topic,
    endpoint,
    sign: (payload) => ed25519.sign(payload, key),
    onFrame: (frame, self) => onFrame(self, frame),
    onError: (code, message) => process.stderr.write(`bench realtime: relay error ${code}: ${message}\n`),
  });
  return { endpoint, client };
}

/** Raw relay timings for an opaque body of `size` bytes: round trip X → Y → X and one way X → Y. */
async function rawRelay(relay: RelayHandle, topic: Uint8Array, keys: readonly Uint8Array[], size: number) {
  let arrived: ((at: number) => void) | undefined;
  let echoed: ((at: number) => void) | undefined;
  const y = await bareClient(relay, topic, keys[0]!, (client, frame) => {
    arrived?.(performance.now());
    client.ack([frame.id]);
    client.send(frame.from, frame.body);
  });
  const x = await bareClient(relay, topic, keys[1]!, (client, frame) => {
    echoed?.(performance.now());
    client.ack([frame.id]);
  });
  const body = webRandom.bytes(size);
  const rtt: number[] = [];
  const oneWay: number[] = [];
  for (let i = 0; i < WARMUP + RAW_SAMPLES; i++) {
    const there = new Promise<number>((resolve) => (arrived = resolve));
    const back = new Promise<number>((resolve) => (echoed = resolve));
    const start = performance.now();
    x.client.send(y.endpoint, body);
    const [at, returned] = await Promise.all([there, back]);
    if (i >= WARMUP) {
      oneWay.push(at - start);
      rtt.push(returned - start);
    }
  }
  await Promise.all([x.client.close(), y.client.close()]);
  return { rtt: sortedOf(rtt), oneWay: sortedOf(oneWay) };
}

/** LOAD_PEERS bare clients exchanging `size`-byte frames at random; returns a stop function. */
async function startLoad(
  relay: RelayHandle,
  topic: Uint8Array,
  keys: readonly Uint8Array[],
  size: number,
): Promise<() => Promise<number>> {
  const peers: Bare[] = [];
  for (const key of keys) peers.push(await bareClient(relay, topic, key, (client, frame) => client.ack([frame.id])));
  let sent = 0;
  const timers = peers.map((peer, i) =>
    setInterval(() => {
      const other = peers[(i + 1 + Math.floor(Math.random() * (LOAD_PEERS - 1))) % LOAD_PEERS]!;
      peer.client.send(other.endpoint, webRandom.bytes(size));
      sent++;
    }, LOAD_INTERVAL_MS),
  );
  return async () => {
    timers.forEach(clearInterval);
    await Promise.all(peers.map((p) => p.client.close()));
    return sent;
  };
}

/** Size of the sealed frame body A pushes for one event (peer-wire `events`, one envelope). */
async function frameSize(p: Pair): Promise<number> {
  const entry = (await p.a.store.entriesAfter(0, 1))[0]!;
  return 28 + encodePeerMessage({ t: 'events', after: entry.pos - 1, upto: entry.pos, events: [entry.sealed] }).length;
}

export async function run(): Promise<BenchResult> {
  const dataDir = await mkdtemp(join(tmpdir(), 'sov-bench-realtime-'));
  // Back-to-back samples exceed the default per-connection rate limit (200 messages/s);
  // this measures latency, not the limiter.
  const rateLimit = { perSecond: 100_000, burst: 100_000 };
  const relay = await startRelay({
    port: 0,
    dataDir,
    log: () => undefined,
    heartbeatMs: 0,
    rateLimit,
  });
  try {
    const group = await makeGroup();
    const topic = topicOf(group.secret);
    const rawKeys = [0, 1].map(() => ed25519.utils.randomSecretKey());
    const loadKeys = Array.from({ length: LOAD_PEERS }, () => ed25519.utils.randomSecretKey());
    const p = await pair(relay, group, [...rawKeys, ...loadKeys]);
    await latencies(p, WARMUP, 0);
    const quiet = sortedOf(await latencies(p, SAMPLES, WARMUP));
    const size = await frameSize(p);
    const raw = await rawRelay(relay, topic, rawKeys, size);
    const stopLoad = await startLoad(relay, topic, loadKeys, size);
    const loadStart = performance.now();
    const loaded = sortedOf(await latencies(p, SAMPLES, WARMUP + SAMPLES));
    const loadSeconds = (performance.now() - loadStart) / 1000;
    const loadFrames = await stopLoad();
    await p.a.disconnect();
    await p.b.disconnect();
    const p50 = percentile(quiet, 0.5);
    const rawRtt = percentile(raw.rtt, 0.5);
    const rawOneWay = percentile(raw.oneWay, 0.5);
    return {
      figures: {
        p50_ms: p50,
        p99_ms: percentile(quiet, 0.99),
        p50_ms_50_peers: percentile(loaded, 0.5),
        p99_ms_50_peers: percentile(loaded, 0.99),
        samples: SAMPLES,
        frame_bytes: size,
        load_peers: LOAD_PEERS,
        load_frames_per_s: loadFrames / loadSeconds,
      },
      anchors: {
        raw_relay_rtt_p50_ms: rawRtt,
        raw_relay_rtt_p99_ms: percentile(raw.rtt, 0.99),
        raw_relay_one_way_p50_ms: rawOneWay,
      },
      ratios: { p50_vs_raw_relay: p50 / rawRtt, p50_vs_raw_relay_one_way: p50 / rawOneWay },
    };
  } finally {
    await relay.close();
    await rm(dataDir, { recursive: true, force: true });
  }
}
