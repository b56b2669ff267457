/**
 * Admission of one opened event (core/ingest.ts), called directly against the in-memory store:
 * every verdict with its exact detail, the lane and privacy-class refusals and the records they
 * keep, chain links and forks, and the early answers (a rejected or logged envelope is a
 * duplicate before anything else is asked). Replica-level behaviour (batches, parking,
 * watermarks) is in replica.test.ts; this pins what one admission decides.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import { toHex } from '../../src/core/bytes.js';
import { EVENT_VERSION, signEvent, ZERO_HASH, type EventBody } from '../../src/core/event.js';
import { admitEvent, laneRefusal, withheldRecord, type Admission } from '../../src/core/ingest.js';
import type { OpenedEnvelope } from '../../src/core/opened.js';
import { tableSpec, type ColumnValue } from '../../src/core/schema.js';
import { encodeSealed, envelopeId, sealEvent } from '../../src/core/seal.js';
import type { ReplicaTx } from '../../src/core/store.js';
import type { PrivacyClass, PrivacyPolicy } from '../../src/core/sync-manifest.js';
import { chainKey } from '../../src/core/chains.js';
import type { TrustContext } from '../../src/core/trust.js';
import { MemoryReplicaStore } from '../../src/storage/memory-store.js';
import { seededRandom, unsafeTestingFastSigner } from '../helpers/deterministic.js';

const NOW = 1_704_067_200_000;
const admin = unsafeTestingFastSigner('ingest/admin');
const member = unsafeTestingFastSigner('ingest/member');
const ADMIN = toHex(admin.publicKey);
const MEMBER = toHex(member.publicKey);
const KEY = new Uint8Array(32).fill(7);
const random = seededRandom('ingest');
const trust: TrustContext = { self: 'ff'.repeat(32), anchors: () => [ADMIN] };

/** A privacy policy whose classes and trust a test sets. */
function policy(classes: Record<string, PrivacyClass> = {}, trusted = true) {
  const p = { classes, trusted };
  const privacy: PrivacyPolicy = {
    classOf: (_tx, table) => p.classes[table] ?? 'public',
    selfTrusted: () => p.trusted,
  };
  return { p, privacy };
}

/** One signer's chain of events: each next event links the previous one's id. */
function chainOf(signer: typeof admin) {
  let seq = 0;
  let prev: Uint8Array = ZERO_HASH;
  let ms = NOW;
  return async (
    table: string,
    row: string,
    cols: Record<string, ColumnValue>,
    extra: Partial<EventBody> = {},
  ): Promise<OpenedEnvelope> => {
    const body: EventBody = {
      v: EVENT_VERSION,
      domain: tableSpec(table)!.domain,
      signer: signer.publicKey,
      seq: ++seq,
      prev,
      table,
      row,
      op: 'put',
      cols,
      hlc: { ms: ++ms, counter: 0 },
      ...extra,
    };
    const event = await signEvent(body, signer);
    prev = event.id;
    const sealed = sealEvent(event.bytes, body.domain, 1, KEY, random, body.lane);
    return { sealed, bytes: encodeSealed(sealed), event };
  };
}

let store: MemoryReplicaStore;
beforeEach(() => {
  store = new MemoryReplicaStore();
});

const admit = (opened: OpenedEnvelope, privacy: PrivacyPolicy, fill?: number): Promise<Admission> =>
  store.transact((tx) => admitEvent(tx, opened, trust, privacy, NOW, fill));

const inTx = <T>(fn: (tx: ReplicaTx) => T | Promise<T>): Promise<T> => store.transact(async (tx) => fn(tx));
const nameOf = async (row: string) => (await inTx((tx) => tx.getRow('device_profiles', row)))?.cells['name']?.value;

