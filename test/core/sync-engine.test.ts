/**
 * The delivery engine (core/sync.ts) driven message by message, every frame it sends recorded:
 * peers, online and offline, the exact re-offer pacing and ask-again cadence, which lanes reach
 * which peer (and never a peer's own events), frames split at the byte bound, receiving
 * (seen, contiguous, past a gap), acks, `want`, `sweep` and `resent` with the sweep's durable
 * progress, and rejections counted by reason. Convergence over a network is tested elsewhere
 * (replica.test.ts, sync-manifest.test.ts); this pins what one engine says and when.
 */
import { describe, expect, it } from 'vitest';
import { encodeCbor } from '../../src/core/cbor.js';
import type { PrivacyClass } from '../../src/core/sync-manifest.js';
import { manifestPolicy } from '../../src/core/sync-manifest.js';
import {
  isDeliveryMessage,
  joinEvents,
  SyncEngine,
  type DeliveryMessage,
  type SyncListener,
} from '../../src/core/sync.js';
import type { PeerMessage } from '../../src/core/peer-wire.js';
import type { LogEntry } from '../../src/core/store.js';
import { MemoryReplicaStore } from '../../src/storage/memory-store.js';
import { makeMachine, makeMesh, type Machine } from '../helpers/deterministic.js';

const SWEEP_DONE = Number.MAX_SAFE_INTEGER;

/**
 * A founder machine and an engine recording what it sends. Its tables are public, or with
 * `manifest`, follow the mesh's sync manifest (a table is local until the manifest names it).
 */
function setup(seed: string, listener: SyncListener = {}, manifest = false) {
  const mesh = makeMesh(seed);
  let self = '';
  const trust = {
    get self() {
      return self;
    },
    anchors: () => mesh.anchors,
  };
  const privacy = manifestPolicy(trust, () => ({ narrowing: new Map<string, PrivacyClass>(), provisional: new Map() }));
  const a = makeMachine('A', `${seed}/A`, mesh, { fastSignatures: true, ...(manifest ? { privacy } : {}) });
  self = a.id;
  mesh.anchors.push(a.id);
  const sent: [string, DeliveryMessage][] = [];
  const engine = new SyncEngine(a.replica, a.store, { send: async (peer, m) => void sent.push([peer, m]) }, listener);
  return { mesh, a, sent, engine };
}

async function write(m: Machine, table: string, row: string, cols: Record<string, string | number | boolean>) {
  const result = await m.replica.write(table, row, cols);
  if (!result.ok) throw new Error(`write refused: ${result.error.type}`);
}

/**
 * A store whose log holds stand-in envelopes of exactly these sizes (the engine forwards
 * envelopes unread, so their bytes do not matter), for the byte bound's exact edge.
 */
class SizedLog extends MemoryReplicaStore {
  readonly #entries: LogEntry[];

  constructor(sizes: readonly number[], lane?: 'trusted') {
    super();
    this.#entries = sizes.map((n, i) => ({
      pos: i + 1,
      outerId: `stand-in-${i + 1}`,
      domain: 'GENERAL',
      sealed: new Uint8Array(n).fill(i + 1),
      ...(lane ? { lane } : {}),
    }));
  }

  override async sealedAfter(after: number, through: number, limit: number): Promise<LogEntry[]> {
    return this.#entries.filter((e) => e.pos > after && e.pos <= through).slice(0, limit);
  }

  override async laneAfter(lane: 'trusted' | 'local', after: number, through: number, limit: number) {
    return (await this.sealedAfter(after, through, limit)).filter((e) => e.lane === lane);
  }

  override async lastPos(): Promise<number> {
    return this.#entries.length;
  }
}

const eventsTo = (sent: [string, DeliveryMessage][], peer: string) =>
  sent
    .filter(([p, m]) => p === peer && m.t === 'events')
    .map(([, m]) => m as Extract<DeliveryMessage, { t: 'events' }>);

