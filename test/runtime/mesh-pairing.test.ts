/**
 * How a machine comes into a mesh, wired to fakes (src/runtime/mesh-pairing.ts): founding
 * records the machine as the first admin, step by step, and says which step failed; an
 * acceptance makes a joining machine a member only when every Welcome joined, and is ignored
 * by a member; a refusal reaches the joining side from its inviter; vouches are validated
 * before anything is written. The ceremonies themselves have their own tests.
 */
import { describe, expect, it } from 'vitest';
import { err, ok, type Result } from '../../src/core/result.js';
import type { DomainItems } from '../../src/core/peer-wire.js';
import { MeshMetaKeeper, type MeshMeta } from '../../src/runtime/mesh-meta.js';
import { MeshPairing } from '../../src/runtime/mesh-pairing.js';
import { MeshRoster } from '../../src/runtime/mesh-roster.js';
import type { IdentityView } from '../../src/runtime/crypto-service.js';

const SELF: IdentityView = {
  signer: 'aa'.repeat(32),
  endpoint: 'ea'.repeat(32),
  frame: 'fa'.repeat(32),
  fingerprint: 'aaaa-aaaa-aaaa-aaaa',
  topic: undefined,
  member: false,
};
const INVITER = { endpoint: 'eb'.repeat(32), frame: 'fb'.repeat(32) };
const bytes = (hex: string) => Uint8Array.from(hex.match(/../g)!.map((h) => parseInt(h, 16)));

function fixture(
  initial?: MeshMeta,
  options: { joinFails?: boolean; failWrite?: string; foundFailures?: number; foundError?: string } = {},
) {
  let foundFailures = options.foundFailures ?? 0;
  const log: string[] = [];
  const notices: string[] = [];
  const metaStore = new Map<string, unknown>(initial ? [['mesh', initial]] : []);
  const meta = new MeshMetaKeeper(
    {
      getMeta: async <T>(key: string) => metaStore.get(key) as T | undefined,
      setMeta: async (key, value) => void metaStore.set(key, value),
      deleteMeta: async (key) => void metaStore.delete(key),
    },
    async () => undefined,
  );
  let identity = SELF;
  const roster = new MeshRoster({
    store: { rows: async () => [] },
    self: () => identity,
    anchors: () => meta.anchors,
    anchorPeers: () => meta.anchorPeers,
    setKeyring: async (k) => void log.push(`keyring ${k.admitted.length}`),
  });
  const pairing = new MeshPairing({
    crypto: {
      createMesh: async () => ok({ ...SELF, member: true }),
      createInvitation: async () => 'ticket',
      abandonJoin: async () => void log.push('abandonJoin'),
    } as never,
    meta,
    roster,
    domains: {
      addJoiner: async () => ok([]),
      joinOffers: async () => ok([]),
      joinFrom: async (welcomes: DomainItems): Promise<Result<void, never>> => {
        log.push(`joinFrom ${welcomes.length}`);
        return options.joinFails ? (err({ type: 'MissingDomain', reason: 'no CONTROL' }) as never) : ok(undefined);
      },
      found: async () => {
        log.push('found');
        if (foundFailures-- > 0) {
          const failure = new Error('The operation failed for an operation-specific reason');
          failure.name = options.foundError ?? 'OperationError';
          throw failure;
        }
        return ok(undefined);
      },
      standingKeyPackage: async () => 'kp',
    },
    feed: {
      notice: (_k, text) => void notices.push(text),
      count: () => undefined,
      publish: async () => undefined,
      publishSoon: () => undefined,
    },
    identity: () => identity,
    reloadIdentity: async (next) => void (identity = next ?? identity),
    rows: async () => [],
    write: async (table, row, cols) => {
      log.push(`write ${table} ${row.slice(0, 8)} ${Object.keys(cols).join(',')}`);
      if (table === options.failWrite) return err({ type: 'InvalidEdit', reason: 'refused' });
      return ok({ resurrections: [] } as never);
    },
    sendTo: () => undefined,
    online: () => true,
    classes: async () => [],
    pushAdmission: async () => void log.push('admission'),
    recordMachine: async () => ok(undefined),
    refreshPeers: async () => void log.push('refreshPeers'),
    offerAll: async () => undefined,
    announce: () => undefined,
    startRelay: async () => void log.push('startRelay'),
    becameMember: async () => void log.push('becameMember'),
    reloadAll: () => void log.push('reloadAll'),
  });
  return { pairing, meta, log, notices, metaStore };
}

const joining: MeshMeta = { status: 'joining', relay: 'ws://r', name: 'tablet', anchors: [], anchorPeers: [INVITER] };
const accept = {
  t: 'join-accept' as const,
  inv: new Uint8Array(16),
  signer: bytes('bb'.repeat(32)),
  anchors: [bytes('cc'.repeat(32))],
  classes: [['device_profiles', 'public']] as never,
  welcomes: [['CONTROL', new Uint8Array(1)]] as never,
};

