/**
 * Opening a manifest checks every field before anything trusts it: each one
 * malformed in turn — including values of the wrong shape that the next check
 * would take for the right one (a one-element array where a string belongs,
 * a map with keys "0", "1", "2" where an array belongs) — is a
 * `ManifestMalformed` naming that field, even when the producer signed it.
 * The sealed form's bounds (nonce and tag, the size limit) and the column
 * bounds' plain encodings are pinned here too, with bytes written out by hand.
 */
import { gcm } from '@noble/ciphers/aes.js';
import { describe, expect, it } from 'vitest';
import { concat, utf8 } from '../../src/core/bytes.js';
import { decodeCbor, encodeCbor } from '../../src/core/cbor.js';
import { formObject, type FormedObject } from '../../src/core/object/form.js';
import { objectKeys, storageIdBytes } from '../../src/core/object/keys.js';
import {
  boundValue,
  MAX_MANIFEST_BYTES,
  openManifest,
  sealManifest,
  type ObjectManifest,
} from '../../src/core/object/manifest.js';
import type { ColumnSpec } from '../../src/core/parquet/schema.js';
import { webPmeCipher } from '../../src/runtime/pme-cipher.js';
import { nobleVerifier, seededRandom, unsafeTestingSigner } from '../helpers/deterministic.js';

const random = seededRandom('manifest-tests');
const signer = unsafeTestingSigner('producer');

const COLUMNS: ColumnSpec[] = [
  { name: 'ts', type: 'timestamp', nullable: false },
  { name: 'device', type: 'string', nullable: false },
  { name: 'temp', type: 'double', nullable: true },
];

async function form(timeColumn?: string): Promise<FormedObject> {
  const formed = await formObject(
    Array.from({ length: 20 }, (_, i) => ({ ts: 1_720_000_000_000 + i, device: `d${i % 2}`, temp: null })),
    {
      domain: 'GENERAL',
      table: 'measurements',
      columns: COLUMNS,
      ...(timeColumn ? { timeColumn } : {}),
      partitions: { site: 'north' },
      signer,
      random,
      cipher: webPmeCipher,
      hlc: { ms: 1_720_000_000_000, counter: 1 },
    },
  );
  if (!formed.ok) throw new Error(JSON.stringify(formed.error));
  return formed.value;
}

const object = await form('ts');
const { manifestKey } = objectKeys(object.secret);
const aad = concat(utf8('sov/1/manifest'), storageIdBytes(object.storageId));

function seal(plain: Uint8Array): Uint8Array {
  const nonce = random.bytes(12);
  return concat(nonce, gcm(manifestKey, nonce, aad).encrypt(plain));
}

/** The real body as a map, to edit one field at a time. */
function realBody(): Record<string, unknown> {
  const plain = gcm(manifestKey, object.sealedManifest.subarray(0, 12), aad).decrypt(
    object.sealedManifest.subarray(12),
  );
  const outer = decodeCbor(plain, MAX_MANIFEST_BYTES);
  if (!outer.ok) throw new Error('outer');
  const body = decodeCbor((outer.value as Uint8Array[])[0]!, MAX_MANIFEST_BYTES);
  if (!body.ok) throw new Error('body');
  return body.value as Record<string, unknown>;
}

/** A body signed by the producer it names and sealed under the object's key: only its content can be wrong. */
async function signedAndSealed(body: Uint8Array): Promise<Uint8Array> {
  return seal(encodeCbor([body, await signer.sign(concat(utf8('sov/1/manifest'), body))]));
}

async function openEdited(edit: (m: Record<string, unknown>) => void) {
  const m = realBody();
  edit(m);
  return openManifest(await signedAndSealed(encodeCbor(m)), object.storageId, manifestKey, nobleVerifier);
}

const malformed = (detail: string) => ({ ok: false, error: { type: 'ManifestMalformed', detail } });
/** A map that reads like an array to code that only indexes it. */
const arrayLike = (...items: unknown[]) => ({ ...Object.fromEntries(items.map((v, i) => [String(i), v])), length: 3 });

