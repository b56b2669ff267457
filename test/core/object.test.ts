/**
 * SOP/1 objects end to end in the core: forming (row identity, storage id as
 * BLAKE3 of the bytes, the signed and sealed manifest with its pruning
 * statistics), access records bound to object, domain and generation, and
 * opening — with the refusals the issue names: a flipped byte, the wrong
 * secret, a truncated file, a manifest with a bad signature, an access record
 * for another domain.
 */
import { gcm } from '@noble/ciphers/aes.js';
import { blake3 as nobleBlake3 } from '@noble/hashes/blake3.js';
import { describe, expect, it } from 'vitest';
import { concat, toHex, utf8 } from '../../src/core/bytes.js';
import { decodeCbor, encodeCbor } from '../../src/core/cbor.js';
import { blake3Stream } from '../../src/core/hash.js';
import { unwrapSecret, wrapSecret } from '../../src/core/object/access.js';
import { formObject, openObject, verifyStorageId } from '../../src/core/object/form.js';
import { objectKeys, storageIdBytes } from '../../src/core/object/keys.js';
import { boundValue, openManifest, sealManifest } from '../../src/core/object/manifest.js';
import type { CellValue, ColumnSpec } from '../../src/core/parquet/schema.js';
import { UNCOMPRESSED, type PageCompression } from '../../src/core/parquet/write.js';
import { webPmeCipher } from '../../src/runtime/pme-cipher.js';
import type { Random } from '../../src/core/ports.js';
import { nobleVerifier, seededRandom, unsafeTestingSigner } from '../helpers/deterministic.js';

const random = seededRandom('object-tests');
const signer = unsafeTestingSigner('collector');
const deps = { verifier: nobleVerifier, cipher: webPmeCipher };

const COLUMNS: ColumnSpec[] = [
  { name: 'ts', type: 'timestamp', nullable: false },
  { name: 'device', type: 'string', nullable: false },
  { name: 'temp', type: 'double', nullable: true },
];

const rows = (n: number, start = 1_720_000_000_000): Record<string, CellValue>[] =>
  Array.from({ length: n }, (_, i) => ({
    ts: start + i * 60_000,
    device: `d${i % 3}`,
    temp: i % 4 ? 20 + i / 10 : null,
  }));

async function form(
  n = 500,
  extra: { rowGroupRows?: number; compression?: PageCompression; pageBytes?: number; random?: Random } = {},
) {
  const formed = await formObject(rows(n), {
    domain: 'GENERAL',
    table: 'measurements',
    columns: COLUMNS,
    timeColumn: 'ts',
    partitions: { site: 'north-shed' },
    signer,
    random,
    cipher: webPmeCipher,
    hlc: { ms: 1_720_000_000_000, counter: 3 },
    ...extra,
  });
  if (!formed.ok) throw new Error(JSON.stringify(formed.error));
  return formed.value;
}

