/**
 * SyncManifest privacy classes end to end through replicas and delivery
 * (sync-manifest.ts): unregistered and local tables never leave their machine,
 * trusted ones reach only trusted machines (and reach a machine once it becomes
 * trusted), a receiver withholds what is local for it without stalling the
 * writer's chain and asks for it again once it may hold it, a machine trusted
 * later sweeps its peers' trusted lanes (resuming after a loss), lanes cannot be
 * relabelled, and removal marks are per lane.
 */
import { describe, expect, it } from 'vitest';
import { encodeSealed, decodeSealed, sealEvent } from '../../src/core/seal.js';
import type { IngestOutcome } from '../../src/core/replica.js';
import type { LogEntry } from '../../src/core/store.js';
import {
  isClassifiable,
  manifestPolicy,
  meshClassOf,
  narrower,
  type PrivacyClass,
} from '../../src/core/sync-manifest.js';
import { chainKey } from '../../src/core/chains.js';
import { MemoryReplicaStore } from '../../src/storage/memory-store.js';
import { makeMachine, makeMesh, seededRandom, TestNetwork, type Machine, type Mesh } from '../helpers/deterministic.js';

type Node = Machine & { readonly narrowing: Map<string, PrivacyClass> };

function node(name: string, mesh: Mesh, seed: string): Node {
  const narrowing = new Map<string, PrivacyClass>();
  let self = '';
  const trust = {
    get self() {
      return self;
    },
    anchors: () => mesh.anchors,
  };
  const privacy = manifestPolicy(trust, () => ({ narrowing, provisional: new Map() }));
  const m = makeMachine(name, `${seed}/${name}`, mesh, { fastSignatures: true, privacy });
  self = m.id;
  return { ...m, narrowing };
}

/** A (admin, founder), B and C, every pair peers; B and C in the keyring. */
async function meshOf(seed: string, trustedC = false) {
  const mesh = makeMesh(seed);
  const [a, b, c] = ['A', 'B', 'C'].map((n) => node(n, mesh, seed)) as [Node, Node, Node];
  mesh.anchors.push(a.id);
  const net = new TestNetwork(seed);
  const trusted = new Set<string>([a.id]);
  if (trustedC) trusted.add(c.id);
  // A machine's own grant, as mesh-node names it: the stamp of its keyring `trusted` cell.
  const trustGrant = (m: Node) => async () => {
    if (m === a) return 'admin';
    const cell = (await m.store.row('keyring', m.id))?.cells['trusted'];
    return cell?.value === true ? `${cell.stamp.ms}.${cell.stamp.counter}` : undefined;
  };
  const engines = new Map(
    [a, b, c].map(
      (m) => [m.id, net.join(m, { trusted: (peer) => trusted.has(peer), trustGrant: trustGrant(m) })] as const,
    ),
  );
  for (const m of [a, b, c]) engines.get(m.id)!.setPeers([a, b, c].filter((x) => x !== m).map((x) => x.id));
  for (const m of [b, c]) {
    const cols = { name: m.name, endpoint: m.id, ...(m === c && trustedC ? { trusted: true } : {}) };
    expect((await a.replica.write('keyring', m.id, cols)).ok).toBe(true);
  }
  for (const e of engines.values()) await e.connected();
  await net.flush();
  /** Realtime push from every machine, then delivery until the network is quiet. */
  const sync = async () => {
    for (const e of engines.values()) await e.offerAll();
    await net.flush();
  };
  return { mesh, a, b, c, net, engines, trusted, sync };
}

/** An outcome's verdict, by its typed reason where it has one. */
const verdict = (o: IngestOutcome): string => (o.type === 'Rejected' || o.type === 'Withheld' ? o.error.type : o.type);

const names = async (m: Machine) => (await m.replica.rows('device_profiles')).map((r) => r.row).sort();

async function log(m: Machine): Promise<LogEntry[]> {
  return m.store.entriesAfter(0, 10_000);
}