describe('a manifest the producer signed still opens only when every field is well formed', () => {
  it('opens the real one, and one without a time column or with a column that is all nulls', async () => {
    expect(await openEdited(() => {})).toMatchObject({ ok: true, value: { table: 'measurements' } });
    const untimed = await form();
    const opened = await openManifest(
      untimed.sealedManifest,
      untimed.storageId,
      objectKeys(untimed.secret).manifestKey,
      nobleVerifier,
    );
    expect(opened.ok && opened.value.time).toBeUndefined();
    expect(opened.ok && opened.value.columns['temp']).toEqual({ nulls: 20 });
  });

  it.each<[string, (m: Record<string, unknown>) => void, string]>([
    ['version 2', (m) => (m['v'] = 2), 'not a version 1 manifest'],
    ['no version', (m) => delete m['v'], 'not a version 1 manifest'],
    ['a storage id that is not one', (m) => (m['id'] = 'ab'), 'storage id'],
    ['a lower-case domain', (m) => (m['domain'] = 'general'), 'domain'],
    ['a table name with a dash', (m) => (m['table'] = 'bad-table'), 'table'],
    ['a table name inside an array', (m) => (m['table'] = ['measurements']), 'table'],
    ['a schema that is a string', (m) => (m['schema'] = 'ts'), 'schema'],
    ['a schema column of two', (m) => (m['schema'] = [['ts', 'timestamp']]), 'schema column'],
    ['a schema column of four', (m) => (m['schema'] = [['ts', 'timestamp', false, 0]]), 'schema column'],
    ['a schema column as a map', (m) => (m['schema'] = [arrayLike('ts', 'timestamp', false)]), 'schema column'],
    ['a column name inside an array', (m) => (m['schema'] = [[['ts'], 'timestamp', false]]), 'schema column'],
    ['nullable as a string', (m) => (m['schema'] = [['ts', 'timestamp', 'no']]), 'schema column'],
    ['an unknown column type', (m) => (m['schema'] = [['ts', 'varchar', false]]), 'schema column type'],
    [
      'a column twice',
      (m) =>
        (m['schema'] = [
          ['ts', 'timestamp', false],
          ['ts', 'timestamp', false],
        ]),
      'schema',
    ],
    ['no columns', (m) => (m['schema'] = []), 'schema'],
    ['negative rows', (m) => (m['rows'] = -1), 'counts'],
    ['fractional rows', (m) => (m['rows'] = 1.5), 'counts'],
    ['rows as a string', (m) => (m['rows'] = '20'), 'counts'],
    ['negative bytes', (m) => (m['bytes'] = -1), 'counts'],
    ['a time that is a string', (m) => (m['time'] = 'ts'), 'time'],
    ['a time as a map', (m) => (m['time'] = arrayLike('ts', 1, 2)), 'time'],
    ['a time column inside an array', (m) => (m['time'] = [['ts'], 1, 2]), 'time'],
    ['a time minimum as a string', (m) => (m['time'] = ['ts', '1', 2]), 'time'],
    ['a time maximum as a string', (m) => (m['time'] = ['ts', 1, '2']), 'time'],
    ['partitions as an array', (m) => (m['parts'] = ['north']), 'partitions'],
    ['a partition value that is a number', (m) => (m['parts'] = { site: 1 }), 'partitions'],
    ['columns as a string', (m) => (m['cols'] = 'abc'), 'columns'],
    ['bounds of two', (m) => (m['cols'] = { temp: [0, null] }), 'bounds of temp'],
    ['bounds of four', (m) => (m['cols'] = { temp: [0, null, null, 0] }), 'bounds of temp'],
    ['bounds as a map', (m) => (m['cols'] = { temp: arrayLike(0, null, null) }), 'bounds of temp'],
    ['a negative null count', (m) => (m['cols'] = { temp: [-1, null, null] }), 'bounds of temp'],
    ['a minimum as text', (m) => (m['cols'] = { temp: [0, 'a', null] }), 'bounds of temp'],
    ['a maximum as a number', (m) => (m['cols'] = { temp: [0, null, 5] }), 'bounds of temp'],
    ['a producer key of 31 bytes', (m) => (m['producer'] = 'ab'.repeat(31)), 'producer'],
    ['a producer key that is not hex', (m) => (m['producer'] = 'zz'.repeat(32)), 'producer'],
    ['a producer key as an array', (m) => (m['producer'] = Array.from({ length: 64 }, () => 'a')), 'producer'],
    ['a clock that is a number', (m) => (m['hlc'] = 5), 'hlc'],
    ['a clock as a map', (m) => (m['hlc'] = { '0': 5, '1': 0 }), 'hlc'],
    ['a clock without its counter', (m) => (m['hlc'] = [5]), 'hlc'],
    ['a negative clock', (m) => (m['hlc'] = [-1, 0]), 'hlc'],
    ['supersedes as a map', (m) => (m['sup'] = {}), 'supersedes'],
    ['supersedes naming no object', (m) => (m['sup'] = ['ab']), 'supersedes'],
    ['a row origin of 7 bytes', (m) => (m['origin'] = 'ab'.repeat(7)), 'row origin'],
    ['a row origin that is not hex', (m) => (m['origin'] = 'zz'.repeat(8)), 'row origin'],
    ['a row origin as an array', (m) => (m['origin'] = Array.from({ length: 16 }, () => 'a')), 'row origin'],
    ['a field nobody defined', (m) => (m['extra'] = 1), 'not in canonical form'],
  ])('refuses %s', async (_, edit, detail) => {
    expect(await openEdited(edit)).toEqual(malformed(detail));
  });

  it('refuses a body that is not CBOR with the decoder’s reason', async () => {
    const garbage = new Uint8Array([0xff, 0x00]);
    const reason = decodeCbor(garbage, MAX_MANIFEST_BYTES);
    expect(reason.ok).toBe(false);
    expect(await openManifest(await signedAndSealed(garbage), object.storageId, manifestKey, nobleVerifier)).toEqual(
      malformed(reason.ok ? '' : reason.error.reason),
    );
  });

  it('refuses a well-formed manifest that names another object', async () => {
    const other = await form('ts');
    const m = realBody();
    m['id'] = other.storageId;
    expect(
      await openManifest(await signedAndSealed(encodeCbor(m)), object.storageId, manifestKey, nobleVerifier),
    ).toEqual({ ok: false, error: { type: 'ManifestMismatch', detail: 'names another object' } });
  });
});