describe('peers and the connection', () => {
  it('replaces its set of peers', () => {
    const { engine } = setup('peers');
    engine.setPeers(['p1', 'p2']);
    expect(engine.peers).toEqual(['p1', 'p2']);
    engine.setPeers(['p2', 'p3']);
    expect([...engine.peers].sort()).toEqual(['p2', 'p3']);
    engine.setPeers([]);
    expect(engine.peers).toEqual([]);
  });

  it('offers nothing while offline, from the cursor once connected, and nothing after a disconnect', async () => {
    const { a, sent, engine } = setup('online');
    engine.setPeers(['p']);
    await write(a, 'device_profiles', 'r1', { name: 'one' });
    await engine.offerAll();
    await engine.resend();
    expect(sent).toEqual([]);
    await engine.connected();
    expect(eventsTo(sent, 'p').map((m) => [m.after, m.upto, m.events.length])).toEqual([[0, 1, 1]]);
    engine.disconnected();
    sent.length = 0;
    await write(a, 'device_profiles', 'r2', { name: 'two' });
    await engine.offerAll();
    await engine.resend(true);
    expect(sent).toEqual([]);
    // Connected again: what was in flight is forgotten, so everything unacknowledged is offered.
    await engine.connected();
    expect(eventsTo(sent, 'p').map((m) => [m.after, m.upto, m.events.length])).toEqual([[0, 2, 2]]);
  });

  it('offers only what is new in realtime, and tops up after an ack', async () => {
    const { a, sent, engine } = setup('realtime');
    engine.setPeers(['p']);
    await engine.connected();
    await write(a, 'device_profiles', 'r1', { name: 'one' });
    await engine.offerAll();
    await write(a, 'device_profiles', 'r2', { name: 'two' });
    await engine.offerAll();
    expect(eventsTo(sent, 'p').map((m) => [m.after, m.upto])).toEqual([
      [0, 1],
      [1, 2],
    ]);
    expect(await a.store.cursor('p')).toBe(0);
    await engine.receive('p', { t: 'ack', upto: 2 });
    expect(await a.store.cursor('p')).toBe(2);
    // An ack frees room in the window: what was written since is offered at once.
    sent.length = 0;
    await write(a, 'device_profiles', 'r2b', { name: 'two b' });
    await engine.receive('p', { t: 'ack', upto: 2 });
    expect(eventsTo(sent, 'p').map((m) => [m.after, m.upto])).toEqual([[2, 3]]);
    // An ack from a machine that is not a peer moves its cursor but offers it nothing.
    sent.length = 0;
    await write(a, 'device_profiles', 'r3', { name: 'three' });
    await engine.receive('stranger', { t: 'ack', upto: 1 });
    expect(await a.store.cursor('stranger')).toBe(1);
    expect(eventsTo(sent, 'stranger')).toEqual([]);
  });
});

describe('the batch cycle', () => {
  it('re-offers to a silent peer 1, 2, 4 … 32 cycles apart, and to every peer at once when forced', async () => {
    const { a, sent, engine } = setup('pacing');
    engine.setPeers(['p']);
    await write(a, 'device_profiles', 'r1', { name: 'x' });
    await engine.connected();
    const offeredAt: number[] = [];
    for (let cycle = 1; cycle <= 70; cycle++) {
      sent.length = 0;
      await engine.resend();
      if (eventsTo(sent, 'p').length > 0) offeredAt.push(cycle);
    }
    expect(offeredAt).toEqual([1, 2, 4, 8, 16, 32, 64]);
    sent.length = 0;
    await engine.resend(true);
    expect(eventsTo(sent, 'p')).toHaveLength(1);
  });

  it('sends at most 16 frames per offer; the next offer goes on from there', async () => {
    const { a, sent, engine } = setup('window');
    engine.setPeers(['p']);
    // 17 frames' worth of events (256 per frame).
    for (let i = 0; i < 17 * 256; i++) await write(a, 'device_profiles', `r${i}`, { name: `${i}` });
    await engine.connected();
    const first = eventsTo(sent, 'p');
    expect(first.map((m) => m.events.length)).toEqual(new Array(16).fill(256));
    expect(first.at(-1)!.upto).toBe(16 * 256);
    sent.length = 0;
    await engine.offerAll();
    expect(eventsTo(sent, 'p').map((m) => [m.after, m.upto])).toEqual([[16 * 256, 17 * 256]]);
  });

  it('keeps at most 16,384 events in flight to a peer until it acknowledges some', async () => {
    const { a, sent, engine } = setup('in-flight');
    engine.setPeers(['p']);
    for (let i = 0; i < 16_384 + 256; i++) await write(a, 'device_profiles', `r${i}`, { name: `${i}` });
    await engine.connected();
    for (let i = 0; i < 4; i++) await engine.offerAll();
    expect(eventsTo(sent, 'p').at(-1)!.upto).toBe(16_384);
    sent.length = 0;
    await engine.offerAll();
    expect(sent).toEqual([]);
    await engine.receive('p', { t: 'ack', upto: 256 });
    expect(eventsTo(sent, 'p').map((m) => [m.after, m.upto])).toEqual([[16_384, 16_640]]);
  });

  it('re-offers every cycle while the peer moves, and not at all to a peer that has everything', async () => {
    const { a, sent, engine } = setup('moving');
    engine.setPeers(['p']);
    await engine.connected();
    for (let i = 1; i <= 4; i++) {
      await write(a, 'device_profiles', `r${i}`, { name: 'x' });
      await engine.receive('p', { t: 'ack', upto: i - 1 });
      sent.length = 0;
      await engine.resend();
      expect(eventsTo(sent, 'p').map((m) => m.after)).toEqual([i - 1]);
    }
    await engine.receive('p', { t: 'ack', upto: 4 });
    sent.length = 0;
    for (let i = 0; i < 4; i++) await engine.resend();
    expect(eventsTo(sent, 'p')).toEqual([]);
    // Idle cycles are no silence: something new is offered on the very next cycle.
    await write(a, 'device_profiles', 'r5', { name: 'x' });
    await engine.resend();
    expect(eventsTo(sent, 'p').map((m) => [m.after, m.upto])).toEqual([[4, 5]]);
  });

  it('asks again on connect, every fourth cycle and when forced; only when online with peers', async () => {
    const { sent, engine } = setup('ask', { trustGrant: () => Promise.resolve('grant-1') });
    const sweeps = () => sent.filter(([, m]) => m.t === 'sweep').map(([p, m]) => [p, m]);
    await engine.askAgain();
    engine.setPeers(['p', 'q']);
    await engine.askAgain();
    expect(sent).toEqual([]);
    await engine.connected();
    expect(sweeps()).toEqual([
      ['p', { t: 'sweep', after: 0 }],
      ['q', { t: 'sweep', after: 0 }],
    ]);
    const askedAt: number[] = [];
    for (let cycle = 1; cycle <= 12; cycle++) {
      sent.length = 0;
      await engine.resend();
      if (sweeps().length > 0) askedAt.push(cycle);
    }
    expect(askedAt).toEqual([4, 8, 12]);
    sent.length = 0;
    await engine.resend(true);
    expect(sweeps()).toHaveLength(2);
    engine.setPeers([]);
    sent.length = 0;
    await engine.askAgain();
    expect(sent).toEqual([]);
  });
});

