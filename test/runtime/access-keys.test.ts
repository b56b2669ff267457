/**
 * The key holder's port (runtime/access-keys.ts) over a real keyring: an object secret wrapped
 * under a domain's current generation opens again; a record of a generation not held, or a
 * malformed one, opens nothing (typed `NoKeyOpens`); a batch of objects is answered in order in
 * one call; and nothing any method answers holds a domain key. Then the same across a real
 * MessageChannel with comlink, as the Parquet worker asks the crypto worker.
 */
import { expose, wrap } from 'comlink';
import { afterAll, describe, expect, it } from 'vitest';
import { DomainKeyring } from '../../src/core/domain-keys.js';
import { wrapSecret, type AccessRecord } from '../../src/core/object/access.js';
import { storageIdOf, type StorageId } from '../../src/core/object/keys.js';
import { keyringAccess, type AccessKeys } from '../../src/runtime/access-keys.js';
import { seededRandom } from '../helpers/deterministic.js';

const bytes = (label: string, n = 32): Uint8Array => seededRandom(label).bytes(n);
const idOf = (label: string): StorageId => storageIdOf(bytes(`id/${label}`));

/** GENERAL generations 1 and 2, RESTRICTED 1; GENERAL 3 exists elsewhere but is not held here. */
const KEYS = {
  general1: bytes('key/GENERAL/1'),
  general2: bytes('key/GENERAL/2'),
  general3: bytes('key/GENERAL/3'),
  restricted1: bytes('key/RESTRICTED/1'),
};

function holder(): { keyring: DomainKeyring; access: AccessKeys } {
  const keyring = new DomainKeyring();
  keyring.add('GENERAL', 1, KEYS.general1);
  keyring.add('GENERAL', 2, KEYS.general2);
  keyring.add('RESTRICTED', 1, KEYS.restricted1);
  return { keyring, access: keyringAccess(keyring, seededRandom('access-keys/nonces')) };
}

/** A record wrapped elsewhere, under a key given here. */
function recordUnder(key: Uint8Array, at: Omit<AccessRecord, 'wrapped'>, secret: Uint8Array): AccessRecord {
  return wrapSecret(secret, at, key, seededRandom(`nonce/${at.storageId}/${at.gen}`));
}

/** Every byte array anywhere inside a value. */
function byteArrays(value: unknown): Uint8Array[] {
  if (value instanceof Uint8Array) return [value];
  if (typeof value !== 'object' || value === null) return [];
  return Object.values(value).flatMap(byteArrays);
}

function contains(haystack: Uint8Array, needle: Uint8Array): boolean {
  outer: for (let i = 0; i + needle.length <= haystack.length; i++) {
    for (let j = 0; j < needle.length; j++) if (haystack[i + j] !== needle[j]) continue outer;
    return true;
  }
  return false;
}

