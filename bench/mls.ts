/**
 * Benchmark `mls`: membership changes of a domain (Node, ts-mls suite 1).
 *
 *   commits   for N in 2, 16, 64, 256: a group of N members (built in one
 *             commit), then adding one member and removing one, each staged
 *             from the same state — our path (TsMlsProvider.commit over state
 *             bytes, the admin-signed KEK package, and the KEK message sealed
 *             in the new epoch: what DomainMember.change does before it posts)
 *             against raw ts-mls doing the same commit and application
 *             message on the decoded state. Median of REPEATS each.
 *             `figures.add_ms_N`, `figures.remove_ms_N`, commit sizes
 *             `figures.add_bytes_N`, `figures.remove_bytes_N`; anchors
 *             `tsmls_add_ms_N`, `tsmls_remove_ms_N`; ratios over all N.
 *   removal   through a real relay on 127.0.0.1 (its blind sequencer), enforcing
 *             admission as `sov relay` does: the admin's machine pushes the
 *             signed list naming the four endpoints, itself as the steward
 *             (bench/lib/admission.ts), before the others connect; an admin
 *             and three members of a domain; the admin removes one; timed from
 *             the call until both remaining members hold the new generation
 *             (`figures.removal_to_new_generation_ms`, median of 5; aim ≤ 2000).
 */
import { ed25519 } from '@noble/curves/ed25519.js';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  createApplicationMessage,
  createCommit,
  decodeGroupState,
  decodeMlsMessage,
  encodeMlsMessage,
  getCiphersuiteFromName,
  getCiphersuiteImpl,
  type ClientState,
  type Proposal,
} from 'ts-mls';
import { defaultClientConfig } from 'ts-mls/clientConfig.js';
import { toHex, utf8 } from '../src/core/bytes.js';
import { topicOf } from '../src/core/identity.js';
import { commitAuthenticatedData } from '../src/core/mls/bundle.js';
import { DomainMember, offerToJoin, type DomainDeps } from '../src/core/mls/domain.js';
import { signKekPackage } from '../src/core/mls/kek.js';
import { bindLeaf, leafAuthenticator } from '../src/core/mls/leaf-binding.js';
import type { KeyPackagePair } from '../src/core/mls/provider.js';
import { ReceiptLog } from '../src/core/mls/receipt-log.js';
import type { Signer } from '../src/core/ports.js';
import { startRelay } from '../src/relay/server.js';
import { TsMlsProvider } from '../src/runtime/mls/ts-mls-provider.js';
import { meshCryptoProvider } from '../src/runtime/mls/crypto-provider.js';
import { NodeRelayClient } from '../src/runtime/node-relay-client.js';
import { RelaySequencerPort } from '../src/runtime/sequencer-port.js';
import { webRandom } from '../src/runtime/webcrypto.js';
import { pushAdmission, signAdmission } from './lib/admission.ts';
import type { BenchResult, Numbers } from './run.ts';

const SIZES = [2, 16, 64, 256];
const REPEATS = 5;
const REMOVALS = 5;

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

function machine(seed: number): Signer {
  const secret = new Uint8Array(32);
  new DataView(secret.buffer).setUint32(0, seed + 1);
  secret[31] = 7;
  return { publicKey: ed25519.getPublicKey(secret), sign: (m) => Promise.resolve(ed25519.sign(m, secret)) };
}

async function leaf(p: TsMlsProvider, m: Signer): Promise<KeyPackagePair> {
  const key = await p.signatureKey();
  return p.keyPackage(await bindLeaf(m, key.publicKey), key);
}

function must<T>(r: { ok: true; value: T } | { ok: false; error: { type: string } }): T {
  if (!r.ok) throw new Error(`bench mls: ${r.error.type}`);
  return r.value;
}

async function time(run: () => Promise<unknown>): Promise<number> {
  const start = performance.now();
  await run();
  return performance.now() - start;
}