describe('what each peer is offered', () => {
  async function lanes() {
    const trusted = new Set(['t']);
    const s = setup(
      'lanes',
      { trusted: (peer) => trusted.has(peer), signerOf: (peer) => (peer === 'self' ? s.a.id : undefined) },
      true,
    );
    const { a, engine } = s;
    await write(a, 'sync_manifest', 'device_profiles', { class: 'trusted' });
    await write(a, 'device_profiles', 'secret', { name: 'TRUSTED' });
    await write(a, 'settings', 'vouch_k', { value: 4 });
    engine.setPeers(['p', 't', 'self']);
    await engine.connected();
    return s;
  }

  it('a trusted-lane entry only to a trusted peer; every position covered either way', async () => {
    const { a, sent } = await lanes();
    const last = await a.store.lastPos();
    const [toP] = eventsTo(sent, 'p');
    const [toT] = eventsTo(sent, 't');
    expect([toP!.after, toP!.upto, toT!.after, toT!.upto]).toEqual([0, last, 0, last]);
    expect(toT!.events).toHaveLength(last);
    expect(toP!.events).toHaveLength(last - 1);
    const trustedEntry = (await a.store.entriesAfter(0, 100)).find((e) => e.lane === 'trusted')!;
    expect(toP!.events.some((e) => encodeCbor(e).join() === encodeCbor(trustedEntry.sealed).join())).toBe(false);
    expect(toT!.events.some((e) => encodeCbor(e).join() === encodeCbor(trustedEntry.sealed).join())).toBe(true);
  });

  it('never a peer’s own events: a frame without envelopes passes its watermark over them', async () => {
    const { a, sent } = await lanes();
    expect(eventsTo(sent, 'self').map((m) => [m.after, m.upto, m.events.length])).toEqual([
      [0, await a.store.lastPos(), 0],
    ]);
  });

  it('never a local-lane entry, not even to a trusted peer', async () => {
    const { a, sent, engine } = await lanes();
    await write(a, 'sync_manifest', 'device_profiles', { class: 'local' });
    await write(a, 'device_profiles', 'here', { name: 'LOCAL' });
    const last = await a.store.lastPos();
    const local = (await a.store.entriesAfter(0, 100)).find((e) => e.lane === 'local')!;
    expect(local.pos).toBe(last);
    sent.length = 0;
    await engine.offerAll();
    const [toT] = eventsTo(sent, 't');
    expect(toT!.upto).toBe(last);
    expect(toT!.events).toHaveLength(1); // the manifest change, not the local row
  });

  it('splits frames at the byte bound, never leaving one empty', async () => {
    const { a, sent, engine } = setup('bytes');
    engine.setPeers(['p']);
    // Events near the 64 KiB body bound: four columns of 15,000 characters each.
    const big = 'x'.repeat(15_000);
    for (let i = 0; i < 15; i++) {
      await write(a, 'device_profiles', `r${i}`, { name: big, location: big, schedule: big, notes: big.slice(i) });
    }
    await engine.connected();
    const sizes = (await a.store.entriesAfter(0, 100)).map((e) => e.sealed.length);
    // The expected split: as many entries as fit in 768 KiB, then the rest.
    const frames: number[] = [];
    let count = 0;
    let bytes = 0;
    for (const size of sizes) {
      if (count > 0 && bytes + size > 768 * 1024) {
        frames.push(count);
        count = 0;
        bytes = 0;
      }
      count++;
      bytes += size;
    }
    frames.push(count);
    expect(frames.length).toBeGreaterThan(1);
    const batches = eventsTo(sent, 'p');
    expect(batches.map((m) => m.events.length)).toEqual(frames);
    expect(batches.map((m) => m.upto)).toEqual(frames.map((_, i) => frames.slice(0, i + 1).reduce((x, y) => x + y)));
    expect(batches.every((m) => m.events.reduce((n, e) => n + e.length, 0) <= 768 * 1024)).toBe(true);
  });
});

