/**
 * Every rule of an event body (core/event.ts `checkBody`) as a row of a table: one valid
 * body changed in one way, and the exact reason it is refused with — so a rule that stops
 * being checked, or checks the wrong thing, fails here by name.
 */
import { describe, expect, it } from 'vitest';
import { toHex } from '../../src/core/bytes.js';
import { encodeCbor } from '../../src/core/cbor.js';
import {
  checkBody,
  decodeEvent,
  MAX_COLUMNS,
  MAX_EVENT_BYTES,
  MAX_NAME_CHARS,
  MAX_VALUE_CHARS,
  signEvent,
  ZERO_HASH,
  type EventBody,
} from '../../src/core/event.js';
import { unsafeTestingSigner } from '../helpers/deterministic.js';

const SIGNER = new Uint8Array(32).fill(7);
const REMOVAL = 'a removal carries only {hwm: uint, trusted_hwm?: uint, domain_hwms?: "DOMAIN[/lane]=seq,…"}';
const HLC = { ms: 1_704_067_200_000, counter: 0 };

/** A valid body: a device-profile put in GENERAL. */
const put = (over: Record<string, unknown> = {}): Record<string, unknown> => ({
  v: 1,
  domain: 'GENERAL',
  signer: SIGNER,
  seq: 1,
  prev: ZERO_HASH,
  table: 'device_profiles',
  row: 'pump-1',
  op: 'put',
  cols: { name: 'Pump 1' },
  hlc: HLC,
  ...over,
});
const control = (over: Record<string, unknown>): Record<string, unknown> =>
  put({ domain: 'CONTROL', table: 'keyring', row: 'ab', ...over });
const without = (body: Record<string, unknown>, field: string): Record<string, unknown> =>
  Object.fromEntries(Object.entries(body).filter(([name]) => name !== field));
const manyColumns = Object.fromEntries(Array.from({ length: MAX_COLUMNS + 1 }, (_, i) => [`c${i}`, 1]));

