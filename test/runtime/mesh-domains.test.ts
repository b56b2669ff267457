/**
 * MeshDomains, the main-thread side of domains, over real MLS services and a
 * blind sequencer in process, with a small relay that answers `commit` and
 * `commits` and pushes `accepted` to the other sessions, and peer frames
 * delivered by hand: pairing through the built-in domains, and the recovery
 * path — a member whose accepted commit keeps failing asks its peers for a
 * GroupInfo (refused to a machine outside the group) and resyncs by external
 * commit.
 */
import 'fake-indexeddb/auto';
import { ed25519 } from '@noble/curves/ed25519.js';
import { describe, expect, it } from 'vitest';
import { fromHex, toHex } from '../../src/core/bytes.js';
import { BlindSequencer, MemorySequencerStore } from '../../src/core/mls/sequencer.js';
import { CryptoService } from '../../src/runtime/crypto-service.js';
import { MeshDomains } from '../../src/runtime/mesh-domains.js';
import { MlsService } from '../../src/runtime/mls-service.js';
import type { SequencerMessage } from '../../src/runtime/sequencer-port.js';
import { KeyDatabase } from '../../src/storage/key-store.js';
import { testClock } from '../helpers/deterministic.js';

const TOPIC = new Uint8Array(32).fill(9);
let stores = 0;

type Sent = { readonly from: string; readonly to: string; readonly message: { t: string } & Record<string, unknown> };

async function mesh() {
  const relaySecret = ed25519.utils.randomSecretKey();
  const relayKey = ed25519.getPublicKey(relaySecret);
  const log = new MemorySequencerStore();
  const sequencer = new BlindSequencer({ store: log, secretKey: relaySecret, now: () => 1 });
  const clock = testClock();
  const sessions = new Map<string, MeshDomains>();
  const outbox: Sent[] = [];
  const notices: string[] = [];
  const counts: string[] = [];
  const signers: string[] = [];
  /** The mesh's domains (its `domains` table), and every `commits` request: signer → [group hex, from]. */
  const meshDomains = ['CONTROL', 'GENERAL'];
  const fetched = new Map<string, string[]>();

  const machine = async () => {
    const name = `mesh-domains-${++stores}`;
    const crypto = new CryptoService(new KeyDatabase(name), clock);
    const view = await crypto.init();
    const mls = new MlsService(new KeyDatabase(name));
    await mls.init();
    const signer = view.signer;
    const endpoint = fromHex(view.endpoint)!;
    signers.push(signer);
    const domains = new MeshDomains({
      mls,
      groupIdOf: async (d) => crypto.groupIdOf(d),
      domainNames: async () => meshDomains,
      reloadKeys: async () => {
        await crypto.reloadDomainKeys();
      },
      sendTo: async (to, message) => {
        outbox.push({ from: signer, to, message: message });
        return true;
      },
      peers: () => signers.filter((s) => s !== signer),
      store: { row: async () => undefined, getMeta: async () => undefined, setMeta: async () => undefined },
      notice: (_kind, text) => notices.push(text),
      count: (type) => counts.push(type),
      changed: () => undefined,
    });
    mls.setSequencer((bundle) => domains.sequence(bundle));
    const deliver = (m: SequencerMessage) => setTimeout(() => domains.onSequencer(m), 0);
    const relay = async (m: Parameters<Parameters<MeshDomains['attach']>[0]>[0]): Promise<void> => {
      if (m.t === 'commits') {
        fetched.set(signer, [...(fetched.get(signer) ?? []), `${toHex(m.group)}@${m.from}`]);
        const page = await log.since(TOPIC, m.group, m.from, 64);
        deliver({ t: 'commit-log', rid: m.rid, items: page.map((p) => [p.receipt, p.bundle]) });
        return;
      }
      const verdict = await sequencer.submit(TOPIC, endpoint, m.bundle);
      if (!verdict.ok) throw new Error(`test relay: ${verdict.error.type}`);
      deliver({ t: 'sequenced', rid: m.rid, receipt: verdict.value.bytes });
      for (const [other, session] of sessions) {
        if (other !== signer) {
          setTimeout(() => session.onSequencer({ t: 'accepted', receipt: verdict.value.bytes, bundle: m.bundle }), 0);
        }
      }
    };
    await domains.attach((m) => void relay(m), relayKey);
    sessions.set(signer, domains);
    return { crypto, mls, domains, signer };
  };
  return { machine, outbox, notices, counts, meshDomains, fetched };
}

const settle = () => new Promise((resolve) => setTimeout(resolve, 50));

/** Joins `joiner` to the built-in domains through `admin`, as pairing does. */
async function pair(
  admin: { domains: MeshDomains; crypto: CryptoService },
  joiner: { domains: MeshDomains; crypto: CryptoService },
): Promise<void> {
  expect((await joiner.crypto.beginJoin(await admin.crypto.createInvitation('ws://x/ws', 'ab'.repeat(32)))).ok).toBe(
    true,
  );
  const offers = await joiner.domains.joinOffers();
  if (!offers.ok) throw new Error(offers.error.type);
  const welcomes = await admin.domains.addJoiner(offers.value);
  if (!welcomes.ok) throw new Error(welcomes.error.type);
  expect((await joiner.domains.joinFrom(welcomes.value)).ok).toBe(true);
  await settle();
}