describe('receiving', () => {
  it('applies a batch once, acks what is durable, and a batch past a gap only once the gap fills', async () => {
    const s = setup('receive-a');
    const r = setup('receive-b');
    await write(s.a, 'device_profiles', 'r1', { name: 'one' });
    await write(s.a, 'device_profiles', 'r2', { name: 'two' });
    const [first, second] = (await s.a.store.entriesAfter(0, 10)).map((e) => e.sealed);
    const applied: number[] = [];
    const receiver = new SyncEngine(
      r.a.replica,
      r.a.store,
      { send: async (p, m) => void r.sent.push([p, m]) },
      {
        onApplied: (outcomes) => applied.push(outcomes.length),
      },
    );
    const acks = () => r.sent.filter(([, m]) => m.t === 'ack').map(([, m]) => (m as { upto: number }).upto);
    await receiver.receive(s.a.id, { t: 'events', after: 1, upto: 2, events: [second!] });
    expect(acks()).toEqual([0]);
    await receiver.receive(s.a.id, { t: 'events', after: 0, upto: 1, events: [first!] });
    expect(acks()).toEqual([0, 2]);
    // The same batch again: already covered, nothing ingested, the same ack.
    await receiver.receive(s.a.id, { t: 'events', after: 0, upto: 1, events: [first!] });
    expect(acks()).toEqual([0, 2, 2]);
    expect(applied).toEqual([1, 1, 0]);
  });

  it('passes batches applied ahead once the gap before them fills, and no further', async () => {
    const s = setup('ahead-a');
    const r = setup('ahead-b');
    for (let i = 1; i <= 6; i++) await write(s.a, 'device_profiles', `r${i}`, { name: `n${i}` });
    const sealed = (await s.a.store.entriesAfter(0, 10)).map((e) => e.sealed);
    const batch = (after: number, upto: number) =>
      ({ t: 'events', after, upto, events: sealed.slice(after, upto) }) as const;
    const receiver = new SyncEngine(r.a.replica, r.a.store, { send: async (p, m) => void r.sent.push([p, m]) });
    const acks = () => r.sent.filter(([, m]) => m.t === 'ack').map(([, m]) => (m as { upto: number }).upto);
    await receiver.receive(s.a.id, batch(2, 3));
    await receiver.receive(s.a.id, batch(3, 4));
    await receiver.receive(s.a.id, batch(5, 6));
    expect(acks()).toEqual([0, 0, 0]);
    await receiver.receive(s.a.id, batch(0, 2));
    expect(acks()).toEqual([0, 0, 0, 4]);
    await receiver.receive(s.a.id, batch(4, 5));
    expect(acks()).toEqual([0, 0, 0, 4, 6]);
    expect(await r.a.store.watermark(s.a.id)).toBe(6);
  });

  it('passes batches applied ahead that arrived out of order, each one reaching the next', async () => {
    const s = setup('ahead-order-a');
    const r = setup('ahead-order-b');
    for (let i = 1; i <= 4; i++) await write(s.a, 'device_profiles', `r${i}`, { name: `n${i}` });
    const sealed = (await s.a.store.entriesAfter(0, 10)).map((e) => e.sealed);
    const batch = (after: number, upto: number) =>
      ({ t: 'events', after, upto, events: sealed.slice(after, upto) }) as const;
    const receiver = new SyncEngine(r.a.replica, r.a.store, { send: async (p, m) => void r.sent.push([p, m]) });
    await receiver.receive(s.a.id, batch(3, 4));
    await receiver.receive(s.a.id, batch(2, 3));
    await receiver.receive(s.a.id, batch(0, 2));
    expect(await r.a.store.watermark(s.a.id)).toBe(4);
  });

  it('forgets the batches it passed: they take no room from those still ahead of a gap', async () => {
    const s = setup('ahead-forget');
    const acks: number[] = [];
    const receiver = new SyncEngine(s.a.replica, s.a.store, {
      send: async (_p, m) => {
        if (m.t === 'ack') acks.push(m.upto);
      },
    });
    const empty = (after: number, upto: number) => ({ t: 'events', after, upto, events: [] }) as const;
    // (5, 6] waits behind a gap; (1, 2] is passed once (0, 1] arrives, and forgotten.
    await receiver.receive('x', empty(5, 6));
    await receiver.receive('x', empty(1, 2));
    await receiver.receive('x', empty(0, 1));
    expect(acks.at(-1)).toBe(2);
    // 1,023 more batches ahead fill the 1,024 remembered with (5, 6] still among them.
    for (let i = 6; i < 6 + 1023; i++) await receiver.receive('x', empty(i, i + 1));
    await receiver.receive('x', empty(2, 5));
    expect(acks.at(-1)).toBe(6 + 1023);
  });

  it('remembers no batch ahead that parking could not take: the watermark waits for it', async () => {
    const s = setup('deferred');
    const r = makeMachine('R', 'deferred/R', s.mesh, { fastSignatures: true, maxParked: 0 });
    for (let i = 1; i <= 3; i++) await write(s.a, 'device_profiles', `r${i}`, { name: `n${i}` });
    const sealed = (await s.a.store.entriesAfter(0, 10)).map((e) => e.sealed);
    const acks: number[] = [];
    const outcomes: string[] = [];
    const receiver = new SyncEngine(
      r.replica,
      r.store,
      {
        send: async (_p, m) => {
          if (m.t === 'ack') acks.push(m.upto);
        },
      },
      { onApplied: (all) => outcomes.push(...all.map((o) => o.type)) },
    );
    // Past a gap the event would park (its chain waits for seq 2), and parking is full: deferred.
    await receiver.receive(s.a.id, { t: 'events', after: 2, upto: 3, events: [sealed[2]!] });
    await receiver.receive(s.a.id, { t: 'events', after: 0, upto: 2, events: sealed.slice(0, 2) });
    expect(outcomes).toEqual(['Deferred', 'Applied', 'Applied']);
    // The gap filled, but the deferred batch was not applied: the watermark stops before it.
    expect(acks).toEqual([0, 2]);
    expect(await r.store.watermark(s.a.id)).toBe(2);
  });

  it('counts rejections by reason and tells the listener', async () => {
    const s = setup('reject-a');
    const r = setup('reject-b');
    await write(s.a, 'device_profiles', 'r1', { name: 'one' });
    const [sealed] = (await s.a.store.entriesAfter(0, 10)).map((e) => e.sealed);
    const tamper = (at: number) => {
      const copy = sealed!.slice();
      copy[at]! ^= 1;
      return copy;
    };
    const rejected: [string, string][] = [];
    const outcomes: string[] = [];
    const receiver = new SyncEngine(
      r.a.replica,
      r.a.store,
      { send: async () => undefined },
      {
        onRejected: (peer, error) => rejected.push([peer, error.type]),
        onApplied: (all) => outcomes.push(...all.map((o) => o.type)),
      },
    );
    const bad = [tamper(sealed!.length - 1), tamper(sealed!.length - 2), tamper(sealed!.length - 3)];
    await receiver.receive('x', { t: 'events', after: 0, upto: 3, events: bad });
    const rejections = outcomes.filter((o) => o === 'Rejected').length;
    expect(rejections).toBeGreaterThanOrEqual(1);
    expect(rejected).toHaveLength(rejections);
    expect(rejected.every(([p]) => p === 'x')).toBe(true);
    const byType = new Map<string, number>();
    for (const [, type] of rejected) byType.set(type, (byType.get(type) ?? 0) + 1);
    expect(new Map(receiver.rejections)).toEqual(byType);
  });
});

