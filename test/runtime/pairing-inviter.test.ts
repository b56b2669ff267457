/**
 * The inviting side of pairing against a fake machine (src/runtime/pairing-inviter.ts): what
 * it sends and in which order, default deny on every path, idempotent answers to repeats, and
 * a refusal (with its reason) for every joiner it will not admit.
 */
import { describe, expect, it } from 'vitest';
import { toHex } from '../../src/core/bytes.js';
import { decodeCbor, encodeCbor } from '../../src/core/cbor.js';
import { MAX_REQUEST_AGE_MS } from '../../src/core/frame.js';
import { shortFingerprint } from '../../src/core/identity.js';
import { INVITATION_USED, type InvitationState } from '../../src/core/pairing.js';
import type { PeerMessage } from '../../src/core/peer-wire.js';
import { err, ok } from '../../src/core/result.js';
import {
  DECLINED_HERE,
  InviterCeremony,
  type InviterPort,
  type JoinRequest,
} from '../../src/runtime/pairing-inviter.js';

const b = (n: number, fill: number) => new Uint8Array(n).fill(fill);
const INV = b(16, 1);
const JOINER = { endpoint: toHex(b(32, 2)), frame: toHex(b(32, 3)) };
const SELF = toHex(b(32, 9));
const REQUEST: JoinRequest = {
  t: 'join-request',
  inv: INV,
  signer: b(32, 4),
  endpoint: b(32, 2),
  name: 'field tablet',
  commit: b(32, 5),
};
const reveal = (nonce = b(32, 6)) => ({ t: 'join-reveal' as const, inv: INV, nonce });
const confirm = { t: 'join-confirm' as const, inv: INV, kps: [] };

type Sent = { to: string; message: PeerMessage };

function machine(over: Partial<InviterPort> = {}) {
  const log: string[] = [];
  const sent: Sent[] = [];
  const notices: string[] = [];
  const counts: string[] = [];
  const invitations = new Map<string, InvitationState>([[toHex(INV), { state: 'open' }]]);
  const clock = { now: 1_000_000 };
  const vouches = new Map<string, string[]>();
  const port: InviterPort = {
    crypto: {
      sealMessage: async (_to, message) => encodeCbor(message),
      invitationState: async (inv) => invitations.get(toHex(inv)) ?? { state: 'unknown' },
      closeInvitation: async (inv, reason) => {
        log.push(`close:${reason}`);
        invitations.set(toHex(inv), { state: 'closed', reason });
      },
      // The joiner's nonce opens its commitment unless it is all zeros.
      pairingCode: (p) => (p.joinerNonce.every((x) => x === 0) ? undefined : '123 456'),
      admitJoin: async () => {
        log.push('admitJoin');
        return ok(encodeCbor({ t: 'join-accept' }));
      },
    },
    self: () => SELF,
    isAdmin: () => true,
    anchors: () => [SELF],
    classes: async () => [['device_profiles', 'public']],
    vouchers: async () => vouches,
    vouchThreshold: async () => 2,
    names: () => new Map([['aa'.repeat(32), 'workstation']]),
    sendTo: (to, body) => {
      const message = decodeCbor(body, 10_000);
      if (message.ok) sent.push({ to, message: message.value as PeerMessage });
    },
    pushAdmission: async (joining) => void log.push(joining ? `admission+${joining.slice(0, 4)}` : 'admission'),
    syncKeyring: async () => void log.push('syncKeyring'),
    addJoiner: async () => {
      log.push('addJoiner');
      return ok([]);
    },
    recordMachine: async () => {
      log.push('recordMachine');
      return ok(undefined);
    },
    joined: async () => void log.push('joined'),
    notice: (_kind, text) => void notices.push(text),
    count: (type) => void counts.push(type),
    changed: async () => undefined,
    now: () => clock.now,
    random: (n) => b(n, 7),
    ...over,
  };
  const ceremony = new InviterCeremony(port);
  /** Lets the refusals, sent without waiting, go out. */
  const settle = () => new Promise((resolve) => setTimeout(resolve, 0));
  return { ceremony, log, sent, notices, counts, invitations, clock, vouches, settle };
}