describe('classes', () => {
  it('orders local < trusted < public and leaves the control tables unclassified', async () => {
    expect(narrower('public', 'trusted')).toBe('trusted');
    expect(narrower('local', 'public')).toBe('local');
    expect(narrower('trusted', 'trusted')).toBe('trusted');
    expect(isClassifiable('device_profiles')).toBe(true);
    for (const table of ['keyring', 'roles', 'vouches', 'settings', 'sync_manifest']) {
      expect(isClassifiable(table)).toBe(false);
    }
    const store = new MemoryReplicaStore();
    await store.transact(async (tx) => {
      expect(await meshClassOf(tx, 'device_profiles')).toBe('local');
      expect(await meshClassOf(tx, 'device_profiles', new Map([['device_profiles', 'trusted']]))).toBe('trusted');
      expect(await meshClassOf(tx, 'keyring')).toBe('public');
      // A table nobody defined has no class to decide (authorize refuses its events for good).
      expect(isClassifiable('no_such_table')).toBe(false);
      expect(await meshClassOf(tx, 'no_such_table')).toBe('public');
      // A manifest record whose class cell is missing or not a class decides nothing.
      await tx.putRow({ table: 'sync_manifest', row: 'device_profiles', cells: {} });
      expect(await meshClassOf(tx, 'device_profiles', new Map([['device_profiles', 'trusted']]))).toBe('trusted');
      const stamp = { ms: 1, counter: 0, node: new Uint8Array(32) };
      await tx.putRow({ table: 'sync_manifest', row: 'device_profiles', cells: { class: { value: 'secret', stamp } } });
      expect(await meshClassOf(tx, 'device_profiles')).toBe('local');
      await tx.putRow({ table: 'sync_manifest', row: 'device_profiles', cells: { class: { value: 'public', stamp } } });
      expect(await meshClassOf(tx, 'device_profiles', new Map([['device_profiles', 'trusted']]))).toBe('public');
    });
  });
});

describe('local tables', () => {
  it('an unregistered table is local: its rows never leave, and the peer’s watermark still passes them', async () => {
    const { a, b, c, sync } = await meshOf('local-default');
    expect((await a.replica.write('device_profiles', 'canary', { name: 'LOCAL-CANARY' })).ok).toBe(true);
    await sync();
    expect(await names(a)).toEqual(['canary']);
    expect(await names(b)).toEqual([]);
    expect(await names(c)).toEqual([]);
    const entry = (await log(a)).find((e) => e.body?.row === 'canary');
    expect(entry?.lane).toBe('local');
    expect(entry?.body?.lane).toBe('local');
    // Nothing of it on the wire: no peer's log holds an entry from it, and B acknowledged past it.
    expect((await log(b)).some((e) => e.outerId === entry!.outerId)).toBe(false);
    expect(await a.store.cursor(b.id)).toBe(await a.store.lastPos());

    // Registered public later, new rows travel; the local one stays where it was written.
    expect((await a.replica.write('sync_manifest', 'device_profiles', { class: 'public' })).ok).toBe(true);
    expect((await a.replica.write('device_profiles', 'shared', { name: 'visible' })).ok).toBe(true);
    await sync();
    expect(await names(b)).toEqual(['shared']);
    expect(await names(c)).toEqual(['shared']);
  });

  it('a machine that narrowed a table to local refuses it, and the writer’s later events still get in', async () => {
    const { a, b, sync } = await meshOf('narrowed');
    expect((await a.replica.write('sync_manifest', 'device_profiles', { class: 'public' })).ok).toBe(true);
    await sync();
    b.narrowing.set('device_profiles', 'local');
    expect((await a.replica.write('device_profiles', 'p1', { name: 'north shed' })).ok).toBe(true);
    expect((await a.replica.write('settings', 'vouch_k', { value: 3 })).ok).toBe(true);
    await sync();
    expect(await names(b)).toEqual([]);
    expect((await b.replica.rows('settings')).map((r) => r.cells['value']?.value)).toEqual([3]);
    // Withheld, not rejected: only its identity is kept, and nothing of its content.
    expect(await b.store.rejections(10)).toEqual([]);
    const withheld = await b.store.withheld(10);
    expect(withheld.map((r) => [r.reason, r.table])).toEqual([['NotSyncable', 'device_profiles']]);
    expect((await log(b)).some((e) => e.outerId === withheld[0]!.outerId)).toBe(false);
    // B's own writes to the table now stay on B.
    expect((await b.replica.write('device_profiles', 'mine', { name: 'only here' })).ok).toBe(true);
    await sync();
    expect(await names(a)).toEqual(['p1']);
  });

  it('lifting a narrowing takes in what was withheld meanwhile', async () => {
    const { a, b, engines, sync } = await meshOf('lifted');
    await a.replica.write('sync_manifest', 'device_profiles', { class: 'public' });
    await sync();
    b.narrowing.set('device_profiles', 'local');
    await a.replica.write('device_profiles', 'p1', { name: 'north shed' });
    await sync();
    expect(await names(b)).toEqual([]);
    b.narrowing.delete('device_profiles');
    await engines.get(b.id)!.askAgain();
    await sync();
    expect(await names(b)).toEqual(['p1']);
    expect(await b.store.withheld(10)).toEqual([]);
  });

  it('an event that arrived before the class record is taken in once the record is here', async () => {
    const { a, b, c, engines, sync } = await meshOf('class-late');
    const manifestPos = (await a.store.lastPos()) + 1;
    await a.replica.write('sync_manifest', 'device_profiles', { class: 'public' });
    const record = (await log(a)).find((e) => e.pos === manifestPos)!;
    await c.replica.ingest(
      a.id,
      (await log(a)).map((e) => e.sealed),
    );
    await c.replica.write('device_profiles', 'from-c', { name: 'field' });
    const fromC = (await log(c)).at(-1)!;
    // B hears C's row before A's record (a lost batch, say): local by default, so withheld.
    const early = await b.replica.ingest(c.id, [fromC.sealed]);
    expect(early.map(verdict)).toEqual(['NotSyncable']);
    await b.replica.ingest(a.id, [record.sealed]);
    await engines.get(b.id)!.askAgain();
    await sync();
    expect(await names(b)).toEqual(['from-c']);
    // Every machine holds the same rows, whatever the order things arrived in.
    expect(await names(a)).toEqual(['from-c']);
  });

  it('a local-lane envelope that arrives anyway is refused and not stored', async () => {
    const { a, b } = await meshOf('local-forwarded');
    await a.replica.write('device_profiles', 'canary', { name: 'LOCAL-CANARY' });
    const entry = (await log(a)).find((e) => e.lane === 'local')!;
    const outcomes = await b.replica.ingest(a.id, [entry.sealed]);
    expect(outcomes.map(verdict)).toEqual(['NotSyncable']);
    expect((await log(b)).some((e) => e.outerId === entry.outerId)).toBe(false);
    // A local lane never widens: B does not even ask for it again.
    expect(await b.replica.wanted(10)).toEqual([]);
  });
});