describe('asking again', () => {
  it('answers `want` with the envelopes the peer may hold', async () => {
    const trusted = new Set<string>();
    const { a, sent, engine } = setup('want', { trusted: (p) => trusted.has(p) }, true);
    await write(a, 'sync_manifest', 'device_profiles', { class: 'trusted' });
    await write(a, 'device_profiles', 'secret', { name: 'TRUSTED' });
    const entries = await a.store.entriesAfter(0, 10);
    const ids = entries.map((e) => e.outerId);
    await engine.receive('p', { t: 'want', ids });
    expect(sent).toEqual([['p', { t: 'resent', events: [entries[0]!.sealed], sweep: false, next: 0, done: true }]]);
    trusted.add('p');
    sent.length = 0;
    await engine.receive('p', { t: 'want', ids });
    expect(sent).toEqual([
      ['p', { t: 'resent', events: entries.map((e) => e.sealed), sweep: false, next: 0, done: true }],
    ]);
    sent.length = 0;
    await engine.receive('p', { t: 'want', ids: ['0'.repeat(64)] });
    expect(sent).toEqual([]);
  });

  it('answers `sweep` with the trusted lane, only to a peer trusted here', async () => {
    const trusted = new Set<string>();
    const { a, sent, engine } = setup('sweep', { trusted: (p) => trusted.has(p) }, true);
    await write(a, 'sync_manifest', 'device_profiles', { class: 'trusted' });
    await write(a, 'device_profiles', 's1', { name: 'one' });
    await write(a, 'settings', 'vouch_k', { value: 4 });
    await write(a, 'device_profiles', 's2', { name: 'two' });
    const lane = (await a.store.entriesAfter(0, 10)).filter((e) => e.lane === 'trusted');
    const last = await a.store.lastPos();
    await engine.receive('p', { t: 'sweep', after: 1 });
    expect(sent).toEqual([['p', { t: 'resent', events: [], sweep: true, next: 1, done: false }]]);
    trusted.add('p');
    sent.length = 0;
    await engine.receive('p', { t: 'sweep', after: 0 });
    expect(sent).toEqual([
      ['p', { t: 'resent', events: lane.map((e) => e.sealed), sweep: true, next: last, done: true }],
    ]);
    sent.length = 0;
    await engine.receive('p', { t: 'sweep', after: lane[0]!.pos });
    expect(sent).toEqual([['p', { t: 'resent', events: [lane[1]!.sealed], sweep: true, next: last, done: true }]]);
  });

  it('cuts a sweep page at the byte bound, and says where the next one starts', async () => {
    const { a, sent, engine } = setup('sweep-bytes', { trusted: () => true }, true);
    await write(a, 'sync_manifest', 'device_profiles', { class: 'trusted' });
    const big = 'x'.repeat(15_000);
    for (let i = 0; i < 15; i++) {
      await write(a, 'device_profiles', `r${i}`, { name: big, location: big, schedule: big, notes: big.slice(i) });
    }
    const lane = (await a.store.entriesAfter(0, 100)).filter((e) => e.lane === 'trusted');
    let fit = 0;
    let bytes = 0;
    while (fit < lane.length && (fit === 0 || bytes + lane[fit]!.sealed.length <= 768 * 1024)) {
      bytes += lane[fit]!.sealed.length;
      fit++;
    }
    expect(fit).toBeLessThan(lane.length);
    await engine.receive('p', { t: 'sweep', after: 0 });
    const [[, page]] = sent as [[string, Extract<DeliveryMessage, { t: 'resent' }>]];
    expect(page.events).toEqual(lane.slice(0, fit).map((e) => e.sealed));
    expect([page.next, page.done]).toEqual([lane[fit - 1]!.pos, false]);
  });

  it('fills a frame and a sweep page to exactly 768 KiB, and not one byte more', async () => {
    const KiB = 1024;
    for (const [sizes, frames] of [
      [
        [512 * KiB, 256 * KiB, 1],
        [2, 1],
      ],
      [
        [512 * KiB, 256 * KiB + 1, 1],
        [1, 2],
      ],
    ] as const) {
      const sent: [string, DeliveryMessage][] = [];
      const replica = setup('edge').a.replica;
      const channel = { send: async (peer: string, m: DeliveryMessage) => void sent.push([peer, m]) };
      const sender = new SyncEngine(replica, new SizedLog(sizes), channel);
      sender.setPeers(['p']);
      await sender.connected();
      expect(eventsTo(sent, 'p').map((m) => m.events.length)).toEqual(frames);
      sent.length = 0;
      const sweeper = new SyncEngine(replica, new SizedLog(sizes, 'trusted'), channel, { trusted: () => true });
      await sweeper.receive('p', { t: 'sweep', after: 0 });
      const [[, page]] = sent as [[string, Extract<DeliveryMessage, { t: 'resent' }>]];
      expect([page.events.length, page.next]).toEqual([frames[0], frames[0]]);
    }
  });

  it('answers a long `want` and a long sweep in frames of 256, a sweep page saying where it stopped', async () => {
    const { a, sent, engine } = setup('long', { trusted: () => true }, true);
    await write(a, 'sync_manifest', 'device_profiles', { class: 'trusted' });
    for (let i = 0; i < 300; i++) await write(a, 'device_profiles', `r${i}`, { name: `${i}` });
    const lane = (await a.store.entriesAfter(0, 400)).filter((e) => e.lane === 'trusted');
    expect(lane).toHaveLength(300);
    await engine.receive('p', { t: 'want', ids: lane.map((e) => e.outerId) });
    expect(sent.map(([, m]) => (m as { readonly events: readonly Uint8Array[] }).events.length)).toEqual([256, 44]);
    expect(sent.flatMap(([, m]) => (m as { readonly events: readonly Uint8Array[] }).events)).toEqual(
      lane.map((e) => e.sealed),
    );
    sent.length = 0;
    await engine.receive('p', { t: 'sweep', after: 0 });
    const [[, page]] = sent as [[string, Extract<DeliveryMessage, { t: 'resent' }>]];
    expect(page.events).toEqual(lane.slice(0, 256).map((e) => e.sealed));
    expect([page.next, page.done]).toEqual([lane[255]!.pos, false]);
  });

  it('keeps a sweep’s progress per grant and peer, durably, and carries on while it moves', async () => {
    let grant: string | undefined = 'g1';
    const { a, sent, engine } = setup('progress', { trustGrant: () => Promise.resolve(grant) });
    const resent = (next: number, done: boolean) => ({ t: 'resent', events: [], sweep: true, next, done }) as const;
    await engine.receive('p', resent(10, false));
    expect(await a.store.watermark('sweep/g1/p')).toBe(10);
    expect(sent).toEqual([['p', { t: 'sweep', after: 10 }]]);
    // No progress: not asked again now (later, by the batch cycle).
    sent.length = 0;
    await engine.receive('p', resent(10, false));
    expect(sent).toEqual([]);
    await engine.receive('p', resent(20, true));
    expect(await a.store.watermark('sweep/g1/p')).toBe(SWEEP_DONE);
    expect(sent).toEqual([]);
    // A finished sweep is not asked for again; a new grant starts a new one.
    engine.setPeers(['p']);
    await engine.connected();
    expect(sent.filter(([, m]) => m.t === 'sweep')).toEqual([]);
    grant = 'g2';
    await engine.askAgain();
    expect(sent.filter(([, m]) => m.t === 'sweep')).toEqual([['p', { t: 'sweep', after: 0 }]]);
    // Not trusted any more: a sweep page records nothing.
    grant = undefined;
    await engine.receive('p', resent(30, false));
    expect(await a.store.watermark('sweep/g2/p')).toBe(0);
    // A `want` answer is no sweep: no progress recorded under any grant.
    grant = 'g3';
    await engine.receive('p', { t: 'resent', events: [], sweep: false, next: 0, done: true });
    expect(await a.store.watermark('sweep/g3/p')).toBe(0);
  });
});