describe('forming an object', () => {
  it('names it by the BLAKE3 of its encrypted bytes and describes it in a signed manifest', async () => {
    const o = await form(500, { rowGroupRows: 200 });
    expect(o.storageId).toBe(toHex(nobleBlake3(o.bytes!)));
    expect(o.manifest).toMatchObject({
      domain: 'GENERAL',
      table: 'measurements',
      rows: 500,
      bytes: o.bytes!.length,
      time: { column: 'ts', min: 1_720_000_000_000, max: 1_720_000_000_000 + 499 * 60_000 },
      partitions: { site: 'north-shed' },
      producer: toHex(signer.publicKey),
      supersedes: [],
    });
    expect(boundValue('string', o.manifest.columns['device']!.max!)).toBe('d2');
    expect(o.manifest.columns['temp']!.nulls).toBe(125);
    const opened = await openObject(o.bytes!, o, deps);
    if (!opened.ok) throw new Error(JSON.stringify(opened.error));
    expect(opened.value.manifest).toEqual(o.manifest);
    const back = await opened.value.file.readRows();
    expect(
      back.ok && back.value.map((r) => Object.fromEntries(Object.entries(r).filter(([k]) => k !== '_row_id'))),
    ).toEqual(rows(500));
  });

  it('gives every row a stable identity: the object’s 8-byte origin and the row’s ordinal', async () => {
    const o = await form(300, { rowGroupRows: 128 });
    const opened = await openObject(o.bytes!, o, deps);
    if (!opened.ok) throw new Error('open');
    const ids = await opened.value.file.readColumns({ columns: ['_row_id'] });
    if (!ids.ok) throw new Error('ids');
    const list = Array.from(ids.value['_row_id'] as ArrayLike<Uint8Array>);
    expect(new Set(list.map(toHex)).size).toBe(300);
    list.forEach((id, i) => {
      expect(toHex(id.subarray(0, 8))).toBe(o.manifest.rowOrigin);
      expect(new DataView(id.buffer, id.byteOffset).getBigUint64(8)).toBe(BigInt(i));
    });
  });

  it('hashes in pieces exactly as in one piece', async () => {
    const data = random.bytes(300_000);
    const stream = await blake3Stream();
    for (let at = 0; at < data.length; at += 65_537) stream.update(data.subarray(at, at + 65_537));
    expect(toHex(stream.digest())).toBe(toHex(nobleBlake3(data)));
  });

  it('refuses a caller’s own _row_id column and a time column that is not a timestamp', async () => {
    const base = { domain: 'GENERAL', table: 't', signer, random, cipher: webPmeCipher, hlc: { ms: 1, counter: 0 } };
    const invalid = (detail: string) => ({ ok: false, error: { type: 'InvalidObject', detail } });
    const own = await formObject([], {
      ...base,
      columns: [...COLUMNS, { name: '_row_id', type: 'rowid', nullable: false }],
    });
    expect(own).toEqual(invalid('_row_id is added by the object writer'));
    const time = await formObject([], { ...base, columns: COLUMNS, timeColumn: 'device' });
    expect(time).toEqual(invalid('time column device is not a timestamp column'));
    const missing = await formObject([], { ...base, columns: COLUMNS, timeColumn: 'when' });
    expect(missing).toEqual(invalid('time column when is not a timestamp column'));
    const empty = await formObject([], { ...base, columns: COLUMNS });
    expect(empty).toEqual(invalid('an object holds at least one row'));
  });

  it('writes pages with the compression and page size it is given', async () => {
    const plain = await form(2000, { compression: UNCOMPRESSED });
    const snappy = await form(2000);
    const opened = await openObject(plain.bytes!, plain, deps);
    if (!opened.ok) throw new Error(opened.error.type);
    const codecs = opened.value.file.metadata.row_groups.flatMap((g) => g.columns.map((c) => c.meta_data?.codec));
    expect(new Set(codecs)).toEqual(new Set(['UNCOMPRESSED']));
    expect(plain.bytes!.length).toBeGreaterThan(snappy.bytes!.length);
    // Smaller pages: more page headers (each its own encrypted module) in the same object, the
    // two formed from the same random draws so that nothing else differs.
    const whole = await form(2000, { random: seededRandom('paging') });
    const paged = await form(2000, { random: seededRandom('paging'), pageBytes: 1024 });
    expect(paged.bytes!.length).toBeGreaterThan(whole.bytes!.length + 10 * 28);
  });
});

