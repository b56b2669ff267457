/**
 * The crypto worker's service driven directly in Node (fake IndexedDB): the
 * pairing exchange over HPKE-sealed frames, and refusals before import —
 * strangers, replays (remembered across a restart), stale pairing requests.
 */
import 'fake-indexeddb/auto';
import { describe, expect, it } from 'vitest';
import { toHex } from '../../src/core/bytes.js';
import { MAX_REQUEST_AGE_MS } from '../../src/core/frame.js';
import { decodeAdmission, inviteId } from '../../src/core/admission.js';
import { CryptoService } from '../../src/runtime/crypto-service.js';
import { ok } from '../../src/core/result.js';
import { DOMAINS } from '../../src/core/schema.js';
import type { MlsService } from '../../src/runtime/mls-service.js';
import { KeyDatabase } from '../../src/storage/key-store.js';
import { foundDomains, mlsMachine } from '../helpers/mls-machine.js';
import { testClock, type TestClock } from '../helpers/deterministic.js';

let dbs = 0;
const hex = (h: string): Uint8Array => new Uint8Array(Buffer.from(h, 'hex'));

const RELAY_KEY = 'ab'.repeat(32);

/** Each service's key-store name, so its MLS service can open the same store. */
const storeOf = new WeakMap<CryptoService, string>();
const mlsOf = new WeakMap<CryptoService, MlsService>();

async function machine(clock: TestClock, name = `crypto-test-${++dbs}`): Promise<CryptoService> {
  const service = new CryptoService(new KeyDatabase(name), clock);
  await service.init();
  storeOf.set(service, name);
  return service;
}

async function founded(clock: TestClock): Promise<CryptoService> {
  const founder = await machine(clock);
  expect((await founder.createMesh()).ok).toBe(true);
  mlsOf.set(founder, await foundDomains(founder, storeOf.get(founder)!));
  return founder;
}

/** Runs invite → join request → accept; returns both sides and the frames exchanged. */
async function pair(clock: TestClock) {
  const inviter = await founded(clock);
  const joiner = await machine(clock);
  const ticket = await inviter.createInvitation('ws://127.0.0.1:1/ws', RELAY_KEY);
  const started = await joiner.beginJoin(ticket);
  if (!started.ok) throw new Error(started.error.type);
  const request = await joiner.joinRequest('field tablet');
  if (!request.ok) throw new Error(request.error.type);
  return { inviter, joiner, request: request.value.body };
}

/** A pairing up to the inviter's view of the request: both machines and the invitation id. */
async function requested(clock: TestClock) {
  const { inviter, joiner, request } = await pair(clock);
  const opened = await inviter.openMessage(joiner.view().endpoint, request, undefined);
  if (!opened.ok || opened.value.message.t !== 'join-request') throw new Error('no join request');
  return { inviter, joiner, inv: opened.value.message.inv };
}

/** The invitation ids an inviter's admission list serves now. */
async function servedInvites(inviter: CryptoService): Promise<string[]> {
  const record = decodeAdmission(await inviter.signAdmission([], [inviter.view().endpoint], 1));
  if (!record.ok) throw new Error(record.error.reason);
  return record.value.list.invites.map((i) => toHex(i.id));
}