describe('by example', () => {
  it('tells delivery messages from the pairing and MLS ones beside them', () => {
    for (const t of ['events', 'ack', 'want', 'sweep', 'resent']) {
      expect(isDeliveryMessage({ t } as PeerMessage)).toBe(true);
    }
    for (const t of ['join-request', 'join-refused', 'mls-welcome', 'mls-heads']) {
      expect(isDeliveryMessage({ t } as PeerMessage)).toBe(false);
    }
  });

  it('joins two batches into one events message', () => {
    const one = Uint8Array.of(1);
    const two = Uint8Array.of(2);
    expect(
      joinEvents({ t: 'events', after: 3, upto: 5, events: [one] }, { t: 'events', after: 4, upto: 7, events: [two] }),
    ).toEqual({ t: 'events', after: 3, upto: 7, events: [one, two] });
  });

  it('offers envelopes it cannot read like any other, also to a peer it cannot name', async () => {
    const s = setup('opaque');
    const mesh = s.mesh;
    const r = makeMachine('R', 'opaque/R', mesh, { fastSignatures: true, domains: ['CONTROL'] });
    await write(s.a, 'device_profiles', 'p', { name: 'pump' });
    const [entry] = await s.a.store.entriesAfter(0, 10);
    expect(await r.replica.ingest(s.a.id, [entry!.sealed])).toMatchObject([{ type: 'StoredOpaque' }]);
    const sent: [string, DeliveryMessage][] = [];
    const engine = new SyncEngine(r.replica, r.store, { send: async (p, m) => void sent.push([p, m]) });
    engine.setPeers(['p']);
    await engine.connected();
    expect(eventsTo(sent, 'p').map((m) => m.events)).toEqual([[entry!.sealed]]);
  });

  it('never resends a peer its own events when it asks for them', async () => {
    const { a, sent, engine } = setup('want-own', { signerOf: (p) => (p === 'self' ? a.id : undefined) });
    await write(a, 'device_profiles', 'r', { name: 'x' });
    const [entry] = await a.store.entriesAfter(0, 10);
    await engine.receive('self', { t: 'want', ids: [entry!.outerId] });
    expect(sent).toEqual([]);
    await engine.receive('other', { t: 'want', ids: [entry!.outerId] });
    expect(sent).toHaveLength(1);
  });

  it('asks its peers for withheld envelopes it may hold now', async () => {
    const { a, sent, engine } = setup('want-ask');
    const record = {
      outerId: 'f'.repeat(64) + '.GENERAL.1',
      eventId: '',
      chain: '',
      seq: 0,
      table: 'device_profiles',
      lane: 'public' as const,
      reason: 'NotSyncable' as const,
      at: 1,
    };
    await a.store.transact(async (tx) => tx.withhold(record));
    engine.setPeers(['p', 'q']);
    await engine.connected();
    expect(sent.filter(([, m]) => m.t === 'want')).toEqual([
      ['p', { t: 'want', ids: [record.outerId] }],
      ['q', { t: 'want', ids: [record.outerId] }],
    ]);
  });

  it('works with a listener that names no trust, no signers and no grant', async () => {
    const { a, sent, engine } = setup('bare', {}, true);
    await write(a, 'sync_manifest', 'device_profiles', { class: 'trusted' });
    await write(a, 'device_profiles', 'secret', { name: 'T' });
    engine.setPeers(['p']);
    await engine.connected();
    expect(eventsTo(sent, 'p').map((m) => m.events.length)).toEqual([1]);
    sent.length = 0;
    await engine.receive('p', { t: 'sweep', after: 0 });
    expect(sent).toEqual([['p', { t: 'resent', events: [], sweep: true, next: 0, done: false }]]);
    await engine.receive('p', { t: 'resent', events: [], sweep: true, next: 5, done: false });
    expect(await a.store.watermark('sweep/undefined/p')).toBe(0);
  });

  it('reports an empty resent page as no outcomes, and records no progress for a grant it lacks', async () => {
    const applied: unknown[][] = [];
    const { a, engine } = setup('empty-page', {
      onApplied: (o) => applied.push([...o]),
      trustGrant: () => Promise.resolve(undefined),
    });
    await engine.receive('p', { t: 'resent', events: [], sweep: true, next: 5, done: false });
    expect(applied).toEqual([[]]);
    expect(await a.store.watermark('sweep/undefined/p')).toBe(0);
  });

  it('does not pass a sweep page whose envelopes could not all be taken in', async () => {
    const s = setup('sweep-deferred');
    const r = makeMachine('R', 'sweep-deferred/R', s.mesh, { fastSignatures: true, maxParked: 0 });
    for (let i = 1; i <= 2; i++) await write(s.a, 'device_profiles', `r${i}`, { name: `n${i}` });
    const [, second] = await s.a.store.entriesAfter(0, 10);
    const sent: DeliveryMessage[] = [];
    const engine = new SyncEngine(
      r.replica,
      r.store,
      { send: async (_p, m) => void sent.push(m) },
      { trustGrant: () => Promise.resolve('g') },
    );
    await engine.receive('p', { t: 'resent', events: [second!.sealed], sweep: true, next: 9, done: false });
    expect(await r.store.watermark('sweep/g/p')).toBe(0);
    expect(sent).toEqual([]);
  });

  it('a batch ending exactly at the watermark was seen: nothing is taken in again', async () => {
    const s = setup('seen-a');
    const r = setup('seen-b');
    await write(s.a, 'device_profiles', 'r1', { name: 'one' });
    const sealed = (await s.a.store.entriesAfter(0, 10)).map((e) => e.sealed);
    const applied: number[] = [];
    const receiver = new SyncEngine(
      r.a.replica,
      r.a.store,
      { send: async () => undefined },
      { onApplied: (o) => applied.push(o.length) },
    );
    await receiver.receive(s.a.id, { t: 'events', after: 0, upto: 1, events: sealed });
    await receiver.receive(s.a.id, { t: 'events', after: 0, upto: 1, events: sealed });
    expect(applied).toEqual([1, 0]);
  });

  it('remembers at most 1,024 batches applied ahead of a gap, forgetting the oldest', async () => {
    for (const [count, ack] of [
      [1024, 1025],
      [1025, 1],
    ] as const) {
      const s = setup(`window-${count}`);
      const acks: number[] = [];
      const receiver = new SyncEngine(s.a.replica, s.a.store, {
        send: async (_p, m) => {
          if (m.t === 'ack') acks.push(m.upto);
        },
      });
      // Empty batches past a gap at (0, 1]: nothing to take in, each remembered as applied ahead.
      for (let i = 1; i <= count; i++) await receiver.receive('x', { t: 'events', after: i, upto: i + 1, events: [] });
      await receiver.receive('x', { t: 'events', after: 0, upto: 1, events: [] });
      expect(acks.at(-1)).toBe(ack);
    }
  });
});