/** Our commit path and raw ts-mls's, at one group size. */
async function commitsAt(n: number, p: TsMlsProvider, seed: number): Promise<Numbers> {
  const admin = machine(seed);
  const own = await leaf(p, admin);
  let state = must(await p.createGroup(utf8(`bench-${n}`), own));
  const others = await Promise.all(Array.from({ length: n - 1 }, (_, i) => leaf(p, machine(seed + 1 + i))));
  if (others.length > 0) {
    state = must(
      await p.commit(state, {
        add: others.map((o) => o.publicPackage),
        remove: [],
        authenticatedData: new Uint8Array(),
      }),
    ).state;
  }
  const summary = must(p.summary(state));
  const victim = summary.members.at(-1)!;
  const newcomer = await leaf(p, machine(seed + 5000));
  const ad = commitAuthenticatedData(new Uint8Array(32));
  const cs = await getCiphersuiteImpl(
    getCiphersuiteFromName('MLS_128_DHKEMX25519_AES128GCM_SHA256_Ed25519'),
    meshCryptoProvider,
  );
  const decoded = decodeGroupState(state, 0)![0];
  const raw: ClientState = { ...decoded, clientConfig: defaultClientConfig };
  const kp = decodeMlsMessage(newcomer.publicPackage, 0)![0];
  if (kp.wireformat !== 'mls_key_package') throw new Error('bench mls: key package');
  const victimLeaf = summary.members.length - 1;
  const pkg = (epoch: number) =>
    signKekPackage(
      { domain: 'GENERAL', group: summary.groupId, epoch, gens: [{ gen: 2, key: webRandom.bytes(32) }] },
      admin,
    );

  const ours = async (change: { add: Uint8Array[]; remove: Uint8Array[] }): Promise<number> => {
    const staged = must(await p.commit(state, { ...change, authenticatedData: ad }));
    must(await p.encrypt(staged.state, await pkg(Number(summary.epoch) + 1)));
    return staged.commit.length;
  };
  const tsmls = async (proposal: Proposal): Promise<void> => {
    const r = await createCommit(
      { state: raw, cipherSuite: cs },
      { extraProposals: [proposal], ratchetTreeExtension: true, authenticatedData: ad },
    );
    encodeMlsMessage(r.commit);
    await createApplicationMessage(r.newState, await pkg(Number(summary.epoch) + 1), cs);
  };
  const out: Numbers = {};
  const sample = async (name: string, our: () => Promise<number>, theirs: () => Promise<void>) => {
    const [o, t] = [[] as number[], [] as number[]];
    let bytes = 0;
    for (let i = 0; i < REPEATS; i++) {
      o.push(await time(async () => (bytes = await our())));
      t.push(await time(theirs));
    }
    out[`${name}_ms_${n}`] = median(o);
    out[`tsmls_${name}_ms_${n}`] = median(t);
    out[`${name}_bytes_${n}`] = bytes;
  };
  await sample(
    'add',
    () => ours({ add: [newcomer.publicPackage], remove: [] }),
    () => tsmls({ proposalType: 'add', add: { keyPackage: kp.keyPackage } }),
  );
  if (n > 1) {
    await sample(
      'remove',
      () => ours({ add: [], remove: [victim] }),
      () => tsmls({ proposalType: 'remove', remove: { removed: victimLeaf } }),
    );
  }
  return out;
}

