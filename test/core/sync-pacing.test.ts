/**
 * The batch cycle's re-offer pacing: a peer that never acknowledges (offline for
 * days; the relay keeps its mailbox) gets geometrically fewer copies of the same
 * batch, and pacing resets as soon as its cursor moves.
 */
import { describe, expect, it } from 'vitest';
import { SyncEngine, MAX_RESEND_BACKOFF, type DeliveryMessage } from '../../src/core/sync.js';
import { makeMachine, makeMesh } from '../helpers/deterministic.js';

async function silentPeerSetup() {
  const mesh = makeMesh('pacing');
  const a = makeMachine('A', 'pacing/A', mesh);
  mesh.anchors.push(a.id);
  const sent: DeliveryMessage[] = [];
  const engine = new SyncEngine(a.replica, a.store, { send: async (_peer, m) => void sent.push(m) });
  engine.setPeers(['peer-b']);
  const written = await a.replica.write('device_profiles', 'r1', { name: 'x' });
  expect(written.ok).toBe(true);
  await engine.connected();
  return { a, engine, sent };
}

describe('re-offer pacing', () => {
  it('sends geometrically fewer copies to a peer that never acknowledges', async () => {
    const { engine, sent } = await silentPeerSetup();
    expect(sent).toHaveLength(1);
    const cycles = 200;
    for (let i = 0; i < cycles; i++) await engine.resend();
    const copies = sent.length - 1;
    // 1, 2, 4, … 32 cycles apart: about log2(32) + (200 - 63) / 32 ≈ 11 copies, never one per cycle.
    expect(copies).toBeGreaterThan(5);
    expect(copies).toBeLessThan(cycles / 8);
    expect(sent.every((m) => m.t === 'events' && m.upto === 1)).toBe(true);
  });

  it('resets to every cycle as soon as the peer acknowledges', async () => {
    const { a, engine, sent } = await silentPeerSetup();
    for (let i = 0; i < 3 * MAX_RESEND_BACKOFF; i++) await engine.resend();
    await engine.receive('peer-b', { t: 'ack', upto: 1 });
    await a.replica.write('device_profiles', 'r2', { name: 'y' });
    sent.length = 0;
    await engine.resend();
    await engine.resend();
    expect(sent.filter((m) => m.t === 'events')).toHaveLength(2);
  });
});

describe('pipelined offers and contiguous acknowledgements', () => {
  it('fills an absent peer’s mailbox with many batches, not one', async () => {
    const mesh = makeMesh('pipeline');
    const a = makeMachine('A', 'pipeline/A', mesh, { fastSignatures: true });
    mesh.anchors.push(a.id);
    for (let i = 0; i < 600; i++) await a.replica.write('device_profiles', `r${i}`, { name: `n${i}` });
    const sent: DeliveryMessage[] = [];
    const engine = new SyncEngine(a.replica, a.store, { send: async (_peer, m) => void sent.push(m) });
    engine.setPeers(['peer-b']);
    await engine.connected();
    const batches = sent.filter((m) => m.t === 'events');
    expect(batches.length).toBeGreaterThanOrEqual(3);
    expect(batches.map((m) => [m.after, m.upto])).toEqual(
      batches.map((m, i) => [i === 0 ? 0 : batches[i - 1]!.upto, m.upto]),
    );
    expect(batches.at(-1)!.upto).toBe(600);
  });

  it('a receiver that lost the first batch acks nothing past the gap, and both batches once it fills', async () => {
    const mesh = makeMesh('gap');
    const a = makeMachine('A', 'gap/A', mesh, { fastSignatures: true });
    const b = makeMachine('B', 'gap/B', mesh, { fastSignatures: true });
    mesh.anchors.push(a.id);
    for (let i = 0; i < 300; i++) await a.replica.write('device_profiles', `r${i}`, { name: `n${i}` });
    const toB: DeliveryMessage[] = [];
    const sender = new SyncEngine(a.replica, a.store, { send: async (_p, m) => void toB.push(m) });
    sender.setPeers(['B']);
    await sender.connected();
    const acks: number[] = [];
    const receiver = new SyncEngine(b.replica, b.store, {
      send: async (_p, m) => {
        if (m.t === 'ack') acks.push(m.upto);
      },
    });
    const [first, second] = toB as [DeliveryMessage, DeliveryMessage];
    await receiver.receive('A', second); // the first batch was lost
    expect(acks).toEqual([0]);
    await receiver.receive('A', first);
    // The second batch was applied already: the watermark passes it with the first, unsent again.
    expect(acks).toEqual([0, second.t === 'events' ? second.upto : -1]);
    expect(await b.store.watermark('A')).toBe(await a.store.lastPos());
  });
});
