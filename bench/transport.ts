/**
 * Benchmark `transport`: the secure channel between machines.
 *
 *   pairing      the whole cryptographic pairing exchange between two crypto
 *                services (runtime/crypto-service.ts over fake IndexedDB, as the
 *                crypto worker runs it): invitation, join request with its
 *                commitment, challenge, reveal, both pairing codes, confirmation,
 *                admission with the domain keys sealed to the joiner, and the
 *                joiner installing them — everything but the humans and the
 *                network. `figures.pairing_ms` is the median of PAIRINGS runs.
 *   frames       FrameChannel seal + open (runtime/frame-channel.ts: HPKE-derived
 *                key, AES-256-GCM, header checks, replay guard) over FRAME_BYTES
 *                messages; `figures.frame_mb_per_s` counts message bytes once.
 *   anchor       plain WebCrypto AES-256-GCM encrypt + decrypt of the same
 *                bytes with one imported key, in the same run.
 *   ratio        `seal_throughput_vs_aesgcm` = frames ÷ anchor (aim ≥ 0.5).
 */
import 'fake-indexeddb/auto';
import { topicOf } from '../src/core/identity.js';
import { systemClock } from '../src/runtime/clock.js';
import { CryptoService } from '../src/runtime/crypto-service.js';
import { FrameChannel, generateFrameKey } from '../src/runtime/frame-channel.js';
import { webRandom } from '../src/runtime/webcrypto.js';
import { KeyDatabase } from '../src/storage/key-store.js';
import { foundDomains } from '../test/helpers/mls-machine.ts';
import type { BenchResult } from './run.ts';

const PAIRINGS = 15;
const FRAME_BYTES = 256 * 1024;
const FRAMES = 200;
const RELAY_KEY = '00'.repeat(32);

let databases = 0;

async function service(): Promise<CryptoService> {
  const s = new CryptoService(new KeyDatabase(`bench-transport-${++databases}`), systemClock);
  await s.init();
  return s;
}

const hex = (h: string): Uint8Array => new Uint8Array(Buffer.from(h, 'hex'));

/** One pairing exchange, from invitation to the accepted join; returns milliseconds. */
async function pairOnce(): Promise<number> {
  const inviter = await service();
  const created = await inviter.createMesh();
  if (!created.ok) throw new Error('bench transport: createMesh failed');
  await foundDomains(inviter, `bench-transport-${databases}`);
  const joiner = await service();
  const start = performance.now();
  const ticket = await inviter.createInvitation('ws://127.0.0.1:1/ws', RELAY_KEY);
  if (!(await joiner.beginJoin(ticket)).ok) throw new Error('bench transport: beginJoin failed');
  const [i, j] = [inviter.view(), joiner.view()];
  const request = await joiner.joinRequest('bench');
  if (!request.ok) throw new Error('bench transport: joinRequest failed');
  const opened = await inviter.openMessage(j.endpoint, request.value.body, undefined);
  if (!opened.ok || opened.value.message.t !== 'join-request') throw new Error('bench transport: no request');
  const req = opened.value.message;
  const inviterNonce = webRandom.bytes(32);
  const challenge = await inviter.sealMessage(
    { endpoint: j.endpoint, frame: j.frame },
    { t: 'join-challenge', inv: req.inv, signer: hex(i.signer), nonce: inviterNonce },
  );
  const challenged = await joiner.openMessage(i.endpoint, challenge, undefined);
  if (!challenged.ok || challenged.value.message.t !== 'join-challenge') throw new Error('bench transport: challenge');
  const revealed = await joiner.joinReveal(challenged.value.message);
  if (!revealed.ok) throw new Error('bench transport: reveal failed');
  const reveal = await inviter.openMessage(j.endpoint, revealed.value.body, undefined);
  if (!reveal.ok || reveal.value.message.t !== 'join-reveal') throw new Error('bench transport: no reveal');
  const code = inviter.pairingCode({
    inv: req.inv,
    joiner: { signer: req.signer, endpoint: req.endpoint, frame: hex(j.frame) },
    commit: req.commit,
    inviterNonce,
    joinerNonce: reveal.value.message.nonce,
  });
  if (code !== revealed.value.sas) throw new Error('bench transport: pairing codes differ');
  const confirm = await joiner.joinAnswer(true);
  if (!confirm.ok || !(await inviter.openMessage(j.endpoint, confirm.value, undefined)).ok) {
    throw new Error('bench transport: confirm failed');
  }
  // The MLS commits that add the joiner to its domains are measured by benchmark `mls`.
  const accept = await inviter.admitJoin({ inv: req.inv, endpoint: hex(j.endpoint), frame: j.frame }, [], [], []);
  if (!accept.ok) throw new Error('bench transport: admit failed');
  const joined = await joiner.openMessage(i.endpoint, accept.value, undefined);
  if (!joined.ok || joined.value.message.t !== 'join-accept') throw new Error('bench transport: accept refused');
  return performance.now() - start;
}