describe('crypto service pairing over end-to-end frames', () => {
  it('pairs: commit, challenge, reveal — both sides derive one code; keys only through MLS after both confirmed', async () => {
    const clock = testClock();
    const { inviter, joiner, request } = await pair(clock);
    const [i, j] = [inviter.view(), joiner.view()];
    const opened = await inviter.openMessage(j.endpoint, request, undefined);
    if (!opened.ok || opened.value.message.t !== 'join-request') throw new Error('no join request');
    const req = opened.value.message;
    expect(opened.value.frame).toBe(j.frame);
    const inviterNonce = new Uint8Array(32).fill(4);
    const revealed = await joiner.joinReveal({ inv: req.inv, signer: hex(i.signer), nonce: inviterNonce });
    if (!revealed.ok) throw new Error(revealed.error.type);
    const reveal = await inviter.openMessage(j.endpoint, revealed.value.body, undefined);
    if (!reveal.ok || reveal.value.message.t !== 'join-reveal') throw new Error('no reveal');
    const joinerParty = { signer: req.signer, endpoint: req.endpoint, frame: hex(j.frame) };
    const code = inviter.pairingCode({
      inv: req.inv,
      joiner: joinerParty,
      commit: req.commit,
      inviterNonce,
      joinerNonce: reveal.value.message.nonce,
    });
    expect(code).toMatch(/^\d{3} \d{3}$/);
    expect(code).toBe(revealed.value.sas);
    // A reveal that does not open the commitment yields no code at all.
    expect(
      inviter.pairingCode({
        inv: req.inv,
        joiner: joinerParty,
        commit: req.commit,
        inviterNonce,
        joinerNonce: inviterNonce,
      }),
    ).toBeUndefined();

    // The joiner's key packages ride in its confirmation; the inviter adds it to each domain's group.
    const joinerMls = await mlsMachine(joiner, storeOf.get(joiner)!, { admitted: [], admins: [i.signer] });
    const kps: [string, Uint8Array][] = [];
    for (const d of DOMAINS) {
      const kp = await joinerMls.offer(d, joiner.groupIdOf(d));
      if (!kp.ok) throw new Error(kp.error.type);
      kps.push([d, kp.value]);
    }
    const confirm = await joiner.joinAnswer(true, kps);
    if (!confirm.ok) throw new Error(confirm.error.type);
    const confirmed = await inviter.openMessage(j.endpoint, confirm.value, undefined);
    if (!confirmed.ok || confirmed.value.message.t !== 'join-confirm') throw new Error('no confirmation');
    const inviterMls = mlsOf.get(inviter)!;
    inviterMls.setKeyring({ admitted: [i.signer, j.signer], admins: [i.signer] });
    const welcomes: [string, Uint8Array][] = [];
    for (const [d, kp] of confirmed.value.message.kps) {
      const bundle = await inviterMls.change(d, { add: [kp], history: 'full' });
      if (!bundle.ok) throw new Error(bundle.error.type);
      welcomes.push([d, bundle.value]);
    }
    const admitting = { inv: req.inv, endpoint: hex(j.endpoint), frame: j.frame };
    const accept = await inviter.admitJoin(admitting, [], [], welcomes);
    if (!accept.ok) throw new Error(accept.error.type);
    expect(await inviter.admitJoin(admitting, [], [], welcomes)).toMatchObject({
      ok: false,
      error: { type: 'InvitationUnknown' },
    });
    const joined = await joiner.openMessage(i.endpoint, accept.value, undefined);
    if (!joined.ok || joined.value.message.t !== 'join-accept') throw new Error('no accept');
    // No key travels in the accept itself: until MLS hands them over, the joiner reads nothing.
    expect(joiner.view().member).toBe(false);
    for (const [d, bundle] of joined.value.message.welcomes) {
      // Without the inviter's word for the group's other leaves, an empty keyring refuses them.
      expect(await joinerMls.receive(d, joiner.groupIdOf(d), bundle)).toEqual(ok('duplicate'));
      expect(await joinerMls.receive(d, joiner.groupIdOf(d), bundle, { trustLeaves: true })).toEqual(ok('joined'));
    }
    expect((await joiner.reloadDomainKeys()).member).toBe(true);
    expect(joiner.domainGenerations()).toEqual(inviter.domainGenerations());
    // What the inviter seals, the joiner opens.
    const sealed = await inviter.sealEvent('GENERAL', new Uint8Array([1, 2, 3]));
    expect(await joiner.openEvent(sealed)).toEqual(ok(new Uint8Array([1, 2, 3])));
    // Delivery frames now flow both ways under the bound keys.
    const events = await joiner.sealMessage({ endpoint: i.endpoint, frame: i.frame }, { t: 'ack', upto: 3 });
    expect((await inviter.openMessage(j.endpoint, events, j.frame)).ok).toBe(true);
  });

  it('refuses the keys while the joining human has not confirmed the code', async () => {
    const clock = testClock();
    const { inviter, joiner, request } = await pair(clock);
    const [i, j] = [inviter.view(), joiner.view()];
    const opened = await inviter.openMessage(j.endpoint, request, undefined);
    if (!opened.ok || opened.value.message.t !== 'join-request') throw new Error('no join request');
    const inv = opened.value.message.inv;
    expect((await joiner.joinReveal({ inv, signer: hex(i.signer), nonce: new Uint8Array(32) })).ok).toBe(true);
    const accept = await inviter.admitJoin({ inv, endpoint: hex(j.endpoint), frame: j.frame }, [], [], []);
    if (!accept.ok) throw new Error(accept.error.type);
    expect(await joiner.openMessage(i.endpoint, accept.value, undefined)).toMatchObject({
      ok: false,
      error: { type: 'NotConfirmed' },
    });
    expect(joiner.view().member).toBe(false);
  });

  it('refuses a challenge from a signing key other than the ticket names', async () => {
    const clock = testClock();
    const { inviter, joiner, request } = await pair(clock);
    const opened = await inviter.openMessage(joiner.view().endpoint, request, undefined);
    if (!opened.ok || opened.value.message.t !== 'join-request') throw new Error('no join request');
    const stranger = await founded(clock);
    const challenge = { inv: opened.value.message.inv, signer: hex(stranger.view().signer), nonce: new Uint8Array(32) };
    expect(await joiner.joinReveal(challenge)).toMatchObject({ ok: false, error: { type: 'InviterMismatch' } });
  });

  it('refuses a stranger: no invitation out, no binding → UnknownEndpoint, before decrypting', async () => {
    const clock = testClock();
    const { inviter, joiner, request } = await pair(clock);
    const other = await founded(clock);
    const j = joiner.view();
    expect(await other.openMessage(j.endpoint, request, undefined)).toMatchObject({
      ok: false,
      error: { type: 'WrongGroup' },
    });
    // The inviter's invitation is used: the relay no longer serves it, and with no other out,
    // unknown endpoints are refused outright.
    const opened = await inviter.openMessage(j.endpoint, request, undefined);
    expect(opened.ok).toBe(true);
    if (!opened.ok) return;
    await inviter.admitJoin(
      {
        inv: (opened.value.message as { inv: Uint8Array }).inv,
        endpoint: new Uint8Array(Buffer.from(j.endpoint, 'hex')),
        frame: j.frame,
      },
      [],
      [],
      [],
    );
    const again = await joiner.joinRequest('field tablet');
    if (!again.ok) throw new Error(again.error.type);
    expect(await inviter.openMessage(j.endpoint, again.value.body, undefined)).toMatchObject({
      ok: false,
      error: { type: 'UnknownEndpoint' },
    });
  });

  it('refuses delivery messages from an unbound sender even while an invitation is out', async () => {
    const clock = testClock();
    const { inviter, joiner } = await pair(clock);
    const i = inviter.view();
    const ack = await joiner.sealMessage({ endpoint: i.endpoint, frame: i.frame }, { t: 'ack', upto: 1 });
    expect(await inviter.openMessage(joiner.view().endpoint, ack, undefined)).toMatchObject({
      ok: false,
      error: { type: 'UnknownEndpoint' },
    });
  });

  it('refuses a frame whose sender is bound to another frame key → BindingMismatch', async () => {
    const clock = testClock();
    const { inviter, joiner, request } = await pair(clock);
    const wrong = toHex(new Uint8Array(32).fill(9));
    expect(await inviter.openMessage(joiner.view().endpoint, request, wrong)).toMatchObject({
      ok: false,
      error: { type: 'BindingMismatch' },
    });
  });

  it('refuses a pairing request older than the request window → StaleRequest', async () => {
    const clock = testClock();
    const { inviter, joiner, request } = await pair(clock);
    clock.advance(MAX_REQUEST_AGE_MS + 1);
    // Keep the invitation valid: it lives 24 h.
    expect(await inviter.openMessage(joiner.view().endpoint, request, undefined)).toMatchObject({
      ok: false,
      error: { type: 'StaleRequest' },
    });
  });

  it('refuses a replayed frame, also after a restart once its effects were durable', async () => {
    const clock = testClock();
    const name = `crypto-test-replay-${++dbs}`;
    const inviter = await machine(clock, name);
    expect((await inviter.createMesh()).ok).toBe(true);
    await foundDomains(inviter, name);
    const joiner = await machine(clock);
    const started = await joiner.beginJoin(await inviter.createInvitation('ws://127.0.0.1:1/ws', RELAY_KEY));
    expect(started.ok).toBe(true);
    await inviter.createInvitation('ws://127.0.0.1:1/ws', RELAY_KEY);
    const request = await joiner.joinRequest('tablet');
    if (!request.ok) throw new Error(request.error.type);
    const from = joiner.view().endpoint;
    const opened = await inviter.openMessage(from, request.value.body, undefined);
    if (!opened.ok) throw new Error(opened.error.type);
    expect(await inviter.openMessage(from, request.value.body, undefined)).toMatchObject({
      ok: false,
      error: { type: 'ReplayedRequest' },
    });
    // Handled but not yet durable when the machine stopped: delivered again, it is taken.
    const cut = await machine(clock, name);
    expect((await cut.openMessage(from, request.value.body, undefined)).ok).toBe(true);
    // Once its effects are durable, the request id is kept: after a restart it is a replay.
    await inviter.remember(opened.value.rid, opened.value.ts);
    const restarted = await machine(clock, name);
    expect(await restarted.openMessage(from, request.value.body, undefined)).toMatchObject({
      ok: false,
      error: { type: 'ReplayedRequest' },
    });
  });

  it('closes an invitation without forgetting it: served at the relay for the request window, never admitting', async () => {
    const clock = testClock();
    const { inviter, joiner, inv } = await requested(clock);
    expect(await inviter.invitationState(inv)).toEqual({ state: 'open' });
    await inviter.closeInvitation(inv, 'the inviting machine declined the pairing code');
    await inviter.closeInvitation(inv, 'a second reason does not replace the first');
    expect(await inviter.invitationState(inv)).toEqual({
      state: 'closed',
      reason: 'the inviting machine declined the pairing code',
    });
    // The relay keeps serving the joiner, so the refusal can reach it …
    expect(await servedInvites(inviter)).toEqual([toHex(inviteId(inv))]);
    // … but the invitation admits nobody.
    const accept = await inviter.admitJoin(
      { inv, endpoint: hex(joiner.view().endpoint), frame: 'ab'.repeat(32) },
      [],
      [],
      [],
    );
    expect(accept).toMatchObject({ ok: false, error: { type: 'InvitationUnknown' } });
    expect(await inviter.invitationState(Uint8Array.of(1, 2, 3))).toEqual({ state: 'unknown' });
    clock.advance(MAX_REQUEST_AGE_MS + 1);
    expect(await inviter.invitationState(inv)).toEqual({ state: 'expired' });
    expect(await servedInvites(inviter)).toEqual([]);
  });

  it('a used invitation leaves the admission list at once: its joiner is a member, and a removal must end its session', async () => {
    const { inviter, joiner, inv } = await requested(testClock());
    expect(await servedInvites(inviter)).toHaveLength(1);
    const j = joiner.view();
    expect((await inviter.admitJoin({ inv, endpoint: hex(j.endpoint), frame: j.frame }, [], [], [])).ok).toBe(true);
    expect(await servedInvites(inviter)).toEqual([]);
    expect(await inviter.invitationState(inv)).toEqual({
      state: 'closed',
      reason: 'this ticket was already used to join',
    });
  });
});