describe('trusted tables', () => {
  it('reach trusted machines only, and a machine once an admin trusts it', async () => {
    const { a, b, c, engines, trusted, sync } = await meshOf('trusted', true);
    expect((await a.replica.write('sync_manifest', 'device_profiles', { class: 'trusted' })).ok).toBe(true);
    await sync();
    expect((await a.replica.write('device_profiles', 'secret', { name: 'TRUSTED-CANARY' })).ok).toBe(true);
    // A's public lane goes on after its trusted write: B must not stall on the withheld one.
    expect((await a.replica.write('settings', 'vouch_k', { value: 4 })).ok).toBe(true);
    await sync();
    expect(await names(c)).toEqual(['secret']);
    expect(await names(b)).toEqual([]);
    expect((await b.replica.rows('settings')).map((r) => r.cells['value']?.value)).toEqual([4]);
    expect((await log(b)).some((e) => e.lane === 'trusted')).toBe(false);
    expect(await b.store.parkedCount()).toBe(0);

    // An admin trusts B: once B holds the grant, it sweeps its peers' trusted lanes.
    expect((await a.replica.write('keyring', b.id, { trusted: true })).ok).toBe(true);
    trusted.add(b.id);
    await sync();
    await engines.get(b.id)!.askAgain();
    await sync();
    expect(await names(b)).toEqual(['secret']);
    expect((await b.replica.rows('device_profiles'))[0]?.cells['name']?.value).toBe('TRUSTED-CANARY');
  });

  it('a machine that is not trusted refuses a trusted-lane envelope, and takes it once trusted', async () => {
    const { a, b } = await meshOf('not-eligible');
    await a.replica.write('sync_manifest', 'device_profiles', { class: 'trusted' });
    await a.replica.write('device_profiles', 'secret', { name: 'x' });
    const all = await log(a);
    const control = all.filter((e) => e.lane === undefined).map((e) => e.sealed);
    const secret = all.find((e) => e.lane === 'trusted')!;
    await b.replica.ingest(a.id, control);
    const outcomes = await b.replica.ingest(a.id, [secret.sealed]);
    expect(outcomes.map(verdict)).toEqual(['NotEligible']);
    expect(await names(b)).toEqual([]);

    expect((await a.replica.write('keyring', b.id, { trusted: true })).ok).toBe(true);
    await b.replica.ingest(a.id, [(await log(a)).at(-1)!.sealed]);
    // Refused while not eligible; judged again now that B is trusted.
    const again = await b.replica.ingest(a.id, [secret.sealed]);
    expect(again.map((o) => o.type)).toEqual(['Applied']);
    expect(await names(b)).toEqual(['secret']);
  });
});

