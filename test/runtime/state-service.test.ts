/**
 * The state plane's apply path as the composition root drives it: configured with
 * anchors, peers and trust, writing, offering, receiving, and answering with change
 * summaries (counts and table names, never envelopes). Two machines on memory stores
 * exchange peer messages through their outlets, encoded as on the wire.
 */
import { describe, expect, it } from 'vitest';
import { toHex } from '../../src/core/bytes.js';
import { DomainKeyring } from '../../src/core/domain-keys.js';
import { decodePeerMessage, encodePeerMessage } from '../../src/core/peer-wire.js';
import type { IngestOutcome } from '../../src/core/replica.js';
import { isDeliveryMessage } from '../../src/core/sync.js';
import {
  mergeSummaries,
  NO_CHANGE,
  StateService,
  summarise,
  type StateConfig,
  type StateCrypto,
} from '../../src/runtime/state-service.js';
import { MemoryReplicaStore } from '../../src/storage/memory-store.js';
import {
  makeMesh,
  nobleVerifier,
  seededRandom,
  testClock,
  unsafeTestingSigner,
  type TestClock,
} from '../helpers/deterministic.js';

const mesh = makeMesh('state-service');

type Party = {
  readonly name: string;
  readonly id: string;
  readonly endpoint: string;
  readonly store: MemoryReplicaStore;
  readonly state: StateService;
  readonly sent: { peer: string; body: Uint8Array }[];
  readonly counted: string[];
  readonly clock: TestClock;
};

function party(name: string): Party {
  const signer = unsafeTestingSigner(`state-service/${name}`);
  const keyring = new DomainKeyring();
  keyring.add('CONTROL', 1, mesh.keys.CONTROL);
  keyring.add('GENERAL', 1, mesh.keys.GENERAL);
  const envelopes = keyring.envelopes(seededRandom(`state-service/${name}`));
  const crypto: StateCrypto = {
    ...envelopes,
    signer,
    verifier: nobleVerifier,
    // Frames are the crypto service's business; here the message travels as its wire encoding.
    sealMessage: async (_to, message) => encodePeerMessage(message),
  };
  const store = new MemoryReplicaStore();
  const id = toHex(signer.publicKey);
  let queue = Promise.resolve<unknown>(undefined);
  const clock = testClock();
  const state = new StateService({
    store,
    crypto: async () => crypto,
    self: async () => id,
    clock,
    withLock: (fn) => {
      const run = queue.then(fn, fn);
      queue = run.catch(() => undefined);
      return run;
    },
  });
  const p: Party = { name, id, endpoint: `${name}-endpoint`, store, state, sent: [], counted: [], clock };
  state.attach({
    send: (peer, body) => void p.sent.push({ peer, body }),
    count: (type) => void p.counted.push(type),
  });
  return p;
}

function config(anchors: readonly Party[], peers: readonly Party[], trusted: readonly Party[] = peers): StateConfig {
  return {
    anchors: anchors.map((a) => a.id),
    narrowing: {},
    provisional: {},
    peers: peers.map((p) => ({ endpoint: p.endpoint, frame: `${p.name}-frame` })),
    trusted: trusted.map((p) => p.endpoint),
    signers: Object.fromEntries(peers.map((p) => [p.endpoint, p.id])),
  };
}

/** Delivers everything `from` sent to `to`, and `to`'s answers back, until both are quiet. */
async function exchange(a: Party, b: Party): Promise<ReturnType<typeof summarise>[]> {
  const summaries: ReturnType<typeof summarise>[] = [];
  for (let round = 0; round < 20 && (a.sent.length > 0 || b.sent.length > 0); round++) {
    for (const [from, to] of [
      [a, b],
      [b, a],
    ] as const) {
      for (const frame of from.sent.splice(0)) {
        expect(frame.peer).toBe(to.endpoint);
        const message = decodePeerMessage(frame.body);
        if (!message.ok || !isDeliveryMessage(message.value)) throw new Error('not a delivery message');
        summaries.push(await to.state.receive(from.endpoint, message.value));
      }
    }
  }
  return summaries;
}