describe('event bodies: each rule refuses with its reason', () => {
  it.each([
    ['not a map', [1, 2], 'body is not a map'],
    ['null', null, 'body is not a map'],
    ['a field missing', without(put(), 'hlc'), 'unexpected fields cols,domain,op,prev,row,seq,signer,table,v'],
    ['a field too many', put({ extra: 1 }), 'unexpected fields cols,domain,extra,hlc,op,prev,row,seq,signer,table,v'],
    ['lane public spelled out', put({ lane: 'public' }), 'bad lane'],
    [
      'a control record off the public lane',
      control({ lane: 'trusted', cols: { name: 'M' } }),
      'control records travel in the public lane',
    ],
    ['version 2', put({ v: 2 }), 'unsupported version'],
    ['a lowercase domain', put({ domain: 'general' }), 'unknown domain'],
    ['a 31-byte signer', put({ signer: SIGNER.subarray(1) }), 'signer must be 32 bytes'],
    ['seq 0', put({ seq: 0 }), 'bad seq'],
    ['a fractional seq', put({ seq: 1.5 }), 'bad seq'],
    ['seq as text', put({ seq: '1' }), 'bad seq'],
    ['a 31-byte prev', put({ prev: ZERO_HASH.subarray(1) }), 'prev must be 32 bytes'],
    ['an empty table name', put({ table: '' }), 'bad table or row name'],
    ['a row name with a space', put({ row: 'pump 1' }), 'bad table or row name'],
    ['a row name too long', put({ row: 'r'.repeat(MAX_NAME_CHARS + 1) }), 'bad table or row name'],
    ['a row name as a number', put({ row: 5 }), 'bad table or row name'],
    ['an unknown op', put({ op: 'upsert' }), 'unsupported op'],
    ['a bad hlc', put({ hlc: { ms: -1, counter: 0 } }), 'bad hlc'],
    ['a table of another domain', put({ domain: 'CONTROL' }), 'table device_profiles is not in domain CONTROL'],
    ['an unknown table', put({ table: 'nope' }), 'table nope is not in domain GENERAL'],
    ['cols not a map', put({ cols: [1] }), 'cols is not a map'],
    ['a delete with columns', put({ op: 'del' }), 'a delete carries no columns'],
    ['a delete of a table without deletes', control({ op: 'del', cols: {} }), 'rows of keyring cannot be deleted'],
    [
      'a removal of a table without removals',
      put({ op: 'remove', cols: { hwm: 1 } }),
      'rows of device_profiles cannot be removed',
    ],
    ['a removal without hwm', control({ op: 'remove', cols: {} }), REMOVAL],
    ['a removal with a negative hwm', control({ op: 'remove', cols: { hwm: -1 } }), REMOVAL],
    ['a removal with a fractional hwm', control({ op: 'remove', cols: { hwm: 1.5 } }), REMOVAL],
    ['a removal with a bad trusted_hwm', control({ op: 'remove', cols: { hwm: 1, trusted_hwm: 'x' } }), REMOVAL],
    ['a removal with another column', control({ op: 'remove', cols: { hwm: 1, name: 'x' } }), REMOVAL],
    ['a removal with malformed domain marks', control({ op: 'remove', cols: { hwm: 1, domain_hwms: 'r=1' } }), REMOVAL],
    ['a put without columns', put({ cols: {} }), 'cols count out of range'],
    ['a put with too many columns', put({ cols: manyColumns }), 'cols count out of range'],
    [
      'exactly the most columns, none of them known',
      put({ cols: Object.fromEntries(Array.from({ length: MAX_COLUMNS }, (_, i) => [`c${i}`, 1])) }),
      'unknown column device_profiles.c0',
    ],
    ['an unknown column', put({ cols: { colour: 'red' } }), 'unknown column device_profiles.colour'],
    ['a column of the wrong type', put({ cols: { active: 'yes' } }), 'column device_profiles.active expects boolean'],
    [
      'a value too long',
      put({ cols: { notes: 'x'.repeat(MAX_VALUE_CHARS + 1) } }),
      'column device_profiles.notes too long',
    ],
    [
      'a value outside its choices',
      control({ table: 'sync_manifest', row: 'device_profiles', cols: { class: 'open' } }),
      'column sync_manifest.class expects one of public|trusted|local',
    ],
    [
      'a row of a domain-per-row table in another domain',
      put({ table: 'field_notes', row: 'RESTRICTED:1', cols: { title: 't' } }),
      'row RESTRICTED:1 of field_notes is not in domain GENERAL',
    ],
    ['a row name that is a list', put({ row: ['pump'] }), 'bad table or row name'],
    [
      'a removal with a third column beside both marks',
      control({ op: 'remove', cols: { hwm: 1, other: 0, trusted_hwm: 0 } }),
      REMOVAL,
    ],
    [
      'a number that is not finite',
      control({ table: 'settings', row: 'retention', cols: { value: Infinity } }),
      'column settings.value not finite',
    ],
    [
      'a role outside its ranks',
      control({ table: 'roles', row: 'ab', cols: { role: 'owner' } }),
      'column roles.role expects one of member|admin',
    ],
  ] as const)('%s', (_, body, reason) => {
    expect(checkBody(body)).toBe(reason);
  });

  it('accepts the edges: the longest name and value, the most columns, nulls, lanes and every removal shape', () => {
    const accepted = [
      put(),
      put({ row: 'r'.repeat(MAX_NAME_CHARS) }),
      put({ cols: { notes: 'x'.repeat(MAX_VALUE_CHARS), location: null } }),
      put({ lane: 'trusted' }),
      put({ lane: 'local' }),
      put({ op: 'del', cols: {} }),
      control({ cols: { name: 'M', trusted: true } }),
      control({ op: 'remove', cols: { hwm: 0 } }),
      control({ op: 'remove', cols: { hwm: 3, trusted_hwm: 0 } }),
      control({ op: 'remove', cols: { trusted_hwm: 0, hwm: 3 } }), // fields in any order
      control({ table: 'settings', row: 'retention', cols: { value: 1.5 } }),
      control({ op: 'remove', cols: { hwm: 3, trusted_hwm: 2, domain_hwms: 'RESTRICTED=4,RESTRICTED/trusted=1' } }),
      control({ table: 'sync_manifest', row: 'device_profiles', cols: { class: 'trusted' } }),
    ];
    for (const body of accepted) expect(checkBody(body), JSON.stringify(body)).toBeUndefined();
  });
});

describe('event size: the largest body signs and decodes, one byte more is refused', () => {
  const signer = unsafeTestingSigner('event-size');
  /** A put whose encoded body is exactly `bytes` long (device profiles: five columns of up to 16 Ki characters). */
  const bodyOf = (bytes: number): EventBody => {
    const base = { ...put(), signer: signer.publicKey } as unknown as EventBody;
    const third = MAX_VALUE_CHARS;
    const cols = { name: 'n'.repeat(third), location: 'l'.repeat(third), schedule: 's'.repeat(third), notes: '' };
    const room = bytes - encodeCbor({ ...base, cols }).length;
    const body = { ...base, cols: { ...cols, notes: 'x'.repeat(room - 2) } };
    // The notes' length header grows from one byte to three past 23 and to five past 65,535; settle it.
    const fix = bytes - encodeCbor(body).length;
    return { ...body, cols: { ...body.cols, notes: 'x'.repeat(room - 2 + fix) } };
  };

  it('signs and decodes a body of exactly MAX_EVENT_BYTES', async () => {
    const body = bodyOf(MAX_EVENT_BYTES);
    expect(encodeCbor(body).length).toBe(MAX_EVENT_BYTES);
    const event = await signEvent(body, signer);
    expect(event.bytes.length).toBeGreaterThan(MAX_EVENT_BYTES);
    const decoded = decodeEvent(event.bytes);
    expect(decoded.ok && toHex(decoded.value.id)).toBe(toHex(event.id));
  });

  it('refuses to sign a body one byte larger', async () => {
    const body = bodyOf(MAX_EVENT_BYTES + 1);
    expect(encodeCbor(body).length).toBe(MAX_EVENT_BYTES + 1);
    await expect(signEvent(body, signer)).rejects.toThrow('event: body exceeds size limit');
  });
});