/** Request and reveal: the ceremony waits for both humans. */
async function upToCode(m: ReturnType<typeof machine>) {
  await m.ceremony.request(JOINER, REQUEST);
  await m.ceremony.revealed(JOINER, reveal());
}

const refusalsIn = (sent: readonly Sent[]) =>
  sent.filter((s) => s.message.t === 'join-refused').map((s) => (s.message as { reason: string }).reason);

describe('inviter ceremony', () => {
  it('challenges once per request, shows the code, and admits only when both humans confirmed, in order', async () => {
    const m = machine();
    await m.ceremony.request(JOINER, REQUEST);
    await m.ceremony.request(JOINER, REQUEST); // a repeat: the same challenge
    const challenges = m.sent.filter((s) => s.message.t === 'join-challenge');
    expect(challenges).toHaveLength(2);
    expect(challenges.map((c) => toHex((c.message as { nonce: Uint8Array }).nonce))).toEqual([
      toHex(b(32, 7)),
      toHex(b(32, 7)),
    ]);
    expect(toHex((challenges[0]!.message as { signer: Uint8Array }).signer)).toBe(SELF);
    await m.ceremony.revealed(JOINER, reveal());
    expect(m.ceremony.views(new Map())).toEqual([
      {
        inv: toHex(INV),
        name: 'field tablet',
        fingerprint: shortFingerprint(REQUEST.signer),
        sas: '123 456',
        confirmed: false,
        joinerConfirmed: false,
        vouchedBy: [],
      },
    ]);
    await m.ceremony.joinerConfirmed(JOINER, confirm);
    expect(m.log).toEqual([]); // our human has not confirmed yet
    await m.ceremony.answer(toHex(INV), true);
    // The relay serves the joiner before its MLS add is sequenced; the keys go out last.
    expect(m.log).toEqual([
      `admission+${JOINER.endpoint.slice(0, 4)}`,
      'syncKeyring',
      'addJoiner',
      'admitJoin',
      'recordMachine',
      'admission',
      'joined',
    ]);
    expect(m.sent.at(-1)).toMatchObject({ to: JOINER.endpoint, message: { t: 'join-accept' } });
    expect(m.ceremony.views(new Map())).toEqual([]);
    // The accept was lost and the joiner confirms again: the same accept, nothing admitted twice.
    await m.ceremony.joinerConfirmed(JOINER, confirm);
    expect(m.sent.filter((s) => s.message.t === 'join-accept')).toHaveLength(2);
    expect(m.log.filter((l) => l === 'admitJoin')).toHaveLength(1);
  });

  it('declining here closes the invitation, tells the joiner why, and admits nothing', async () => {
    const m = machine();
    await upToCode(m);
    await m.ceremony.joinerConfirmed(JOINER, confirm);
    await m.ceremony.answer(toHex(INV), false);
    await m.settle();
    expect(m.log).toEqual([`close:${DECLINED_HERE}`, 'admission']);
    expect(refusalsIn(m.sent)).toEqual([DECLINED_HERE]);
    expect(m.ceremony.views(new Map())).toEqual([]);
    // The joiner, not yet told, repeats its request: told again, with the same reason.
    await m.ceremony.request(JOINER, REQUEST);
    await m.settle();
    expect(refusalsIn(m.sent)).toEqual([DECLINED_HERE, DECLINED_HERE]);
    expect(m.notices.filter((n) => n.startsWith('refused'))).toHaveLength(1);
  });

  it('the joiner declining closes the invitation and admits nothing', async () => {
    const m = machine();
    await upToCode(m);
    expect(await m.ceremony.joinerDeclined(JOINER, INV, 'the joining machine declined the pairing code')).toBe(true);
    expect(m.log).toEqual(['close:declined by the joining machine', 'admission']);
    expect(m.notices.at(-1)).toBe('field tablet declined: the joining machine declined the pairing code');
    expect(await m.ceremony.joinerDeclined(JOINER, INV, 'again')).toBe(false);
  });

  it('a nonce that does not open the commitment ends the ceremony', async () => {
    const m = machine();
    await m.ceremony.request(JOINER, REQUEST);
    await m.ceremony.revealed(JOINER, reveal(b(32, 0)));
    await m.settle();
    expect(m.log).toEqual(['close:CommitmentMismatch', 'admission']);
    expect(refusalsIn(m.sent)).toEqual(['CommitmentMismatch']);
  });

  it.each<[string, InvitationState, string]>([
    ['used', { state: 'closed', reason: INVITATION_USED }, INVITATION_USED],
    ['expired', { state: 'expired' }, 'this ticket has expired'],
    ['unknown', { state: 'unknown' }, 'the inviting machine does not know this ticket'],
  ])('refuses a request on a %s ticket with its reason', async (_, state, reason) => {
    const m = machine();
    m.invitations.set(toHex(INV), state);
    await m.ceremony.request(JOINER, REQUEST);
    await m.settle();
    expect(refusalsIn(m.sent)).toEqual([reason]);
    expect(m.ceremony.views(new Map())).toEqual([]);
  });

  it('refuses a request whose endpoint is not its sender, or sent to a machine that is no admin', async () => {
    const m = machine({ isAdmin: () => false });
    await m.ceremony.request({ ...JOINER, endpoint: toHex(b(32, 8)) }, REQUEST);
    await m.ceremony.request(JOINER, REQUEST);
    await m.settle();
    expect(refusalsIn(m.sent)).toEqual(['endpoint does not match the sender', 'this machine is not an admin']);
  });

  it('ignores steps from another endpoint or frame key, and a request with another commitment', async () => {
    const m = machine();
    await m.ceremony.request(JOINER, REQUEST);
    await m.ceremony.request(JOINER, { ...REQUEST, commit: b(32, 0xee) });
    await m.ceremony.revealed({ ...JOINER, frame: toHex(b(32, 0xee)) }, reveal());
    await m.ceremony.joinerConfirmed(JOINER, confirm); // before the code was shown
    expect(m.counts).toEqual(['UnexpectedPairingMessage', 'UnexpectedPairingMessage', 'UnexpectedPairingMessage']);
    expect(m.ceremony.views(new Map())[0]?.sas).toBeUndefined();
  });

  it('takes back the joiner’s admission when adding it to the domains fails', async () => {
    const m = machine({ addJoiner: async () => err({ type: 'MlsFailed', text: 'no key package' }) });
    await upToCode(m);
    await m.ceremony.joinerConfirmed(JOINER, confirm);
    await m.ceremony.answer(toHex(INV), true);
    await m.settle();
    expect(m.log).toEqual([`admission+${JOINER.endpoint.slice(0, 4)}`, 'syncKeyring', 'admission']);
    expect(refusalsIn(m.sent)).toEqual(['MlsFailed: no key package']);
    expect(m.sent.some((s) => s.message.t === 'join-accept')).toBe(false);
  });

  it('admits by vouches only with enough of them, and names who vouched', async () => {
    const m = machine();
    await upToCode(m);
    const fp = shortFingerprint(REQUEST.signer);
    m.vouches.set(fp, ['aa'.repeat(32)]);
    expect(m.ceremony.views(m.vouches)[0]?.vouchedBy).toEqual(['workstation']);
    await expect(m.ceremony.answer(toHex(INV), true, 'vouches')).rejects.toThrow('not enough vouches');
    m.vouches.set(fp, ['aa'.repeat(32), 'bb'.repeat(32)]);
    await m.ceremony.answer(toHex(INV), true, 'vouches');
    await m.ceremony.joinerConfirmed(JOINER, confirm);
    expect(m.log).toContain('joined');
  });

  it('drops a ceremony left unconfirmed for the request window', async () => {
    const m = machine();
    await upToCode(m);
    m.clock.now += MAX_REQUEST_AGE_MS + 1;
    expect(m.ceremony.views(new Map())).toEqual([]);
    await m.ceremony.answer(toHex(INV), true);
    expect(m.log).toEqual([]);
  });
});
