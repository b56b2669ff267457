/**
 * Benchmark `events`: the state plane's per-event cost in Node with WebCrypto
 * Ed25519, as browsers and workers run it.
 *
 *   write        N local writes on replica A: stamp, sign, seal, record
 *   ingest       replica B admits A's log in batches of 100: decode, open,
 *                verify, chain and trust checks, merge (MemoryReplicaStore).
 *                Signatures are checked by chain segment (core/chain-verify.ts):
 *                one Ed25519 verification per linked run of a signer in a
 *                batch, so about one per batch here, not one per event.
 *   anchor       bare WebCrypto Ed25519 making the very calls the protocol made,
 *                in the same run: every signature A's writes made (A's key, the
 *                same signed payloads, one after another as the writes do), then
 *                every verification B's ingest made (the same key, payloads and
 *                signatures). Both call lists are recorded by wrapping A's
 *                signer and B's verifier during the timed run.
 *
 * figures.events_per_s is end-to-end (write + ingest) events per second;
 * figures.signatures_per_event and verifications_per_event count the calls;
 * anchors.raw_ed25519_events_per_s = N ÷ the anchor's time, and
 * ratios.events_vs_raw_ed25519 = events_per_s ÷ that, so 1.0 would mean the
 * protocol costs nothing beyond its Ed25519 calls.
 */
import { everyTablePublic } from '../src/core/sync-manifest.js';
import { toHex } from '../src/core/bytes.js';
import { DomainKeyring } from '../src/core/domain-keys.js';
import type { Signer, Verifier } from '../src/core/ports.js';
import { systemClock } from '../src/runtime/clock.js';
import { Replica } from '../src/core/replica.js';
import {
  generateSigningIdentity,
  webRandom,
  webSigner,
  webVerifier,
  type SigningIdentity,
} from '../src/runtime/webcrypto.js';
import { MemoryReplicaStore } from '../src/storage/memory-store.js';
import type { BenchResult } from './run.ts';

const EVENTS = 2000;
const BATCH = 100;
const WARMUP = 200;

/** The Ed25519 calls one run made: payloads A signed, and (payload, signature) pairs B verified. */
type Calls = { readonly signed: Uint8Array[]; readonly verified: { message: Uint8Array; sig: Uint8Array }[] };

type Pair = {
  writer: Replica;
  writerStore: MemoryReplicaStore;
  reader: Replica;
  identity: SigningIdentity;
  calls: Calls;
};

function recordingSigner(signer: Signer, calls: Calls): Signer {
  return {
    publicKey: signer.publicKey,
    sign: (message) => {
      calls.signed.push(message);
      return signer.sign(message);
    },
  };
}

function recordingVerifier(verifier: Verifier, calls: Calls): Verifier {
  return {
    verify: (publicKey, message, sig) => {
      calls.verified.push({ message, sig });
      return verifier.verify(publicKey, message, sig);
    },
  };
}

async function pair(): Promise<Pair> {
  const identity = await generateSigningIdentity();
  const calls: Calls = { signed: [], verified: [] };
  const a = recordingSigner(webSigner(identity), calls);
  const b = webSigner(await generateSigningIdentity());
  const keyring = new DomainKeyring();
  keyring.add('CONTROL', 1, webRandom.bytes(32));
  keyring.add('GENERAL', 1, webRandom.bytes(32));
  const anchors = [toHex(a.publicKey)];
  const replica = (signer: Signer, store: MemoryReplicaStore) =>
    new Replica({
      store,
      signer,
      verifier: recordingVerifier(webVerifier(), calls),
      envelopes: keyring.envelopes(webRandom),
      trust: { self: toHex(signer.publicKey), anchors: () => anchors },
      privacy: everyTablePublic,
      clock: systemClock,
    });
  const writerStore = new MemoryReplicaStore();
  return {
    writer: replica(a, writerStore),
    writerStore,
    reader: replica(b, new MemoryReplicaStore()),
    identity,
    calls,
  };
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

/** Seconds bare WebCrypto Ed25519 takes to make `calls` again: every signature, then every verification. */
async function rawSeconds(identity: SigningIdentity, calls: Calls): Promise<{ sign: number; verify: number }> {
  const { privateKey } = identity.keys;
  const publicKey = await crypto.subtle.importKey(
    'raw',
    new Uint8Array(identity.publicKey),
    { name: 'Ed25519' },
    false,
    ['verify'],
  );
  const signed = calls.signed.map((m) => new Uint8Array(m));
  const verified = calls.verified.map((v) => ({ message: new Uint8Array(v.message), sig: new Uint8Array(v.sig) }));
  const verify = async (v: (typeof verified)[number]) => {
    if (!(await crypto.subtle.verify({ name: 'Ed25519' }, publicKey, v.sig, v.message))) {
      throw new Error('bench events: anchor signature did not verify');
    }
  };
  for (const m of signed.slice(0, WARMUP)) await crypto.subtle.sign({ name: 'Ed25519' }, privateKey, m);
  for (const v of verified.slice(0, WARMUP)) await verify(v);
  const start = performance.now();
  for (const m of signed) await crypto.subtle.sign({ name: 'Ed25519' }, privateKey, m);
  const mid = performance.now();
  for (const v of verified) await verify(v);
  return { sign: (mid - start) / 1000, verify: (performance.now() - mid) / 1000 };
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
  const { signed, verified } = p.calls;
  const raw = await rawSeconds(p.identity, p.calls);
  const rawEventsPerSecond = EVENTS / (raw.sign + raw.verify);
  return {
    figures: {
      events_per_s,
      sign_per_s: perSecond(t1 - t0),
      verify_apply_per_s: perSecond(t2 - t1),
      events: EVENTS,
      batch: BATCH,
      sealed_bytes_per_event: sealedBytes / EVENTS,
      signatures_per_event: signed.length / EVENTS,
      verifications_per_event: verified.length / EVENTS,
    },
    anchors: {
      raw_ed25519_events_per_s: rawEventsPerSecond,
      raw_ed25519_sign_per_s: signed.length / raw.sign,
      raw_ed25519_verify_per_s: verified.length / raw.verify,
    },
    ratios: { events_vs_raw_ed25519: events_per_s / rawEventsPerSecond },
  };
}