describe('opening an object refuses, with a typed error', () => {
  it('a flipped byte anywhere (the storage id no longer matches)', async () => {
    const o = await form(50);
    for (const at of [0, 10, Math.floor(o.bytes!.length / 2), o.bytes!.length - 1]) {
      const changed = o.bytes!.slice();
      changed[at] = changed[at]! ^ 1;
      expect(await openObject(changed, o, deps)).toMatchObject({
        ok: false,
        error: { type: 'StorageIdMismatch', expected: o.storageId },
      });
    }
  });

  it('a manifest whose row count differs from the object, even signed by its producer', async () => {
    const o = await form(50);
    const { manifestKey } = objectKeys(o.secret);
    const resealed = await sealManifest({ ...o.manifest, rows: 51 }, signer, manifestKey, random);
    expect(await openObject(o.bytes!, { ...o, sealedManifest: resealed }, deps)).toEqual({
      ok: false,
      error: { type: 'ManifestMismatch', detail: 'row count differs from the object' },
    });
  });

  it('a truncated file', async () => {
    const o = await form(50);
    expect(await openObject(o.bytes!.subarray(0, o.bytes!.length - 9), o, deps)).toMatchObject({
      ok: false,
      error: { type: 'StorageIdMismatch' },
    });
    expect(await verifyStorageId(o.bytes!, o.storageId)).toEqual({ ok: true, value: undefined });
  });

  it('the wrong object secret', async () => {
    const o = await form(50);
    expect(await openObject(o.bytes!, { ...o, secret: random.bytes(32) }, deps)).toEqual({
      ok: false,
      error: { type: 'ManifestUnreadable' },
    });
  });

  it('another object’s manifest', async () => {
    const [a, b] = [await form(50), await form(60)];
    expect(await openObject(a.bytes!, { ...a, sealedManifest: b.sealedManifest }, deps)).toEqual({
      ok: false,
      error: { type: 'ManifestUnreadable' },
    });
  });

  it('a manifest whose signature does not verify, or that another machine signed in the producer’s name', async () => {
    const o = await form(50);
    const { manifestKey } = objectKeys(o.secret);
    const aad = concat(utf8('sov/1/manifest'), storageIdBytes(o.storageId));
    const open = (s: Uint8Array) => gcm(manifestKey, s.subarray(0, 12), aad).decrypt(s.subarray(12));
    const reseal = (plain: Uint8Array) => {
      const nonce = random.bytes(12);
      return concat(nonce, gcm(manifestKey, nonce, aad).encrypt(plain));
    };
    const decoded = decodeCbor(open(o.sealedManifest), 1 << 20);
    if (!decoded.ok) throw new Error('decode');
    const [body, signature] = decoded.value as [Uint8Array, Uint8Array];
    const flipped = signature.slice();
    flipped[0] = flipped[0]! ^ 1;
    expect(await openManifest(reseal(encodeCbor([body, flipped])), o.storageId, manifestKey, nobleVerifier)).toEqual({
      ok: false,
      error: { type: 'ManifestSignatureInvalid' },
    });
    const impostor = unsafeTestingSigner('impostor');
    const forged = await impostor.sign(concat(utf8('sov/1/manifest'), body));
    expect(await openManifest(reseal(encodeCbor([body, forged])), o.storageId, manifestKey, nobleVerifier)).toEqual({
      ok: false,
      error: { type: 'ManifestSignatureInvalid' },
    });
  });
});

describe('access records', () => {
  const kek = random.bytes(32);

  it('wrap an object secret in 60 bytes and give it back under the same KEK', async () => {
    const o = await form(10);
    const record = wrapSecret(o.secret, { storageId: o.storageId, domain: 'GENERAL', gen: 2 }, kek, random);
    expect(record.wrapped).toHaveLength(60);
    const secret = unwrapSecret(record, kek);
    expect(secret.ok && toHex(secret.value)).toBe(toHex(o.secret));
  });

  it('do not open for another domain, generation or object, nor under another KEK', async () => {
    const [a, b] = [await form(10), await form(11)];
    const record = wrapSecret(a.secret, { storageId: a.storageId, domain: 'GENERAL', gen: 2 }, kek, random);
    const mismatch = { ok: false, error: { type: 'AccessRecordMismatch' } };
    expect(unwrapSecret({ ...record, domain: 'RESTRICTED' }, kek)).toMatchObject(mismatch);
    expect(unwrapSecret({ ...record, gen: 3 }, kek)).toMatchObject(mismatch);
    expect(unwrapSecret({ ...record, storageId: b.storageId }, kek)).toMatchObject(mismatch);
    expect(unwrapSecret(record, random.bytes(32))).toMatchObject(mismatch);
    expect(unwrapSecret({ ...record, wrapped: record.wrapped.subarray(1) }, kek)).toEqual({
      ok: false,
      error: { type: 'AccessRecordMalformed' },
    });
  });
});