describe('mesh pairing', () => {
  it('founds a mesh: this machine is its first admin, recorded step by step, then the relay starts', async () => {
    const f = fixture();
    await f.pairing.found('home', 'ws://relay');
    expect(f.meta.value).toMatchObject({ status: 'member', name: 'home', anchors: [SELF.signer] });
    expect(f.log.filter((l) => l.startsWith('write')).map((l) => l.split(' ')[1])).toEqual([
      'keyring',
      'roles',
      'sync_manifest',
      'sync_manifest',
      'sync_manifest',
      'sync_manifest',
      'key_packages',
    ]);
    expect(f.log.at(-1)).toBe('startRelay');
  });

  it('founds the domains again when the engine fails a key operation once (WebKitGTK), and gives up on a third', async () => {
    const once = fixture(undefined, { foundFailures: 1 });
    await once.pairing.found('home', 'ws://relay');
    expect(once.log.filter((l) => l === 'found')).toHaveLength(2);
    expect(once.log.at(-1)).toBe('startRelay');

    const always = fixture(undefined, { foundFailures: 5 });
    await expect(always.pairing.found('home', 'ws://relay')).rejects.toThrow(
      /could not found the domains: OperationError/,
    );
    expect(always.log.filter((l) => l === 'found')).toHaveLength(3);

    const other = fixture(undefined, { foundFailures: 1, foundError: 'DataError' });
    await expect(other.pairing.found('home', 'ws://relay')).rejects.toThrow(/could not found the domains: DataError/);
    expect(other.log.filter((l) => l === 'found')).toHaveLength(1);
  });

  it('says which founding step failed', async () => {
    const f = fixture(undefined, { failWrite: 'roles' });
    await expect(f.pairing.found('home', 'ws://relay')).rejects.toThrow(
      /could not record this machine \(InvalidEdit\)/,
    );
    expect(f.log).not.toContain('startRelay');
  });

  it('becomes a member when the acceptance arrives while joining, with the inviter and its anchors as admins', async () => {
    const f = fixture(joining);
    await f.meta.load();
    await f.pairing.message(INVITER, accept);
    expect(f.meta.value).toMatchObject({
      status: 'member',
      anchors: ['cc'.repeat(32), 'bb'.repeat(32)],
      anchorPeers: [INVITER],
      provisionalClasses: { device_profiles: 'public' },
    });
    expect(f.log).toEqual(['keyring 3', 'joinFrom 1', 'refreshPeers', 'becameMember']);
    expect(f.notices).toEqual(['joined the mesh']);
  });

  it('stays joining when a Welcome does not join, and says why', async () => {
    const f = fixture(joining, { joinFails: true });
    await f.meta.load();
    await f.pairing.message(INVITER, accept);
    expect(f.meta.value?.status).toBe('joining');
    expect(f.notices).toEqual(['join: MissingDomain: no CONTROL']);
    expect(f.log).not.toContain('becameMember');
  });

  it('ignores an acceptance once a member', async () => {
    const f = fixture({ ...joining, status: 'member' });
    await f.meta.load();
    await f.pairing.message(INVITER, accept);
    expect(f.log).toEqual([]);
  });

  it('shows a refusal from its inviter while joining', async () => {
    const f = fixture(joining);
    await f.meta.load();
    await f.pairing.message(INVITER, { t: 'join-refused', inv: new Uint8Array(16), reason: 'ticket used' });
    expect(f.pairing.joinView.refused).toBe('ticket used');
    expect(f.notices).toEqual(['join refused: ticket used']);
  });

  it('forgets an unfinished join and reloads every tab; a member cannot cancel', async () => {
    const member = fixture({ ...joining, status: 'member' });
    await member.meta.load();
    await member.pairing.cancelJoin();
    expect(member.metaStore.has('mesh')).toBe(true);
    expect(member.log).toEqual([]);
    const f = fixture(joining);
    await f.meta.load();
    await f.pairing.cancelJoin();
    expect(f.metaStore.has('mesh')).toBe(false);
    expect(f.meta.status).toBe('new');
    expect(f.log).toEqual(['abandonJoin', 'reloadAll']);
  });

  it('validates vouches and the threshold before writing', async () => {
    const f = fixture();
    expect((await f.pairing.vouch('not a fingerprint')).ok).toBe(false);
    expect((await f.pairing.setVouchThreshold(0)).ok).toBe(false);
    expect((await f.pairing.setVouchThreshold(17)).ok).toBe(false);
    expect((await f.pairing.setVouchThreshold(1.5)).ok).toBe(false);
    expect(f.log).toEqual([]);
    expect((await f.pairing.vouch(' ABCD-0123-4567-89EF ')).ok).toBe(true);
    expect((await f.pairing.setVouchThreshold(3)).ok).toBe(true);
    expect(f.log).toEqual([`write vouches ${SELF.signer.slice(0, 8)} candidate,note`, 'write settings vouch_k value']);
  });

  it('lets only an admin invite', async () => {
    const f = fixture({ ...joining, status: 'member', anchors: [] });
    await f.meta.load();
    await expect(f.pairing.invite()).rejects.toThrow('only an admin can invite');
  });
});