describe('state service', () => {
  it('applies what a peer offers and answers with a summary of what changed, not the rows', async () => {
    const [admin, member] = [party('admin'), party('member')];
    await admin.state.configure(config([admin], [member]));
    await member.state.configure(config([admin], [admin]));
    expect((await admin.state.write('sync_manifest', 'device_profiles', { class: 'public' })).ok).toBe(true);
    expect((await admin.state.write('device_profiles', 'pump-1', { name: 'Pump 1' })).ok).toBe(true);
    await admin.state.connected();
    await member.state.connected();
    const summaries = await exchange(admin, member);
    const total = summaries.reduce(mergeSummaries, NO_CHANGE);
    expect(total.applied).toBe(2);
    expect(new Set(total.tables)).toEqual(new Set(['sync_manifest', 'device_profiles']));
    expect(total.control).toBe(true);
    expect(JSON.stringify(total)).not.toContain('Pump 1');
    expect((await member.store.row('device_profiles', 'pump-1'))?.cells['name']?.value).toBe('Pump 1');
  });

  it('reports an edit made offline that lost to a peer’s edit made before it came back, and only that', async () => {
    const [admin, member] = [party('admin-lost'), party('member-lost')];
    await admin.state.configure(config([admin], [member]));
    await member.state.configure(config([admin], [admin]));
    await admin.state.write('sync_manifest', 'device_profiles', { class: 'public' });
    await admin.state.write('device_profiles', 'pump', { name: 'Pump', location: 'hall', notes: 'new' });
    await Promise.all([admin.state.connected(), member.state.connected()]);
    await exchange(admin, member);

    // Online, the member edits a note; the admin, not having seen it, edits the note later:
    // concurrent but not offline, so not told.
    member.clock.advance(1000);
    await member.state.write('device_profiles', 'pump', { notes: 'online, mine' });
    admin.clock.advance(2000);
    await admin.state.write('device_profiles', 'pump', { notes: 'online, theirs' });
    await Promise.all([member.state.offerAll(), admin.state.offerAll()]);
    const online = (await exchange(admin, member)).reduce(mergeSummaries, NO_CHANGE);
    expect((await member.store.row('device_profiles', 'pump'))?.cells['notes']?.value).toBe('online, theirs');
    expect(online.overtaken).toEqual([]);

    // Offline, the member moves the pump; the admin, later, moves it elsewhere.
    await member.state.disconnected();
    member.clock.advance(1000);
    await member.state.write('device_profiles', 'pump', { location: 'yard' });
    const mine = member.clock.now();
    admin.clock.advance(2000);
    await admin.state.write('device_profiles', 'pump', { location: 'roof' });
    const theirs = admin.clock.now();
    admin.sent.length = 0; // the member is offline: nothing reached it
    member.clock.advance(5000);
    await member.state.connected();
    await Promise.all([member.state.offerAll(), admin.state.offerAll()]);
    const back = (await exchange(admin, member)).reduce(mergeSummaries, NO_CHANGE);
    expect(back.overtaken).toEqual([
      {
        table: 'device_profiles',
        row: 'pump',
        column: 'location',
        mine: 'yard',
        mineMs: mine,
        theirs: 'roof',
        theirsMs: theirs,
        by: admin.id,
      },
    ]);

    // Back online, the member sets a schedule and the admin a later one: not an offline loss.
    member.clock.advance(1000);
    await member.state.write('device_profiles', 'pump', { schedule: 'daily' });
    admin.clock.advance(10_000);
    await admin.state.write('device_profiles', 'pump', { schedule: 'weekly' });
    await Promise.all([member.state.offerAll(), admin.state.offerAll()]);
    const later = (await exchange(admin, member)).reduce(mergeSummaries, NO_CHANGE);
    expect((await member.store.row('device_profiles', 'pump'))?.cells['schedule']?.value).toBe('weekly');
    expect(later.overtaken).toEqual([]);
  });

  it('a peer without a bound frame key is counted, and nothing is sent to it', async () => {
    const [admin, member] = [party('admin2'), party('member2')];
    await admin.state.configure({ ...config([admin], []), peers: [{ endpoint: member.endpoint, frame: '' }] });
    await admin.state.write('sync_manifest', 'device_profiles', { class: 'public' });
    await admin.state.connected();
    expect(admin.sent).toEqual([]);
    expect(admin.counted).toContain('NoFrameKey');
  });

  it('a stranger posing as admin is parked, never applied, and the summary says nothing changed', async () => {
    const [admin, member, stranger] = [party('admin3'), party('member3'), party('stranger3')];
    await admin.state.configure(config([admin], [member]));
    await member.state.configure(config([admin], [admin, stranger]));
    await stranger.state.configure(config([stranger], [member]));
    // The stranger signs itself admin of its own mesh and writes a control row: not an admin here.
    await stranger.state.write('sync_manifest', 'device_profiles', { class: 'public' });
    await stranger.state.connected();
    await member.state.connected();
    expect(stranger.sent.length).toBeGreaterThan(0);
    const summaries = await exchange(stranger, member);
    expect(summaries.reduce(mergeSummaries, NO_CHANGE)).toEqual(NO_CHANGE);
    expect(await member.store.row('sync_manifest', 'device_profiles')).toBeUndefined();
    expect(await member.store.lastPos()).toBe(0);
    // Held aside for the keyring record that would make its signer known, bounded and counted.
    const parked = await member.store.parked(10);
    expect(parked.map((p) => p.signer)).toEqual([stranger.id]);
  });

  it('with no mesh configured, a write is local: the unclassified table stays on this machine', async () => {
    const [solo, peer] = [party('solo'), party('peer')];
    await solo.state.configure(config([solo], [peer]));
    expect((await solo.state.write('device_profiles', 'kept', { name: 'here only' })).ok).toBe(true);
    await solo.state.connected();
    expect((await solo.store.row('device_profiles', 'kept'))?.cells['name']?.value).toBe('here only');
    const offered = solo.sent
      .map((f) => decodePeerMessage(f.body))
      .flatMap((m) => (m.ok && m.value.t === 'events' ? m.value.events : []));
    expect(offered).toEqual([]);
  });
});