describe('access keys', () => {
  const secret = bytes('secret/a');
  const a = idOf('a');

  it('names the current generation of a domain held, and none of one not held', async () => {
    const { access } = holder();
    expect(await access.current('GENERAL')).toBe(2);
    expect(await access.current('RESTRICTED')).toBe(1);
    expect(await access.current('FIELD')).toBeUndefined();
  });

  it('wraps an object secret under the current generation, and opens it again', async () => {
    const { access } = holder();
    const wrapped = await access.wrap(secret, { storageId: a, domain: 'GENERAL' });
    if (!wrapped.ok) throw new Error(wrapped.error.type);
    expect(wrapped.value).toMatchObject({ storageId: a, domain: 'GENERAL', gen: 2 });
    expect(wrapped.value.wrapped).toHaveLength(60);
    expect(await access.unwrap([[wrapped.value]])).toEqual([{ ok: true, value: secret }]);
    expect(await access.wrap(secret, { storageId: a, domain: 'FIELD' })).toEqual({
      ok: false,
      error: { type: 'NoDomainKey', domain: 'FIELD' },
    });
  });

  it('opens nothing with a generation not held, nor a record moved or malformed: NoKeyOpens', async () => {
    const { access } = holder();
    const notHeld = recordUnder(KEYS.general3, { storageId: a, domain: 'GENERAL', gen: 3 }, secret);
    const moved = { ...recordUnder(KEYS.general1, { storageId: a, domain: 'GENERAL', gen: 1 }, secret), gen: 2 };
    const malformed: AccessRecord[] = [
      { ...moved, gen: 1, storageId: 'not-an-id' as StorageId },
      { ...moved, gen: 0 },
      { ...moved, gen: 1, wrapped: moved.wrapped.subarray(1) },
    ];
    const records = [notHeld, moved, ...malformed];
    expect(await access.unwrap([records])).toEqual([
      { ok: false, error: { type: 'NoKeyOpens', keys: 3, records: records.length } },
    ]);
  });

  it('answers a batch of objects in one call, in order, each from the first record that opens', async () => {
    const { access } = holder();
    const secrets = ['a', 'b', 'c', 'd'].map((s) => bytes(`secret/${s}`));
    const ids = ['a', 'b', 'c', 'd'].map(idOf);
    const objects: AccessRecord[][] = [
      // Rotated: a record of a generation not held, then one of a generation held.
      [
        recordUnder(KEYS.general3, { storageId: ids[0]!, domain: 'GENERAL', gen: 3 }, secrets[0]!),
        recordUnder(KEYS.general1, { storageId: ids[0]!, domain: 'GENERAL', gen: 1 }, secrets[0]!),
      ],
      [recordUnder(KEYS.restricted1, { storageId: ids[1]!, domain: 'RESTRICTED', gen: 1 }, secrets[1]!)],
      [],
      [recordUnder(KEYS.general2, { storageId: ids[3]!, domain: 'GENERAL', gen: 2 }, secrets[3]!)],
    ];
    expect(await access.unwrap(objects)).toEqual([
      { ok: true, value: secrets[0] },
      { ok: true, value: secrets[1] },
      { ok: false, error: { type: 'NoKeyOpens', keys: 3, records: 0 } },
      { ok: true, value: secrets[3] },
    ]);
    expect(await access.unwrap([])).toEqual([]);
  });

  it('tries every key held on every record, whatever it names: the secrets that open and a count of keys', async () => {
    const { access } = holder();
    const held = recordUnder(KEYS.restricted1, { storageId: a, domain: 'RESTRICTED', gen: 1 }, secret);
    const notHeld = recordUnder(KEYS.general3, { storageId: a, domain: 'GENERAL', gen: 3 }, secret);
    expect(await access.tryEveryKey([notHeld, held])).toEqual({ keys: 3, secrets: [secret] });
    expect(await access.tryEveryKey([notHeld])).toEqual({ keys: 3, secrets: [] });
    expect(await access.tryEveryKey([])).toEqual({ keys: 3, secrets: [] });
  });

  it('hands out no domain key: no answer of any method holds one', async () => {
    const { keyring, access } = holder();
    const wrapped = await access.wrap(secret, { storageId: a, domain: 'GENERAL' });
    if (!wrapped.ok) throw new Error(wrapped.error.type);
    const records = [
      wrapped.value,
      recordUnder(KEYS.restricted1, { storageId: a, domain: 'RESTRICTED', gen: 1 }, secret),
    ];
    const answers = [
      await access.current('GENERAL'),
      wrapped,
      await access.unwrap([records, [records[1]!], []]),
      await access.tryEveryKey(records),
    ];
    const found = byteArrays(answers);
    expect(found.length).toBeGreaterThan(0);
    const keys = keyring.list().map((k) => k.key);
    expect(keys).toHaveLength(3);
    for (const b of found) for (const key of keys) expect(contains(b, key)).toBe(false);
  });
});

describe('access keys across a MessageChannel (comlink)', () => {
  const channel = new MessageChannel();
  const { access: local } = holder();
  expose(local, channel.port1);
  const remote = wrap<AccessKeys>(channel.port2);
  const asked: AccessKeys = remote;
  afterAll(() => {
    channel.port1.close();
    channel.port2.close();
  });

  it('answers the same values and typed errors on the other side of the port', async () => {
    const storageId = idOf('remote');
    const secret = bytes('secret/remote');
    expect(await asked.current('GENERAL')).toBe(2);
    const wrapped = await asked.wrap(secret, { storageId, domain: 'RESTRICTED' });
    if (!wrapped.ok) throw new Error(wrapped.error.type);
    expect(wrapped.value.gen).toBe(1);
    const notHeld = recordUnder(KEYS.general3, { storageId, domain: 'GENERAL', gen: 3 }, secret);
    expect(await asked.unwrap([[wrapped.value], [notHeld]])).toEqual([
      { ok: true, value: secret },
      { ok: false, error: { type: 'NoKeyOpens', keys: 3, records: 1 } },
    ]);
    expect(await asked.wrap(secret, { storageId, domain: 'FIELD' })).toEqual({
      ok: false,
      error: { type: 'NoDomainKey', domain: 'FIELD' },
    });
    expect(await asked.tryEveryKey([wrapped.value, notHeld])).toEqual({ keys: 3, secrets: [secret] });
  });
});
