/**
 * The relay's blind sequencer over the wire (`commit`, `commits`, `accepted`):
 * admitted members only; two members racing for one epoch — exactly one wins,
 * the loser is handed the winner and retries on the next epoch; the winner is
 * pushed to the other live members; receipts verify under the relay key the
 * members pinned and chain; accepted commits survive a relay restart, and the
 * restarted relay refuses to sell a taken epoch again.
 */
import { ed25519 } from '@noble/curves/ed25519.js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { admissionBody, admissionSigningPayload, encodeAdmission } from '../../src/core/admission.js';
import { bytesEqual } from '../../src/core/bytes.js';
import { verifyReceipt } from '../../src/core/mls/receipt.js';
import { ReceiptLog } from '../../src/core/mls/receipt-log.js';
import { startRelay, type RelayHandle } from '../../src/relay/server.js';
import { NodeRelayClient } from '../../src/runtime/node-relay-client.js';
import { RelaySequencerPort } from '../../src/runtime/sequencer-port.js';
import { externalCommit, fakeBundle } from '../helpers/mls-frames.js';
import { joinRelay, key, type Key, type RelayTestClient } from '../helpers/relay-client.js';

const TOPIC = new Uint8Array(32).fill(0x31);
const GROUP = new Uint8Array(32).fill(0x47);
const ADMIN = key(1);
const [ALICE, BOB, CAROL, JOINER] = [key(21), key(22), key(23), key(24)];

function admission(endpoints: Key[], stewards?: Key[], version = 1): Uint8Array {
  const body = admissionBody({
    v: 1,
    topic: TOPIC,
    version,
    signer: ADMIN.id,
    admins: [ADMIN.id],
    endpoints: endpoints.map((e) => e.id),
    invites: [],
    ...(stewards ? { stewards: stewards.map((e) => e.id) } : {}),
  });
  return encodeAdmission(body, ed25519.sign(admissionSigningPayload(body), ADMIN.secret));
}