describe('change summaries', () => {
  const applied = (table: string, domain: 'CONTROL' | 'GENERAL', revoked = false): IngestOutcome =>
    ({
      type: 'Applied',
      outerId: `${table}-${domain}`,
      body: { table, domain },
      revoked,
      resurrections: [],
      overtaken: [],
    }) as unknown as IngestOutcome;

  it('count applied, revoked and rejected envelopes and name each table once', () => {
    const summary = summarise([
      applied('device_profiles', 'GENERAL'),
      applied('device_profiles', 'GENERAL', true),
      { type: 'Rejected', outerId: 'x', error: { type: 'BadSignature' } } as unknown as IngestOutcome,
      { type: 'Duplicate', outerId: 'y' },
    ]);
    expect(summary).toEqual({
      applied: 2,
      revoked: 1,
      tables: ['device_profiles'],
      control: false,
      resurrections: [],
      overtaken: [],
      rejected: { BadSignature: 1 },
    });
    expect(summarise([applied('keyring', 'CONTROL')]).control).toBe(true);
    expect(summarise([])).toEqual(NO_CHANGE);
  });

  it('merge adds counts, unites tables and keeps NO_CHANGE neutral', () => {
    const a = summarise([applied('a', 'GENERAL')]);
    const b = summarise([applied('b', 'CONTROL')]);
    expect(mergeSummaries(NO_CHANGE, a)).toBe(a);
    expect(mergeSummaries(a, NO_CHANGE)).toBe(a);
    const both = mergeSummaries(a, b);
    expect(both.applied).toBe(2);
    expect(both.tables).toEqual(['a', 'b']);
    expect(both.control).toBe(true);
  });
});