describe('which lanes a machine holds', () => {
  it('never a local one; a trusted one only when trusted; the public one always', async () => {
    const { p, privacy } = policy();
    await inTx(async (tx) => {
      expect(await laneRefusal(tx, 'local', privacy, 'notes')).toEqual({
        type: 'NotSyncable',
        table: 'notes',
        lane: 'local',
      });
      expect(await laneRefusal(tx, 'local', privacy)).toEqual({ type: 'NotSyncable', table: '', lane: 'local' });
      expect(await laneRefusal(tx, 'trusted', privacy, 'notes')).toBeUndefined();
      expect(await laneRefusal(tx, 'public', privacy, 'notes')).toBeUndefined();
      expect(await laneRefusal(tx, undefined, privacy, 'notes')).toBeUndefined();
      p.trusted = false;
      expect(await laneRefusal(tx, 'trusted', privacy, 'notes')).toEqual({
        type: 'NotEligible',
        table: 'notes',
        lane: 'trusted',
      });
      expect(await laneRefusal(tx, 'public', privacy, 'notes')).toBeUndefined();
    });
  });

  it('keeps an identity record of what it withholds, with its chain when it links one', () => {
    const refusal = { type: 'NotEligible', table: 'notes', lane: 'trusted' } as const;
    expect(withheldRecord('o1', refusal, 5)).toEqual({
      outerId: 'o1',
      eventId: '',
      chain: '',
      seq: 0,
      table: 'notes',
      lane: 'trusted',
      reason: 'NotEligible',
      at: 5,
    });
    expect(withheldRecord('o1', refusal, 5, { eventId: 'e', chain: 'c', seq: 3 })).toEqual({
      outerId: 'o1',
      eventId: 'e',
      chain: 'c',
      seq: 3,
      table: 'notes',
      lane: 'trusted',
      reason: 'NotEligible',
      at: 5,
    });
  });
});

