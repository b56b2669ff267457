/**
 * Benchmark `transport`: the secure channel between machines.
 *
 *   pairing      the whole cryptographic pairing exchange between two machines,
 *                each a crypto service and an MLS service on one fake IndexedDB
 *                key store (runtime/crypto-service.ts, runtime/mls-service.ts, as
 *                their workers run them), the inviter having founded CONTROL and
 *                GENERAL: invitation, join request with its commitment,
 *                challenge, reveal, both pairing codes; the joiner's
 *                confirmation carrying its MLS key package for each built-in
 *                domain; the inviter naming the joiner in its MLS keyring and
 *                adding it to each domain with full history (one MLS commit and
 *                Welcome each, what MeshNode's admission runs); the join-accept
 *                sealed to the joiner with the anchors, the table classes and
 *                those Welcomes — the domain keys travel only inside MLS — and
 *                the joiner opening it, joining both groups and loading their
 *                generations, checked equal to the inviter's. Everything but the
 *                humans and the network: the relay's blind sequencer is a stub
 *                that accepts each commit (test/helpers/mls-machine.ts).
 *                `figures.pairing_ms` is the median of PAIRINGS runs.
 *   frames       FrameChannel seal + open (runtime/frame-channel.ts: HPKE-derived
 *                key, AES-256-GCM, header checks, replay guard) over FRAME_BYTES
 *                messages; `figures.frame_mb_per_s` counts message bytes once.
 *   anchor       plain WebCrypto AES-256-GCM encrypt + decrypt of the same
 *                bytes with one imported key, in the same run.
 *   ratio        `seal_throughput_vs_aesgcm` = frames ÷ anchor (aim ≥ 0.5).
 */
import 'fake-indexeddb/auto';
import { topicOf } from '../src/core/identity.js';
import type { DomainItems } from '../src/core/peer-wire.js';
import { DOMAINS } from '../src/core/schema.js';
import { systemClock } from '../src/runtime/clock.js';
import { CryptoService } from '../src/runtime/crypto-service.js';
import { FrameChannel, generateFrameKey } from '../src/runtime/frame-channel.js';
import { webRandom } from '../src/runtime/webcrypto.js';
import type { MlsService } from '../src/runtime/mls-service.js';
import { manifestView } from '../src/runtime/views.js';
import { KeyDatabase } from '../src/storage/key-store.js';
import { foundDomains, mlsMachine } from '../test/helpers/mls-machine.ts';
import type { BenchResult } from './run.ts';

const PAIRINGS = 15;
const FRAME_BYTES = 256 * 1024;
const FRAMES = 200;
const RELAY_KEY = '00'.repeat(32);

let databases = 0;

/** A machine's crypto service on a fresh key store, and that store's name (for its MLS service). */
async function service(): Promise<{ crypto: CryptoService; db: string }> {
  const db = `bench-transport-${++databases}`;
  const crypto = new CryptoService(new KeyDatabase(db), systemClock);
  await crypto.init();
  return { crypto, db };
}

const hex = (h: string): Uint8Array => new Uint8Array(Buffer.from(h, 'hex'));

/** The joiner's key packages for the built-in domains, as MeshDomains.joinOffers makes them. */
async function joinOffers(mls: MlsService, joiner: CryptoService): Promise<DomainItems> {
  const kps: [(typeof DOMAINS)[number], Uint8Array][] = [];
  for (const domain of DOMAINS) {
    const kp = await mls.offer(domain, joiner.groupIdOf(domain));
    if (!kp.ok) throw new Error(`bench transport: offer ${domain}: ${kp.error.type}`);
    kps.push([domain, kp.value]);
  }
  return kps;
}

/** The inviter adds the joiner to each built-in domain, as MeshDomains.addJoiner does; returns the Welcomes. */
async function addJoiner(mls: MlsService, kps: DomainItems): Promise<DomainItems> {
  const welcomes: [(typeof DOMAINS)[number], Uint8Array][] = [];
  for (const domain of DOMAINS) {
    const kp = kps.find(([d]) => d === domain)?.[1];
    if (!kp) throw new Error(`bench transport: no key package for ${domain}`);
    const bundle = await mls.change(domain, { add: [kp], history: 'full' });
    if (!bundle.ok) throw new Error(`bench transport: add to ${domain}: ${bundle.error.type}`);
    welcomes.push([domain, bundle.value]);
  }
  return welcomes;
}

/** The joiner takes in the Welcomes and loads the generations, as MeshDomains.joinFrom and the crypto worker do. */
async function joinFrom(mls: MlsService, joiner: CryptoService, welcomes: DomainItems): Promise<void> {
  for (const [domain, bundle] of welcomes) {
    const joined = await mls.receive(domain, joiner.groupIdOf(domain), bundle, { trustLeaves: true });
    if (!joined.ok || joined.value !== 'joined') throw new Error(`bench transport: the Welcome to ${domain} failed`);
  }
  await joiner.reloadDomainKeys();
}

/** One pairing exchange, from invitation to the joiner holding the domain keys; returns milliseconds. */
async function pairOnce(): Promise<number> {
  const { crypto: inviter, db: inviterDb } = await service();
  const created = await inviter.createMesh();
  if (!created.ok) throw new Error('bench transport: createMesh failed');
  const inviterMls = await foundDomains(inviter, inviterDb);
  const { crypto: joiner, db: joinerDb } = await service();
  const i = inviter.view();
  // The joiner's MLS worker runs from the start; until the keyring arrives it believes only the inviter.
  const joinerMls = await mlsMachine(joiner, joinerDb, { admitted: [], admins: [i.signer] });
  const classes = manifestView([], new Map(), new Map()).map((e) => [e.table, e.mesh] as const);
  const start = performance.now();
  const ticket = await inviter.createInvitation('ws://127.0.0.1:1/ws', RELAY_KEY);
  if (!(await joiner.beginJoin(ticket)).ok) throw new Error('bench transport: beginJoin failed');
  const j = joiner.view();
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
  const confirm = await joiner.joinAnswer(true, await joinOffers(joinerMls, joiner));
  if (!confirm.ok) throw new Error('bench transport: confirm failed');
  const confirmed = await inviter.openMessage(j.endpoint, confirm.value, undefined);
  if (!confirmed.ok || confirmed.value.message.t !== 'join-confirm') {
    throw new Error('bench transport: no confirmation');
  }
  inviterMls.setKeyring({ admitted: [i.signer, j.signer], admins: [i.signer] });
  const welcomes = await addJoiner(inviterMls, confirmed.value.message.kps);
  const admitting = { inv: req.inv, endpoint: hex(j.endpoint), frame: j.frame };
  const accept = await inviter.admitJoin(admitting, [hex(i.signer)], classes, welcomes);
  if (!accept.ok) throw new Error('bench transport: admit failed');
  const joined = await joiner.openMessage(i.endpoint, accept.value, undefined);
  if (!joined.ok || joined.value.message.t !== 'join-accept') throw new Error('bench transport: accept refused');
  await joinFrom(joinerMls, joiner, joined.value.message.welcomes);
  const ms = performance.now() - start;
  const generations = (c: CryptoService) => JSON.stringify(c.domainGenerations());
  if (!joiner.view().member || generations(joiner) !== generations(inviter)) {
    throw new Error('bench transport: the joiner does not hold the domain keys');
  }
  return ms;
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