describe('relay sequencer', () => {
  let dir: string;
  let relay: RelayHandle;
  const clients: RelayTestClient[] = [];
  const connect = async (who: Key): Promise<RelayTestClient> => {
    const c = await joinRelay(relay.wsUrl, TOPIC, who.id, (p) => ed25519.sign(p, who.secret));
    clients.push(c);
    return c;
  };
  const start = async () =>
    (relay = await startRelay({ port: 0, dataDir: join(dir, 'data'), log: () => undefined, heartbeatMs: 0 }));

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'sov-sequencer-'));
    await start();
    const alice = await connect(ALICE);
    alice.send({ t: 'admit', record: admission([ALICE, BOB, CAROL]) });
    await alice.expect('admitted');
  });
  afterEach(async () => {
    for (const c of clients.splice(0)) c.ws.terminate();
    await relay.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('lets one of two racing commits win, hands the loser the winner, and pushes it to the others', async () => {
    const [alice, bob, carol] = [clients[0]!, await connect(BOB), await connect(CAROL)];
    alice.send({ t: 'commit', rid: 1, bundle: fakeBundle(GROUP, 0, ALICE.id) });
    const first = await alice.expect('sequenced');
    const log = new ReceiptLog(alice.relayKey!);
    expect(log.observe(first.receipt).ok).toBe(true);
    expect((await bob.expect('accepted')).receipt).toEqual(first.receipt);
    await carol.expect('accepted');

    const fromAlice = fakeBundle(GROUP, 1, ALICE.id, 5);
    const fromBob = fakeBundle(GROUP, 1, BOB.id, 6);
    alice.send({ t: 'commit', rid: 2, bundle: fromAlice });
    bob.send({ t: 'commit', rid: 7, bundle: fromBob });
    const answers = [await alice.next(), await bob.next()];
    const won = answers.filter((a) => a.t === 'sequenced');
    const lost = answers.filter((a) => a.t === 'refused');
    // Alice's answer came first on her socket, but Bob may have seen her `accepted` push first.
    const bobAnswer = answers[1]!.t === 'accepted' ? await bob.next() : answers[1]!;
    const outcomes = [answers[0]!, bobAnswer].map((a) => a.t);
    expect(outcomes.sort()).toEqual(['refused', 'sequenced']);
    expect(won.length + lost.length).toBeGreaterThan(0);
    const refused = [answers[0]!, bobAnswer].find((a) => a.t === 'refused');
    if (refused?.t !== 'refused') throw new Error('unreachable');
    expect(refused.code).toBe('EpochTaken');
    const winner = verifyReceipt(refused.receipt, alice.relayKey!);
    if (!winner.ok) throw new Error(winner.error.reason);
    expect(winner.value.body.epoch).toBe(1);
    expect(bytesEqual(winner.value.body.prev, first.receipt.length ? log.head(GROUP)!.hash : new Uint8Array())).toBe(
      true,
    );
    expect([fromAlice, fromBob].some((b) => bytesEqual(b, refused.bundle))).toBe(true);
    expect(log.observe(refused.receipt).ok).toBe(true);
  });

  it('serves the accepted commits from an epoch on, and keeps them across a restart', async () => {
    const alice = clients[0]!;
    for (let epoch = 0; epoch < 3; epoch++) {
      alice.send({ t: 'commit', rid: epoch, bundle: fakeBundle(GROUP, epoch, ALICE.id) });
      await alice.expect('sequenced');
    }
    for (const c of clients.splice(0)) c.ws.terminate();
    await relay.close();
    await start();
    const again = await connect(ALICE);
    again.send({ t: 'commits', rid: 9, group: GROUP, from: 1 });
    const page = await again.expect('commit-log');
    expect(page.rid).toBe(9);
    const log = new ReceiptLog(again.relayKey!);
    expect(page.items.map(([receipt]) => log.observe(receipt).ok)).toEqual([true, true]);
    again.send({ t: 'commit', rid: 10, bundle: fakeBundle(GROUP, 2, ALICE.id, 9) });
    expect((await again.expect('refused')).code).toBe('EpochTaken');
    again.send({ t: 'commit', rid: 11, bundle: fakeBundle(GROUP, 3, ALICE.id) });
    await again.expect('sequenced');
  });

  it('refuses commits from endpoints that are not admitted members, and malformed bundles', async () => {
    const alice = clients[0]!;
    alice.send({ t: 'commit', rid: 1, bundle: fakeBundle(GROUP, 0, BOB.id) });
    expect((await alice.expect('refused')).code).toBe('PosterMismatch');
    alice.send({ t: 'commit', rid: 2, bundle: Uint8Array.of(0xa0) });
    expect((await alice.expect('refused')).code).toBe('MalformedBundle');
    const stranger = await joinRelay(relay.wsUrl, TOPIC, JOINER.id, (p) => ed25519.sign(p, JOINER.secret)).catch(
      (e: unknown) => e,
    );
    expect(stranger).toBeInstanceOf(Error);
    const health = (await (await fetch(`${relay.url}/api/health`)).json()) as { refused: Record<string, number> };
    expect(health.refused['sequencer-PosterMismatch']).toBe(1);
    expect(health.refused['sequencer-MalformedBundle']).toBe(1);
  });

  it('takes membership changes only from the stewards the list names; any member may rejoin itself', async () => {
    const alice = clients[0]!;
    alice.send({ t: 'admit', record: admission([ALICE, BOB, CAROL], [ALICE], 2) });
    await alice.expect('admitted');
    const bob = await connect(BOB);
    bob.send({ t: 'commit', rid: 1, bundle: fakeBundle(GROUP, 0, BOB.id) });
    const refused = await bob.expect('refused');
    expect([refused.code, refused.receipt.length]).toEqual(['NotASteward', 0]);
    // The epoch is still free: the steward takes it.
    alice.send({ t: 'commit', rid: 2, bundle: fakeBundle(GROUP, 0, ALICE.id) });
    expect((await alice.expect('sequenced')).rid).toBe(2);
    await bob.expect('accepted');
    // A member's external commit (its own resync) is not a membership change of another.
    bob.send({ t: 'commit', rid: 3, bundle: externalCommit(GROUP, 1, BOB.id) });
    expect((await bob.expect('sequenced')).rid).toBe(3);
    const health = (await (await fetch(`${relay.url}/api/health`)).json()) as { refused: Record<string, number> };
    expect(health.refused['sequencer-NotASteward']).toBe(1);
  });

  it('the client port believes only receipts under the pinned key that name the bundle', async () => {
    const pushed: Uint8Array[] = [];
    const connectPort = async (who: typeof ALICE, relayKey: Uint8Array) => {
      const box: { port?: RelaySequencerPort } = {};
      const client = await NodeRelayClient.connect({
        url: relay.wsUrl,
        topic: TOPIC,
        endpoint: who.id,
        sign: (p) => ed25519.sign(p, who.secret),
        onFrame: () => undefined,
        onSequencer: (m) => box.port?.receive(m),
      });
      box.port = new RelaySequencerPort(
        (m) => client.sequencer(m),
        new ReceiptLog(relayKey),
        (b) => pushed.push(b),
      );
      return { client, port: box.port };
    };
    const key = clients[0]!.relayKey!;
    const bob = await connectPort(BOB, key);
    const carol = await connectPort(CAROL, key);
    const first = await bob.port.submit(fakeBundle(GROUP, 0, BOB.id));
    expect(first.ok && first.value.body.epoch).toBe(0);
    const lost = await carol.port.submit(fakeBundle(GROUP, 0, CAROL.id, 8));
    expect(!lost.ok && lost.error.type).toBe('EpochTaken');
    // A session's messages arrive in the order the relay wrote them: Carol's refusal came after the
    // winner was pushed to her, and Bob's log page comes after anything written to him before it.
    expect(await bob.port.log(GROUP, 0)).toHaveLength(1);
    expect(pushed).toHaveLength(1);
    // A port that pinned another relay key believes nothing this relay signs.
    const wrong = await connectPort(
      key === ALICE.id ? BOB : ALICE,
      ed25519.getPublicKey(ed25519.utils.randomSecretKey()),
    );
    const refused = await wrong.port.submit(fakeBundle(GROUP, 1, ALICE.id));
    expect(refused.ok).toBe(false);
    for (const c of [bob.client, carol.client, wrong.client]) await c.close();
  });
});
