/**
 * Benchmark `events`: the state plane's per-event cost in Node with WebCrypto
 * Ed25519, as browsers and workers run it.
 *
 *   write        N local writes on replica A: stamp, sign, seal, record
 *   ingest       replica B admits A's log in batches of 100: decode, open,
 *                verify, chain and trust checks, merge (MemoryReplicaStore)
 *   anchor       bare WebCrypto Ed25519 sign+verify pairs over payloads of the
 *                same size, in the same run
 *
 * figures.events_per_s is end-to-end (write + ingest) events per second;
 * ratios.events_vs_raw_sign_verify = events_per_s ÷ the anchor, so 1.0 would
 * mean the protocol costs nothing beyond one signature and one verification.
 */
import { everyTablePublic } from '../src/core/sync-manifest.js';
import { toHex } from '../src/core/bytes.js';
import { DomainKeyring } from '../src/core/domain-keys.js';
import type { Signer } from '../src/core/ports.js';
import { systemClock } from '../src/runtime/clock.js';
import { Replica } from '../src/core/replica.js';
import { generateSigningIdentity, webRandom, webSigner, webVerifier } from '../src/runtime/webcrypto.js';
import { MemoryReplicaStore } from '../src/storage/memory-store.js';
import type { BenchResult } from './run.ts';

const EVENTS = 2000;
const BATCH = 100;
const WARMUP = 200;
const ANCHOR_PAIRS = 2000;

type Pair = { writer: Replica; writerStore: MemoryReplicaStore; reader: Replica };

async function pair(): Promise<Pair> {
  const [a, b] = [webSigner(await generateSigningIdentity()), webSigner(await generateSigningIdentity())];
  const keyring = new DomainKeyring();
  keyring.add('CONTROL', 1, webRandom.bytes(32));
  keyring.add('GENERAL', 1, webRandom.bytes(32));
  const anchors = [toHex(a.publicKey)];
  const replica = (signer: Signer, store: MemoryReplicaStore) =>
    new Replica({
      store,
      signer,
      verifier: webVerifier(),
      envelopes: keyring.envelopes(webRandom),
      trust: { self: toHex(signer.publicKey), anchors: () => anchors },
      privacy: everyTablePublic,
      clock: systemClock,
    });
  const writerStore = new MemoryReplicaStore();
  return { writer: replica(a, writerStore), writerStore, reader: replica(b, new MemoryReplicaStore()) };
}

async function writeAll(p: Pair, n: number): Promise<void> {
  for (let i = 0; i < n; i++) {
    const result = await p.writer.write('device_profiles', `device-${i % 250}`, {
      name: `Device ${i}`,
      location: `field ${i % 17}`,
      notes: 'routine inspection, filters replaced',
      active: i % 2 === 0,
    });
    if (!result.ok) throw new Error(`bench events: write failed: ${result.error.type}`);
  }
}

async function ingestAll(p: Pair): Promise<number> {
  let after = 0;
  let bytes = 0;
  for (;;) {
    const entries = await p.writerStore.entriesAfter(after, BATCH);
    if (entries.length === 0) return bytes;
    const outcomes = await p.reader.ingest(
      'writer',
      entries.map((e) => e.sealed),
    );
    const refused = outcomes.find((o) => o.type !== 'Applied');
    if (refused) throw new Error(`bench events: ingest gave ${refused.type}`);
    for (const e of entries) bytes += e.sealed.length;
    after = entries[entries.length - 1]!.pos;
  }
}

/** Bare WebCrypto Ed25519: sign then verify, over a payload the size of an event body. */
async function rawSignVerifyPerSecond(payloadBytes: number): Promise<number> {
  const keys = await crypto.subtle.generateKey({ name: 'Ed25519' }, false, ['sign', 'verify']);
  const message = new Uint8Array(webRandom.bytes(payloadBytes));
  const once = async () => {
    const sig = await crypto.subtle.sign({ name: 'Ed25519' }, keys.privateKey, message);
    if (!(await crypto.subtle.verify({ name: 'Ed25519' }, keys.publicKey, sig, message))) {
      throw new Error('bench events: anchor signature did not verify');
    }
  };
  for (let i = 0; i < WARMUP; i++) await once();
  const start = performance.now();
  for (let i = 0; i < ANCHOR_PAIRS; i++) await once();
  return ANCHOR_PAIRS / ((performance.now() - start) / 1000);
}

export async function run(): Promise<BenchResult> {
  const warm = await pair();
  await writeAll(warm, WARMUP);
  await ingestAll(warm);

  const p = await pair();
  const t0 = performance.now();
  await writeAll(p, EVENTS);
  const t1 = performance.now();
  const sealedBytes = await ingestAll(p);
  const t2 = performance.now();
  if ((await p.reader.rows('device_profiles')).length !== 250) throw new Error('bench events: reader did not converge');

  const perSecond = (ms: number) => EVENTS / (ms / 1000);
  const events_per_s = perSecond(t2 - t0);
  const raw = await rawSignVerifyPerSecond(Math.round(sealedBytes / EVENTS));
  return {
    figures: {
      events_per_s,
      sign_per_s: perSecond(t1 - t0),
      verify_apply_per_s: perSecond(t2 - t1),
      events: EVENTS,
      batch: BATCH,
      sealed_bytes_per_event: sealedBytes / EVENTS,
    },
    anchors: { raw_ed25519_sign_verify_per_s: raw },
    ratios: { events_vs_raw_sign_verify: events_per_s / raw },
  };
}