describe('lanes are bound', () => {
  it('a relabelled envelope does not open, and a re-sealed one is refused as a lane mismatch', async () => {
    const { mesh, a, c } = await meshOf('relabel', true);
    await a.replica.write('sync_manifest', 'device_profiles', { class: 'trusted' });
    await a.replica.write('device_profiles', 'secret', { name: 'x' });
    const all = await log(a);
    await c.replica.ingest(
      a.id,
      all.filter((e) => e.lane === undefined).map((e) => e.sealed),
    );
    const secret = all.find((e) => e.lane === 'trusted')!;
    const decoded = decodeSealed(secret.sealed);
    if (!decoded.ok) throw new Error('fixture');
    const publicLabel = {
      domain: decoded.value.domain,
      gen: decoded.value.gen,
      id: decoded.value.id,
      ct: decoded.value.ct,
    };
    const relabelled = await c.replica.ingest(a.id, [encodeSealed(publicLabel)]);
    expect(relabelled.map((o) => (o.type === 'Rejected' ? o.error.type : o.type))).toEqual(['DecryptFailed']);

    // A domain member re-seals the signed trusted-lane event as public.
    const plain = await a.keyring.envelopes(seededRandom('x')).open(decoded.value);
    if (!plain.ok) throw new Error('fixture');
    const resealed = encodeSealed(sealEvent(plain.value, 'GENERAL', 1, mesh.keys.GENERAL, seededRandom('reseal')));
    const outcome = await c.replica.ingest(a.id, [resealed]);
    expect(outcome.map((o) => (o.type === 'Rejected' ? o.error.type : o.type))).toEqual(['LaneMismatch']);
    expect(await names(c)).toEqual([]);
  });
});

describe('removal marks per lane', () => {
  it('keeps the removed signer’s trusted events up to the trusted mark and revokes the rest', async () => {
    const { a, c, net, sync } = await meshOf('marks', true);
    await a.replica.write('sync_manifest', 'device_profiles', { class: 'trusted' });
    await sync();
    await c.replica.write('device_profiles', 'before', { name: 'kept' });
    await sync();
    await a.store.transact(async (tx) => expect((await tx.head(chainKey(c.id, 'trusted')))?.seq).toBe(1));
    expect((await a.replica.remove(c.id)).ok).toBe(true);
    const removal = (await log(a)).at(-1)!.body!;
    expect(removal.cols).toEqual({ hwm: 0, trusted_hwm: 1 });
    // C, cut off, writes on; its late event reaches A and is revoked there.
    net.faults = { partitions: [[a.id, c.id]] };
    await c.replica.write('device_profiles', 'after', { name: 'revoked' });
    net.faults = {};
    const late = (await log(c)).at(-1)!;
    const outcomes = await a.replica.ingest(c.id, [late.sealed]);
    expect(outcomes.map((o) => (o.type === 'Applied' ? (o.revoked ? 'revoked' : 'applied') : o.type))).toEqual([
      'revoked',
    ]);
    expect(await names(a)).toEqual(['before']);
  });
});

describe('asking again', () => {
  it('a machine trusted later sweeps a long trusted lane in pages, and resumes after a lost page', async () => {
    const { a, b, net, engines, trusted, sync } = await meshOf('sweep');
    await a.replica.write('sync_manifest', 'device_profiles', { class: 'trusted' });
    for (let i = 0; i < 600; i++) await a.replica.write('device_profiles', `row-${i}`, { name: `n${i}` });
    await sync();
    expect(await names(b)).toEqual([]);
    expect((await a.replica.write('keyring', b.id, { trusted: true })).ok).toBe(true);
    trusted.add(b.id);
    await sync();
    // The second page is lost on the way: B's progress stays where the first page ended.
    let pages = 0;
    const sweeps: number[] = [];
    net.faults = {
      drop: (f) => {
        if (f.message.t === 'sweep' && f.to === a.id) sweeps.push(f.message.after);
        return f.message.t === 'resent' && f.from === a.id && f.message.sweep && ++pages === 2;
      },
    };
    const engine = engines.get(b.id)!;
    await engine.askAgain();
    await sync();
    const partial = (await names(b)).length;
    expect(partial).toBeGreaterThan(0);
    expect(partial).toBeLessThan(600);
    // Asked again later (the batch cycle does), it resumes from its durable progress, not from 0.
    net.faults = {};
    await engine.askAgain();
    await sync();
    expect(sweeps.at(-1)).toBeGreaterThan(0);
    expect(await names(b)).toHaveLength(600);
  });

  it('a sweep answered before the peer knows of the grant is asked again, not marked done', async () => {
    const { a, b, trusted, engines, sync } = await meshOf('sweep-early');
    await a.replica.write('sync_manifest', 'device_profiles', { class: 'trusted' });
    await a.replica.write('device_profiles', 'secret', { name: 'x' });
    await sync();
    expect((await a.replica.write('keyring', b.id, { trusted: true })).ok).toBe(true);
    await sync();
    // A has not noticed it trusts B yet (its peer view lags): it answers with nothing.
    await engines.get(b.id)!.askAgain();
    await sync();
    expect(await names(b)).toEqual([]);
    trusted.add(b.id);
    await engines.get(b.id)!.askAgain();
    await sync();
    expect(await names(b)).toEqual(['secret']);
  });
});
