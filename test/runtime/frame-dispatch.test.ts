/**
 * Frames to their handlers (src/runtime/frame-dispatch.ts), against fakes: consecutive
 * `events` of one peer that continue each other become one ingest, a gap or another sender
 * ends the run, order is kept across kinds, refusals and messages this machine cannot take
 * yet are counted — never thrown — and every frame that opened is remembered as a replay.
 */
import { describe, expect, it } from 'vitest';
import { err, ok } from '../../src/core/result.js';
import type { PeerMessage } from '../../src/core/peer-wire.js';
import { FrameDispatch } from '../../src/runtime/frame-dispatch.js';
import type { MeshStatus } from '../../src/runtime/node-snapshot.js';

type Events = Extract<PeerMessage, { t: 'events' }>;
const events = (after: number, upto: number): Events => ({
  t: 'events',
  after,
  upto,
  events: Array.from({ length: upto - after }, () => new Uint8Array(1)),
});

function fixture(status: MeshStatus = 'member') {
  const log: string[] = [];
  const counts: string[] = [];
  const remembered: string[] = [];
  // Each frame body's first byte picks the message the fake key holder opens it to.
  const messages: (PeerMessage | 'refused')[] = [];
  const dispatch = new FrameDispatch({
    crypto: {
      openMessages: async (frames) =>
        frames.map((f, i) => {
          const m = messages[f.body[0]!]!;
          return m === 'refused'
            ? err({ type: 'UnknownSender' as const })
            : ok({ message: m, frame: `frame-${f.from}`, rid: `rid-${i}`, ts: i });
        }) as never,
      rememberAll: async (seen) => void remembered.push(...seen.map((s) => s.rid)),
    },
    status: () => status,
    roster: {
      addressOf: (endpoint) => ({ endpoint, frame: `bound-${endpoint}` }),
      isPeer: (endpoint) => endpoint !== 'stranger',
      peerAt: (endpoint) =>
        endpoint === 'peer'
          ? {
              signer: 'peer-signer',
              endpoint,
              frame: '',
              name: '',
              role: 'member',
              trusted: false,
              recovery: false,
              removed: false,
            }
          : undefined,
    },
    pairing: async (from, m) => void log.push(`pairing ${m.t} from ${from.endpoint} ${from.frame}`),
    mls: async (signer, m) => void log.push(`mls ${m.t} from ${signer}`),
    state: async (endpoint, m) => {
      const range = m.t === 'events' ? ` ${m.after}..${m.upto}` : '';
      log.push(`state ${m.t}${range} from ${endpoint}`);
    },
    count: (type) => void counts.push(type),
  });
  const frame = (from: string, message: PeerMessage | 'refused') => {
    messages.push(message);
    return { from, body: new Uint8Array([messages.length - 1]) };
  };
  return { dispatch, log, counts, remembered, frame };
}

describe('frame dispatch', () => {
  it('takes consecutive events of one peer in as one, and keeps order across kinds', async () => {
    const f = fixture();
    await f.dispatch.frames([
      f.frame('peer', events(0, 2)),
      f.frame('peer', events(2, 5)),
      f.frame('peer', { t: 'ack', upto: 3 }),
      f.frame('peer', events(5, 6)),
      f.frame('inviter', events(6, 7)),
      f.frame('peer', events(9, 10)),
    ]);
    expect(f.log).toEqual([
      'state events 0..5 from peer',
      'state ack from peer',
      'state events 5..6 from peer',
      'state events 6..7 from inviter',
      'state events 9..10 from peer',
    ]);
    expect(f.remembered).toHaveLength(6);
  });

  it('counts refused frames by reason, remembers only frames that opened, and goes on', async () => {
    const f = fixture();
    await f.dispatch.frames([f.frame('peer', 'refused'), f.frame('peer', { t: 'sweep', after: 0 })]);
    expect(f.counts).toEqual(['UnknownSender']);
    expect(f.log).toEqual(['state sweep from peer']);
    expect(f.remembered).toEqual(['rid-1']);
  });

  it('refuses state and MLS messages from strangers, and before this machine is a member', async () => {
    const f = fixture();
    await f.dispatch.frames([
      f.frame('stranger', { t: 'ack', upto: 1 }),
      f.frame('inviter', { t: 'mls-heads', receipts: [] }),
      f.frame('peer', { t: 'mls-heads', receipts: [] }),
    ]);
    expect(f.counts).toEqual(['UnknownEndpoint', 'UnknownEndpoint']);
    expect(f.log).toEqual(['mls mls-heads from peer-signer']);
    const joining = fixture('joining');
    await joining.dispatch.frames([
      joining.frame('peer', { t: 'ack', upto: 1 }),
      joining.frame('peer', { t: 'mls-heads', receipts: [] }),
    ]);
    expect(joining.counts).toEqual(['NotYetMember', 'NotYetMember']);
    expect(joining.log).toEqual([]);
  });

  it('hands pairing messages on with the key they were sealed with; a challenge only while joining', async () => {
    const challenge = {
      t: 'join-challenge',
      inv: new Uint8Array(1),
      signer: new Uint8Array(1),
      nonce: new Uint8Array(1),
    } as const;
    const member = fixture();
    await member.dispatch.frames([
      member.frame('stranger', { t: 'join-reveal', inv: new Uint8Array(1), nonce: new Uint8Array(1) }),
      member.frame('peer', challenge),
    ]);
    expect(member.log).toEqual(['pairing join-reveal from stranger frame-stranger']);
    expect(member.counts).toEqual(['UnexpectedPairingMessage']);
    const joining = fixture('joining');
    await joining.dispatch.frames([joining.frame('inviter', challenge)]);
    expect(joining.log).toEqual(['pairing join-challenge from inviter frame-inviter']);
  });
});