const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

/** Seal + open of FRAMES messages through two FrameChannels; MB/s of message bytes. */
async function frameThroughput(message: Uint8Array): Promise<number> {
  const topic = topicOf(webRandom.bytes(32));
  const [ka, kb] = [await generateFrameKey(), await generateFrameKey()];
  const [ea, eb] = [webRandom.bytes(32), webRandom.bytes(32)];
  const a = new FrameChannel({ endpoint: ea, frameKey: ka, topic, clock: systemClock, random: webRandom });
  const b = new FrameChannel({ endpoint: eb, frameKey: kb, topic, clock: systemClock, random: webRandom });
  const to = { endpoint: eb, kid: kb.publicKey };
  const binding = () => ({ kid: ka.publicKey });
  for (let i = 0; i < 5; i++) await b.open(await a.seal(to, message), ea, binding); // warm-up, key derivation
  const start = performance.now();
  for (let i = 0; i < FRAMES; i++) {
    const opened = await b.open(await a.seal(to, message), ea, binding);
    if (!opened.ok) throw new Error(`bench transport: frame refused (${opened.error.type})`);
  }
  return (FRAMES * message.length) / 1e6 / ((performance.now() - start) / 1000);
}

/** Plain WebCrypto AES-256-GCM encrypt + decrypt of the same messages; MB/s. */
async function aesGcmThroughput(message: Uint8Array<ArrayBuffer>): Promise<number> {
  const key = await crypto.subtle.importKey('raw', new Uint8Array(webRandom.bytes(32)), { name: 'AES-GCM' }, false, [
    'encrypt',
    'decrypt',
  ]);
  const once = async () => {
    const iv = new Uint8Array(webRandom.bytes(12));
    const ct = await crypto.subtle.encrypt({ name: 'AES-GCM', iv }, key, message);
    await crypto.subtle.decrypt({ name: 'AES-GCM', iv }, key, ct);
  };
  for (let i = 0; i < 5; i++) await once();
  const start = performance.now();
  for (let i = 0; i < FRAMES; i++) await once();
  return (FRAMES * message.length) / 1e6 / ((performance.now() - start) / 1000);
}

export async function run(): Promise<BenchResult> {
  const pairings: number[] = [];
  for (let i = 0; i < PAIRINGS; i++) pairings.push(await pairOnce());
  const message = new Uint8Array(FRAME_BYTES);
  for (let at = 0; at < FRAME_BYTES; at += 65_536) crypto.getRandomValues(message.subarray(at, at + 65_536));
  // Interleave to share the machine's noise between the two measurements.
  const frames: number[] = [];
  const anchors: number[] = [];
  for (let round = 0; round < 3; round++) {
    frames.push(await frameThroughput(message));
    anchors.push(await aesGcmThroughput(message));
  }
  const frameRate = median(frames);
  const anchorRate = median(anchors);
  return {
    figures: {
      pairing_ms: median(pairings),
      pairing_ms_max: Math.max(...pairings),
      frame_mb_per_s: frameRate,
      frame_bytes: FRAME_BYTES,
      frames: FRAMES,
    },
    anchors: { aesgcm_mb_per_s: anchorRate },
    ratios: { seal_throughput_vs_aesgcm: frameRate / anchorRate },
  };
}