describe('MeshDomains', () => {
  it('a member stuck on an accepted commit asks for a GroupInfo and resyncs by external commit', async () => {
    const { machine, outbox, notices, counts } = await mesh();
    const W = await machine();
    const C = await machine();
    const Y = await machine();
    const admins = [W.signer];
    W.mls.setKeyring({ admitted: [W.signer, C.signer, Y.signer], admins });
    C.mls.setKeyring({ admitted: [W.signer, C.signer], admins });
    Y.mls.setKeyring({ admitted: [W.signer, C.signer, Y.signer], admins });
    expect((await W.crypto.createMesh()).ok).toBe(true);
    expect((await W.domains.found()).ok).toBe(true);
    for (const m of [C, Y]) {
      expect((await m.crypto.beginJoin(await W.crypto.createInvitation('ws://x/ws', 'ab'.repeat(32)))).ok).toBe(true);
    }
    // C joins through pairing: offers out, the admin adds it, the bundles come back.
    const offers = await C.domains.joinOffers();
    if (!offers.ok) throw new Error(offers.error.type);
    const welcomes = await W.domains.addJoiner(offers.value);
    if (!welcomes.ok) throw new Error(welcomes.error.type);
    expect((await C.domains.joinFrom(welcomes.value)).ok).toBe(true);
    await settle();

    // Y joins too, but C's keyring does not name Y yet: the commit adding it fails at C.
    const yOffers = await Y.domains.joinOffers();
    if (!yOffers.ok) throw new Error(yOffers.error.type);
    expect((await W.domains.addJoiner(yOffers.value)).ok).toBe(true);
    await settle(); // push: failure 1 (CONTROL and GENERAL)
    await C.domains.catchUp(); // failure 2
    expect(outbox.filter((s) => s.message.t === 'mls-groupinfo-request')).toEqual([]);
    await C.domains.catchUp(); // failure 3: stuck, asks its peers
    expect(C.domains.stuck().sort()).toEqual(['CONTROL', 'GENERAL']);
    const requests = outbox.filter((s) => s.from === C.signer && s.message.t === 'mls-groupinfo-request');
    const asked = requests.map((r) => `${r.message['domain'] as string}>${r.to}`).sort();
    const everyPeer = ['CONTROL', 'GENERAL'].flatMap((d) => [W, Y].map((m) => `${d}>${m.signer}`));
    expect(asked).toEqual(everyPeer.sort());

    // A machine outside the group is never given a GroupInfo.
    const outsider = await machine();
    await W.domains.groupInfoRequested(outsider.signer, 'GENERAL');
    expect(counts).toContain('mls:GroupInfoRefused');
    expect(outbox.some((s) => s.to === outsider.signer)).toBe(false);

    // W answers C; with the keyring caught up, C rejoins its own leaf in both groups.
    C.mls.setKeyring({ admitted: [W.signer, C.signer, Y.signer], admins });
    for (const domain of ['CONTROL', 'GENERAL']) await W.domains.groupInfoRequested(C.signer, domain);
    for (const sent of outbox.filter((s) => s.to === C.signer && s.message.t === 'mls-groupinfo')) {
      await C.domains.groupInfoArrived(sent.message['domain'] as string, sent.message['info'] as Uint8Array);
    }
    await settle();
    expect(C.domains.stuck()).toEqual([]);
    expect(notices.filter((n) => n.startsWith('resynced'))).toHaveLength(2);
    await W.domains.refresh();
    for (const domain of ['CONTROL', 'GENERAL']) {
      const w = W.domains.views.find((v) => v.domain === domain)!;
      const c = C.domains.views.find((v) => v.domain === domain)!;
      expect(c.epoch).toBe(w.epoch);
      expect(new Set(c.members)).toEqual(new Set([W.signer, C.signer, Y.signer]));
    }
    // And C takes part again: a removal mints a generation C receives through the push.
    expect((await W.domains.remove('GENERAL', [Y.signer])).ok).toBe(true);
    await settle();
    await C.domains.refresh();
    expect(C.domains.views.find((v) => v.domain === 'GENERAL')?.generations).toEqual([1, 2]);
  });

  it('a machine outside a domain asks for its commits as a member does: the relay cannot tell them apart', async () => {
    const { machine, meshDomains, fetched } = await mesh();
    const W = await machine();
    const C = await machine();
    W.mls.setKeyring({ admitted: [W.signer, C.signer], admins: [W.signer] });
    C.mls.setKeyring({ admitted: [W.signer, C.signer], admins: [W.signer] });
    expect((await W.crypto.createMesh()).ok).toBe(true);
    expect((await W.domains.found()).ok).toBe(true);
    await pair(W, C);
    // LAB: W alone reads it; two rotations move its epoch, pushed to C as accepted commits.
    expect((await W.domains.create('LAB', [])).ok).toBe(true);
    meshDomains.push('LAB');
    for (let i = 0; i < 2; i++) expect((await W.domains.rotate('LAB')).ok).toBe(true);
    await settle();
    await W.domains.refresh();
    await C.domains.refresh();
    expect(C.domains.views.map((v) => v.domain)).not.toContain('LAB');

    fetched.clear();
    await W.domains.catchUp();
    await C.domains.catchUp();
    const lab = toHex(W.crypto.groupIdOf('LAB'));
    expect(fetched.get(W.signer)).toContain(`${lab}@2`);
    expect([...fetched.get(C.signer)!].sort()).toEqual([...fetched.get(W.signer)!].sort());
    // C checked and kept LAB's receipts (it would catch a relay signing two commits for one epoch).
    expect(C.domains.misbehaviour()).toEqual([]);

    // A machine that was away catches up on LAB's log as a member would, from where it last saw it.
    const Y = await machine();
    W.mls.setKeyring({ admitted: [W.signer, C.signer, Y.signer], admins: [W.signer] });
    Y.mls.setKeyring({ admitted: [W.signer, C.signer, Y.signer], admins: [W.signer] });
    await pair(W, Y);
    fetched.clear();
    await Y.domains.catchUp();
    await Y.domains.catchUp();
    expect(fetched.get(Y.signer)!.filter((f) => f.startsWith(lab))).toEqual([`${lab}@0`, `${lab}@2`]);
  });
});