/** An admin and three members on a real relay; the admin removes one member, REMOVALS times. */
async function removalThroughRelay(): Promise<number> {
  const dataDir = await mkdtemp(join(tmpdir(), 'sov-bench-mls-'));
  const relay = await startRelay({ port: 0, dataDir, log: () => undefined, heartbeatMs: 0 });
  const clients: NodeRelayClient[] = [];
  try {
    const samples: number[] = [];
    for (let round = 0; round < REMOVALS; round++) {
      const keyring = new Set<string>();
      const admins = new Set<string>();
      const provider = await TsMlsProvider.create(leafAuthenticator(async (m) => keyring.has(toHex(m))));
      const topic = topicOf(webRandom.bytes(32));
      const group = webRandom.bytes(16);
      const members: DomainMember[] = [];
      // Machine 0 is the admin: its signing key signs the list, its endpoint pushes it.
      const endpointKeys = [0, 1, 2, 3].map(() => ed25519.utils.randomSecretKey());
      const endpoints = endpointKeys.map((k) => ed25519.getPublicKey(k));
      const adminMachine = machine(10_000 + round * 10);
      const record = await signAdmission({
        topic,
        signer: adminMachine,
        admins: [adminMachine.publicKey],
        endpoints,
        stewards: [endpoints[0]!],
      });
      await pushAdmission(relay.wsUrl, topic, endpointKeys[0]!, record);
      const make = async (i: number, admin: boolean): Promise<{ deps: DomainDeps }> => {
        const m = machine(10_000 + round * 10 + i);
        keyring.add(toHex(m.publicKey));
        if (admin) admins.add(toHex(m.publicKey));
        const endpointKey = endpointKeys[i]!;
        const endpoint = endpoints[i]!;
        const log = new ReceiptLog(relayKey);
        const box: { port?: RelaySequencerPort } = {};
        const client = await NodeRelayClient.connect({
          url: relay.wsUrl,
          topic,
          endpoint,
          sign: (payload) => ed25519.sign(payload, endpointKey),
          onFrame: () => undefined,
          onSequencer: (msg) => {
            if (msg.t !== 'commit-log') box.port?.receive(msg);
          },
        });
        clients.push(client);
        const index = members.length;
        const port = new RelaySequencerPort(
          (msg) => client.sequencer(msg),
          log,
          (bundle) => {
            void members[index]?.receive(bundle);
          },
        );
        box.port = port;
        return {
          deps: {
            provider,
            machine: m,
            endpoint,
            random: webRandom,
            isAdmin: async (x) => admins.has(toHex(x)),
            sequence: (bundle) => port.submit(bundle),
          },
        };
      };
      const relayKey = await relayKeyOf(relay.url);
      const w = await make(0, true);
      const admin = must(await DomainMember.found(w.deps, 'GENERAL', group));
      members.push(admin);
      const joiners: { member: DomainMember; offer: Awaited<ReturnType<typeof offerToJoin>>; key: Uint8Array }[] = [];
      for (let i = 1; i <= 3; i++) {
        const m = await make(i, false);
        const offer = await offerToJoin(m.deps);
        const member = DomainMember.awaiting(m.deps, 'GENERAL', group, offer);
        members.push(member);
        joiners.push({ member, offer, key: m.deps.machine.publicKey });
      }
      must(await admin.change({ add: joiners.map((j) => j.offer.keyPackage), history: 'full' }));
      await until(() => joiners.every((j) => j.member.isMember));
      const [gone, ...staying] = joiners;
      const start = performance.now();
      must(await admin.change({ remove: [gone!.key] }));
      await until(() => staying.every((s) => s.member.current()?.gen === 2));
      samples.push(performance.now() - start);
      for (const c of clients.splice(0)) await c.close();
    }
    return median(samples);
  } finally {
    for (const c of clients) await c.close();
    await relay.close();
    await rm(dataDir, { recursive: true, force: true });
  }
}

async function relayKeyOf(url: string): Promise<Uint8Array> {
  const health = (await (await fetch(`${url}/api/health`)).json()) as { relayKey: string };
  return new Uint8Array(Buffer.from(health.relayKey, 'hex'));
}

async function until(check: () => boolean, timeoutMs = 30_000): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!check()) {
    if (performance.now() > deadline) throw new Error('bench mls: timed out');
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
}

export async function run(): Promise<BenchResult> {
  const provider = await TsMlsProvider.create(async () => true);
  const figures: Numbers = {};
  const anchors: Numbers = {};
  for (const [i, n] of SIZES.entries()) {
    for (const [key, value] of Object.entries(await commitsAt(n, provider, i * 1000))) {
      (key.startsWith('tsmls_') ? anchors : figures)[key] = value;
    }
  }
  figures['removal_to_new_generation_ms'] = await removalThroughRelay();
  const sum = (prefix: string, from: Numbers) => SIZES.reduce((s, n) => s + (from[`${prefix}_ms_${n}`] ?? 0), 0);
  return {
    figures,
    anchors,
    ratios: {
      add_time_vs_tsmls: sum('add', figures) / sum('tsmls_add', anchors),
      remove_time_vs_tsmls: sum('remove', figures) / sum('tsmls_remove', anchors),
    },
  };
}