describe('the sealed form', () => {
  const body = encodeCbor(realBody());

  it.each<[string, () => Promise<Uint8Array>]>([
    ['a string', async () => encodeCbor('manifest')],
    ['an array of three', async () => encodeCbor([body, new Uint8Array(64), new Uint8Array(0)])],
    ['a body that is text', async () => encodeCbor(['body', new Uint8Array(64)])],
    ['a signature of 63 bytes', async () => encodeCbor([body, new Uint8Array(63)])],
    ['nothing at all: nonce and tag only', async () => new Uint8Array(0)],
  ])('refuses an envelope that is %s', async (_, plain) => {
    expect(await openManifest(seal(await plain()), object.storageId, manifestKey, nobleVerifier)).toEqual(
      malformed('envelope'),
    );
  });

  it('refuses what is shorter than a nonce and a tag, or longer than the limit, as unreadable', async () => {
    const unreadable = { ok: false, error: { type: 'ManifestUnreadable' } };
    const sealed = object.sealedManifest;
    for (const short of [sealed.subarray(0, 27), sealed.subarray(0, 12), new Uint8Array(0)]) {
      expect(await openManifest(short, object.storageId, manifestKey, nobleVerifier)).toEqual(unreadable);
    }
    const huge = await sealedOfSize(MAX_MANIFEST_BYTES + 1);
    expect(await openManifest(huge, object.storageId, manifestKey, nobleVerifier)).toEqual(unreadable);
  });

  it('opens a manifest of exactly the size limit', async () => {
    const exact = await sealedOfSize(MAX_MANIFEST_BYTES);
    expect(exact).toHaveLength(MAX_MANIFEST_BYTES);
    expect(await openManifest(exact, object.storageId, manifestKey, nobleVerifier)).toMatchObject({ ok: true });
  });

  /** A signed manifest whose sealed form is `size` bytes, padded by a long partition value. */
  async function sealedOfSize(size: number): Promise<Uint8Array> {
    let pad = size - 400;
    for (;;) {
      const m = realBody();
      m['parts'] = { site: 'x'.repeat(pad) };
      const sealed = await signedAndSealed(encodeCbor(m));
      if (sealed.length === size) return sealed;
      pad += size - sealed.length;
    }
  }

  it('is made only by the producer the manifest names', async () => {
    const opened = await openManifest(object.sealedManifest, object.storageId, manifestKey, nobleVerifier);
    if (!opened.ok) throw new Error('open');
    const manifest: ObjectManifest = opened.value;
    await expect(sealManifest(manifest, unsafeTestingSigner('impostor'), manifestKey, random)).rejects.toThrow(
      'manifest: the producer must sign its own manifest',
    );
  });
});

describe('column bounds in their Parquet plain encoding', () => {
  const bytes = (...b: number[]) => new Uint8Array(b);

  it.each<[ColumnSpec['type'], Uint8Array, unknown]>([
    ['boolean', bytes(1), true],
    ['boolean', bytes(0), false],
    ['int32', bytes(0xfe, 0xff, 0xff, 0xff), -2],
    ['int32', bytes(0x01, 0x02, 0x00, 0x00), 0x0201],
    ['int64', bytes(0x01, 0x02, 0, 0, 0, 0, 0, 0x80), -0x7ffffffffffffdffn],
    ['timestamp', bytes(0x00, 0x10, 0, 0, 0, 0, 0, 0), 0x1000],
    ['float', bytes(0x00, 0x00, 0xc0, 0x3f), 1.5],
    ['double', bytes(0, 0, 0, 0, 0, 0, 0xf8, 0x3f), 1.5],
    ['double', bytes(0, 0, 0, 0, 0, 0, 0xf0, 0xff), -Infinity],
    ['string', utf8('d2'), 'd2'],
  ])('decodes %s from %o', (type, plain, value) => {
    expect(boundValue(type, plain)).toStrictEqual(value);
  });

  it('gives a row id as a copy of its bytes', () => {
    const id = bytes(1, 2, 3, 4, 5, 6, 7, 8, 0, 0, 0, 0);
    const value = boundValue('rowid', id) as Uint8Array;
    expect(value).toEqual(id);
    id[0] = 9;
    expect(value[0]).toBe(1);
  });
});