describe('admitting one event', () => {
  it('applies the next link of a known signer, and calls it a duplicate after', async () => {
    const { privacy } = policy();
    const next = chainOf(admin);
    const first = await next('device_profiles', 'r', { name: 'pump' });
    expect(await admit(first, privacy)).toMatchObject({ type: 'Applied', pos: 1, revoked: false });
    expect(await admit(first, privacy)).toEqual({ type: 'Duplicate' });
    expect(await nameOf('r')).toBe('pump');
  });

  it('parks a chain gap, naming the seq it waits for and the signer', async () => {
    const { privacy } = policy();
    const next = chainOf(admin);
    await next('device_profiles', 'r', { name: 'one' });
    const second = await next('device_profiles', 'r', { name: 'two' });
    expect(await admit(second, privacy)).toEqual({
      type: 'Parked',
      reason: 'ChainGap',
      detail: `waiting for seq 1 of ${ADMIN.slice(0, 8)}`,
    });
  });

  it('parks an unknown signer, by its short id', async () => {
    const { privacy } = policy();
    const opened = await chainOf(member)('device_profiles', 'r', { name: 'x' });
    expect(await admit(opened, privacy)).toEqual({
      type: 'Parked',
      reason: 'UnknownSigner',
      detail: `signer ${MEMBER.slice(0, 8)} not in the keyring`,
    });
  });

  it('parks a member write that needs a role it may still get, naming the table', async () => {
    const { privacy } = policy();
    expect((await admit(await chainOf(admin)('keyring', MEMBER, { name: 'm' }), privacy)).type).toBe('Applied');
    const verdict = await admit(await chainOf(member)('keyring', MEMBER, { name: 'mine' }), privacy);
    expect(verdict).toMatchObject({ type: 'Parked', reason: 'NotAuthorized' });
    expect(verdict.type === 'Parked' && verdict.detail).toMatch(/^keyring: \S/);
  });

  it('rejects a second event at a seq the chain already holds (a fork), and a link to the wrong event', async () => {
    const { privacy } = policy();
    const a = chainOf(admin);
    const b = chainOf(admin);
    expect((await admit(await a('device_profiles', 'r', { name: 'a' }), privacy)).type).toBe('Applied');
    expect(await admit(await b('device_profiles', 'r', { name: 'b' }), privacy)).toEqual({
      type: 'Rejected',
      error: { type: 'ChainFork', signer: ADMIN, seq: 1 },
    });
    const wrong = await chainOf(admin)('device_profiles', 'x', { name: 'x' }, { seq: 2 });
    expect(await admit(wrong, privacy)).toEqual({
      type: 'Rejected',
      error: { type: 'ChainBroken', signer: ADMIN, seq: 2 },
    });
  });

  it('answers Duplicate for an envelope finally rejected before, without deciding again', async () => {
    const { privacy } = policy();
    const opened = await chainOf(admin)('device_profiles', 'r', { name: 'ok' });
    await inTx((tx) =>
      tx.recordRejection({ outerId: envelopeId(opened.sealed), reason: 'ChainBroken', detail: '', at: NOW, peer: 'p' }),
    );
    expect(await admit(opened, privacy)).toEqual({ type: 'Duplicate' });
    expect(await nameOf('r')).toBeUndefined();
  });

  it('answers Duplicate for a logged envelope even when its lane is no longer held here', async () => {
    const { p, privacy } = policy();
    const opened = await chainOf(admin)('device_profiles', 'r', { name: 't' }, { lane: 'trusted' });
    expect((await admit(opened, privacy)).type).toBe('Applied');
    p.trusted = false;
    expect(await admit(opened, privacy)).toEqual({ type: 'Duplicate' });
  });

  it('withholds an envelope of a lane it may not hold, by identity only, and moves no chain head', async () => {
    const { p, privacy } = policy();
    p.trusted = false;
    const opened = await chainOf(admin)('device_profiles', 'r', { name: 't' }, { lane: 'trusted' });
    const outerId = envelopeId(opened.sealed);
    const error = { type: 'NotEligible', table: 'device_profiles', lane: 'trusted' } as const;
    expect(await admit(opened, privacy)).toEqual({
      type: 'Withheld',
      record: withheldRecord(outerId, error, NOW),
      error,
    });
    expect(await store.transact((tx) => tx.head(chainKey(ADMIN, 'trusted', 'GENERAL')))).toBeUndefined();
  });

  it('withholds an event of a table held local or trusted here, as a link of its chain', async () => {
    const { p, privacy } = policy({ device_profiles: 'local' });
    const next = chainOf(admin);
    const first = await next('device_profiles', 'r', { name: 'x' });
    const outerId = envelopeId(first.sealed);
    const eventId = toHex(first.event.id);
    const chain = chainKey(ADMIN, undefined, 'GENERAL');
    const local = { type: 'NotSyncable', table: 'device_profiles', lane: 'public' } as const;
    expect(await admit(first, privacy)).toEqual({
      type: 'Withheld',
      record: withheldRecord(outerId, local, NOW, { eventId, chain, seq: 1 }),
      error: local,
    });
    expect(await store.transact((tx) => tx.head(chain))).toEqual({ seq: 1, eventId });
    // A trusted table while this machine is not trusted: NotEligible; while trusted: applied.
    p.classes = { device_profiles: 'trusted' };
    p.trusted = false;
    expect(await admit(await next('device_profiles', 'r', { name: 'y' }), privacy)).toMatchObject({
      type: 'Withheld',
      error: { type: 'NotEligible', table: 'device_profiles', lane: 'public' },
    });
    p.trusted = true;
    expect((await admit(await next('device_profiles', 'r', { name: 'z' }), privacy)).type).toBe('Applied');
  });

  it('a withheld slot that links its chain is a duplicate while still not held, and filled once it is', async () => {
    const { p, privacy } = policy({ device_profiles: 'local' });
    const opened = await chainOf(admin)('device_profiles', 'r', { name: 'x' });
    const withheld = await admit(opened, privacy);
    expect(withheld.type).toBe('Withheld');
    if (withheld.type !== 'Withheld') return;
    await inTx((tx) => tx.withhold(withheld.record));
    expect(await admit(opened, privacy)).toEqual({ type: 'Duplicate', withheld: true });
    p.classes = {};
    expect(await admit(opened, privacy)).toMatchObject({ type: 'Applied', revoked: false });
    expect(await store.transact((tx) => tx.withheldRecord(envelopeId(opened.sealed)))).toBeUndefined();
    expect(await nameOf('r')).toBe('x');
  });

  it('a withheld lane envelope seen again is a duplicate: its identity is already kept', async () => {
    const { p, privacy } = policy();
    p.trusted = false;
    const opened = await chainOf(admin)('device_profiles', 'r', { name: 't' }, { lane: 'trusted' });
    const withheld = await admit(opened, privacy);
    if (withheld.type !== 'Withheld') throw new Error(withheld.type);
    await inTx((tx) => tx.withhold(withheld.record));
    expect(await admit(opened, privacy)).toEqual({ type: 'Duplicate', withheld: true });
  });

  it('taking in a withheld link later leaves its chain head where later links moved it', async () => {
    const { p, privacy } = policy({ settings: 'local' });
    const next = chainOf(admin);
    const chain = chainKey(ADMIN, undefined, 'CONTROL');
    const first = await next('settings', 'retention', { value: 30 });
    const withheld = await admit(first, privacy);
    if (withheld.type !== 'Withheld') throw new Error(withheld.type);
    await inTx((tx) => tx.withhold(withheld.record));
    const second = await next('keyring', MEMBER, { name: 'm' });
    expect((await admit(second, privacy)).type).toBe('Applied');
    p.classes = {};
    expect(await admit(first, privacy)).toMatchObject({ type: 'Applied', body: { seq: 1 } });
    expect(await inTx((tx) => tx.head(chain))).toEqual({ seq: 2, eventId: toHex(second.event.id) });
    expect((await admit(await next('keyring', MEMBER, { name: 'm2' }), privacy)).type).toBe('Applied');
  });

  it('filling a slot with an event already logged is a duplicate, whatever its lane now', async () => {
    const { p, privacy } = policy();
    const opened = await chainOf(admin)('device_profiles', 'r', { name: 't' }, { lane: 'trusted' });
    const applied = await admit(opened, privacy);
    if (applied.type !== 'Applied') throw new Error(applied.type);
    p.trusted = false;
    expect(await admit(opened, privacy, applied.pos)).toEqual({ type: 'Duplicate' });
  });

  it('an envelope withheld by its lane is no link: taken in later, it is checked against its chain', async () => {
    const { p, privacy } = policy();
    const next = chainOf(admin);
    await next('device_profiles', 'r', { name: 'one' }, { lane: 'trusted' });
    const second = await next('device_profiles', 'r', { name: 'two' }, { lane: 'trusted' });
    p.trusted = false;
    const withheld = await admit(second, privacy);
    if (withheld.type !== 'Withheld') throw new Error(withheld.type);
    expect(withheld.record.chain).toBe('');
    await inTx((tx) => tx.withhold(withheld.record));
    p.trusted = true;
    expect(await admit(second, privacy)).toEqual({
      type: 'Parked',
      reason: 'ChainGap',
      detail: `waiting for seq 1 of ${ADMIN.slice(0, 8)}`,
    });
  });

  it('a re-sealed copy of a logged event is a duplicate, also when its lane is no longer held here', async () => {
    const { p, privacy } = policy();
    const opened = await chainOf(admin)('device_profiles', 'r', { name: 't' }, { lane: 'trusted' });
    expect((await admit(opened, privacy)).type).toBe('Applied');
    const sealed = sealEvent(opened.event.bytes, 'GENERAL', 1, KEY, seededRandom('again'), 'trusted');
    const copy: OpenedEnvelope = { sealed, bytes: encodeSealed(sealed), event: opened.event };
    expect(envelopeId(copy.sealed)).not.toBe(envelopeId(opened.sealed));
    p.trusted = false;
    expect(await admit(copy, privacy)).toEqual({ type: 'Duplicate' });
  });

  it('an envelope logged opaque (held before its key arrived) is a duplicate unless it fills its slot', async () => {
    const { privacy } = policy();
    const opened = await chainOf(admin)('device_profiles', 'r', { name: 'x' });
    const outerId = envelopeId(opened.sealed);
    const pos = await inTx((tx) => tx.append({ outerId, domain: 'GENERAL', sealed: opened.bytes }));
    expect(await admit(opened, privacy)).toEqual({ type: 'Duplicate' });
    expect(await nameOf('r')).toBeUndefined();
    expect(await admit(opened, privacy, pos)).toMatchObject({ type: 'Applied', pos });
    expect(await admit(opened, privacy, pos)).toEqual({ type: 'Duplicate' });
    expect(await nameOf('r')).toBe('x');
  });
});
