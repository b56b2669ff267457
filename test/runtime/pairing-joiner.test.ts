/**
 * The joining side of pairing against a fake machine and a moved clock
 * (src/runtime/pairing-joiner.ts): it repeats its last step until answered, only while the
 * relay is up, and a refusal from its inviter — and only from its inviter — ends it.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { err, ok } from '../../src/core/result.js';
import { JOIN_RETRY_MS, JoinerCeremony, type JoinerPort } from '../../src/runtime/pairing-joiner.js';

const INVITER = { endpoint: 'ee'.repeat(32), frame: 'ff'.repeat(32) };
const challenge = {
  t: 'join-challenge' as const,
  inv: new Uint8Array(16),
  signer: new Uint8Array(32),
  nonce: new Uint8Array(32),
};

function machine() {
  const sent: string[] = [];
  const notices: string[] = [];
  const counts: string[] = [];
  const state = { online: true, joining: true, abandoned: 0 };
  let changed = 0;
  const text = (s: string) => new TextEncoder().encode(s);
  const port: JoinerPort = {
    crypto: {
      joinRequest: async (name) => ok({ to: INVITER.endpoint, body: text(`request:${name}`) }),
      joinReveal: async () => ok({ sas: '123 456', body: text('reveal') }),
      joinAnswer: async (confirmed, kps) => ok(text(confirmed ? `confirm:${kps?.length ?? 0}` : 'decline')),
    },
    joinOffers: async () => ok([['GENERAL', new Uint8Array(1)] as const]),
    inviter: () => (state.joining ? INVITER : undefined),
    name: () => 'field tablet',
    online: () => state.online,
    sendTo: (to, body) =>
      void sent.push(`${to === INVITER.endpoint ? 'inviter' : to} ${new TextDecoder().decode(body)}`),
    abandon: async () => {
      state.abandoned++;
    },
    notice: (_kind, t) => void notices.push(t),
    count: (type) => void counts.push(type),
    changed: async () => {
      changed++;
    },
  };
  return {
    joiner: new JoinerCeremony(port),
    port,
    sent,
    notices,
    counts,
    state,
    get changed() {
      return changed;
    },
  };
}

describe('joiner ceremony', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it('sends its request and repeats it until challenged, only while the relay is up', async () => {
    const m = machine();
    await m.joiner.start();
    expect(m.sent).toEqual(['inviter request:field tablet']);
    await vi.advanceTimersByTimeAsync(JOIN_RETRY_MS);
    expect(m.sent).toHaveLength(2);
    m.state.online = false;
    await vi.advanceTimersByTimeAsync(3 * JOIN_RETRY_MS);
    expect(m.sent).toHaveLength(2);
    m.state.online = true;
    await m.joiner.challenged(challenge);
    await m.joiner.challenged(challenge); // a repeated challenge: revealed again, shown once
    expect(m.sent.slice(2)).toEqual(['inviter reveal', 'inviter reveal']);
    expect(m.joiner.view).toEqual({ sas: '123 456', answered: false });
    expect(m.notices).toEqual(['compare the pairing code with the inviting machine']);
    // Shown, not yet answered: nothing to repeat.
    await vi.advanceTimersByTimeAsync(2 * JOIN_RETRY_MS);
    expect(m.sent).toHaveLength(4);
    m.joiner.stop();
  });

  it('confirms with its key packages and repeats the confirmation until the keys arrive', async () => {
    const m = machine();
    await m.joiner.start();
    await m.joiner.challenged(challenge);
    await m.joiner.answer(true);
    expect(m.sent.at(-1)).toBe('inviter confirm:1');
    expect(m.joiner.view.answered).toBe(true);
    await vi.advanceTimersByTimeAsync(JOIN_RETRY_MS);
    expect(m.sent.at(-1)).toBe('inviter confirm:1');
    expect(m.sent.filter((s) => s.endsWith('confirm:1'))).toHaveLength(2);
    // Joined: the machine no longer names an inviter, and the repeats stop.
    m.state.joining = false;
    await vi.advanceTimersByTimeAsync(2 * JOIN_RETRY_MS);
    expect(m.sent.filter((s) => s.endsWith('confirm:1'))).toHaveLength(2);
  });

  it('declining tells the inviter and gives the join up', async () => {
    const m = machine();
    await m.joiner.start();
    await m.joiner.challenged(challenge);
    await m.joiner.answer(false);
    expect(m.sent.at(-1)).toBe('inviter decline');
    expect(m.state.abandoned).toBe(1);
    m.joiner.stop();
  });

  it('a refusal from its inviter ends the ceremony and the repeats; from anyone else it is counted and ignored', async () => {
    const m = machine();
    await m.joiner.start();
    m.joiner.refused('aa'.repeat(32), 'forged');
    expect(m.counts).toEqual(['UnexpectedPairingMessage']);
    expect(m.joiner.view.refused).toBeUndefined();
    m.joiner.refused(INVITER.endpoint, 'this ticket was already used to join');
    m.joiner.refused(INVITER.endpoint, 'a second answer changes nothing');
    expect(m.joiner.view.refused).toBe('this ticket was already used to join');
    expect(m.notices).toEqual(['join refused: this ticket was already used to join']);
    const before = m.sent.length;
    await vi.advanceTimersByTimeAsync(3 * JOIN_RETRY_MS);
    expect(m.sent).toHaveLength(before);
    // A late challenge changes nothing: no reveal, no answer goes out.
    await m.joiner.challenged(challenge);
    await m.joiner.answer(true);
    expect(m.sent).toHaveLength(before);
    expect(m.joiner.view.refused).toBe('this ticket was already used to join');
  });

  it('a step that fails — thrown or returned — is shown once, and the ceremony goes on repeating it', async () => {
    const m = machine();
    const fails: (() => never)[] = [
      // WebKitGTK's WebCrypto failing a key draw, as it reaches the page through the worker.
      () => {
        throw Object.assign(new Error('The operation failed for an operation-specific reason'), {
          name: 'OperationError',
        });
      },
      () => {
        throw Object.assign(new Error('The operation failed for an operation-specific reason'), {
          name: 'OperationError',
        });
      },
    ];
    const request = m.port.crypto.joinRequest;
    m.port.crypto.joinRequest = async (name) => {
      const fail = fails.shift();
      if (fail) fail();
      return request(name);
    };
    await m.joiner.start();
    expect(m.sent).toEqual([]);
    expect(m.notices).toEqual([
      'join: OperationError: The operation failed for an operation-specific reason (trying again)',
    ]);
    expect(m.changed).toBe(1);
    await vi.advanceTimersByTimeAsync(JOIN_RETRY_MS);
    expect(m.notices).toHaveLength(1); // the same failure again is not shown twice
    await vi.advanceTimersByTimeAsync(JOIN_RETRY_MS);
    expect(m.sent).toEqual(['inviter request:field tablet']);
    // An error the step returns is shown the same way; a challenge's reveal is tried again with the next challenge.
    const reveal = m.port.crypto.joinReveal;
    m.port.crypto.joinReveal = async () => err({ type: 'InviterMismatch' as const });
    await m.joiner.challenged(challenge);
    expect(m.notices.at(-1)).toBe('join: InviterMismatch (trying again)');
    expect(m.joiner.view.sas).toBeUndefined();
    m.port.crypto.joinReveal = reveal;
    await m.joiner.challenged(challenge);
    expect(m.joiner.view.sas).toBe('123 456');
    // The human's answer that fails stays unanswered: they can answer again.
    m.port.joinOffers = async () => {
      throw new Error('worker restarted');
    };
    await m.joiner.answer(true);
    expect(m.notices.at(-1)).toBe('join: Error: worker restarted (answer again)');
    expect(m.joiner.view.answered).toBe(false);
    m.joiner.stop();
  });
});
