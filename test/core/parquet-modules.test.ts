/**
 * Parquet Modular Encryption's framing (core/parquet/modules.ts, Encryption.md §4): each
 * module's AAD byte for byte (prefix ‖ file unique ‖ module type ‖ row group ‖ column ‖
 * page, little-endian 16-bit ordinals, present only for the module types the specification
 * gives them), the ordinal range, the module length frame, and the GCM and CTR bodies —
 * the CTR keystream checked against @noble/ciphers, an implementation of its own.
 */
import { ctr, gcm } from '@noble/ciphers/aes.js';
import { describe, expect, it } from 'vitest';
import { toHex } from '../../src/core/bytes.js';
import {
  isAesKeyLength,
  MODULE,
  moduleAad,
  moduleAt,
  openCtrBody,
  openGcmBody,
  sealModule,
} from '../../src/core/parquet/modules.js';
import { webPmeCipher } from '../../src/runtime/pme-cipher.js';

const file = { prefix: Uint8Array.of(0xaa, 0xbb), fileUnique: Uint8Array.of(0x01, 0x02, 0x03) };
const ordinals = { rowGroup: 0x0102, column: 0x0304, page: 0x0506 };

describe('module AADs', () => {
  it('carries ordinals only where the specification gives them', () => {
    const aad = (type: (typeof MODULE)[keyof typeof MODULE]) => toHex(moduleAad(file, type, ordinals));
    expect(aad(MODULE.FOOTER)).toBe('aabb01020300');
    expect(aad(MODULE.COLUMN_META)).toBe('aabb010203' + '01' + '0201' + '0403');
    expect(aad(MODULE.DICTIONARY_PAGE)).toBe('aabb010203' + '03' + '0201' + '0403');
    expect(aad(MODULE.DICTIONARY_PAGE_HEADER)).toBe('aabb010203' + '05' + '0201' + '0403');
    expect(aad(MODULE.DATA_PAGE)).toBe('aabb010203' + '02' + '0201' + '0403' + '0605');
    expect(aad(MODULE.DATA_PAGE_HEADER)).toBe('aabb010203' + '04' + '0201' + '0403' + '0605');
    // Missing ordinals are zero; DuckDB's files seal with no AAD at all.
    expect(toHex(moduleAad(file, MODULE.DATA_PAGE))).toBe('aabb010203' + '02' + '0000' + '0000' + '0000');
    expect(moduleAad({ ...file, none: true }, MODULE.DATA_PAGE, ordinals)).toEqual(new Uint8Array(0));
  });

  it('takes ordinals from 0 to 32,767 and refuses any other', () => {
    expect(toHex(moduleAad(file, MODULE.DATA_PAGE, { rowGroup: 0x7fff, column: 0, page: 0 }))).toBe(
      'aabb01020302ff7f00000000',
    );
    for (const bad of [-1, 0x8000, 1.5, Number.NaN]) {
      expect(() => moduleAad(file, MODULE.COLUMN_META, { column: bad })).toThrow(`pme: ordinal ${bad} out of range`);
    }
    expect(() => moduleAad(file, MODULE.DATA_PAGE, { page: 0x8000 })).toThrow('pme: ordinal 32768 out of range');
  });
});

describe('module frames and bodies', () => {
  it('knows AES key lengths: 16, 24 and 32 bytes', () => {
    expect([0, 15, 16, 17, 24, 31, 32, 33].map((n) => isAesKeyLength(new Uint8Array(n)))).toEqual([
      false,
      false,
      true,
      false,
      true,
      false,
      true,
      false,
    ]);
  });

  it('reads a module length frame exactly, and says where one is cut', () => {
    const bytes = Uint8Array.of(9, 9, 3, 0, 0, 0, 7, 8, 9, 1);
    const at = moduleAt(bytes, 2, 'm');
    expect(at).toEqual({ ok: true, value: { body: Uint8Array.of(7, 8, 9), end: 9 } });
    expect(moduleAt(bytes.subarray(0, 9), 2, 'm').ok).toBe(true);
    expect(moduleAt(bytes.subarray(0, 8), 2, 'm')).toEqual({
      ok: false,
      error: { type: 'Truncated', detail: 'm: module of 3 bytes runs past the end' },
    });
    expect(moduleAt(bytes, 7, 'm')).toEqual({
      ok: false,
      error: { type: 'Truncated', detail: 'm: no module length at 7' },
    });
    expect(moduleAt(bytes, -1, 'm')).toEqual({
      ok: false,
      error: { type: 'Truncated', detail: 'm: no module length at -1' },
    });
  });

  it('opens a GCM body sealed by sealModule, refuses one too short for a nonce and tag', async () => {
    const raw = new Uint8Array(24).fill(7);
    const key = await webPmeCipher.key(raw);
    const nonce = new Uint8Array(12).fill(1);
    const aad = moduleAad(file, MODULE.FOOTER);
    const module = await sealModule(key, nonce, aad, Uint8Array.of(1, 2, 3));
    // The same bytes as another GCM implementation seals.
    expect(module.subarray(4)).toEqual(
      Uint8Array.from([...nonce, ...gcm(raw, nonce, aad).encrypt(Uint8Array.of(1, 2, 3))]),
    );
    const body = moduleAt(module, 0, 'footer');
    if (!body.ok) throw new Error('frame');
    expect(await openGcmBody(key, aad, body.value.body, 'footer')).toEqual({ ok: true, value: Uint8Array.of(1, 2, 3) });
    expect(await openGcmBody(key, new Uint8Array(0), body.value.body, 'footer')).toEqual({
      ok: false,
      error: { type: 'DecryptFailed', module: 'footer' },
    });
    // 28 bytes is a nonce and a tag around nothing: it is opened (and here fails); 27 is not a module.
    expect(await openGcmBody(key, aad, new Uint8Array(28), 'p')).toEqual({
      ok: false,
      error: { type: 'DecryptFailed', module: 'p' },
    });
    expect(await openGcmBody(key, aad, new Uint8Array(27), 'p')).toEqual({
      ok: false,
      error: { type: 'Malformed', detail: 'p: module too short' },
    });
  });

  it('opens a CTR body with the counter block nonce ‖ 00000001', async () => {
    const raw = new Uint8Array(16).fill(3);
    const key = await webPmeCipher.key(raw);
    const nonce = Uint8Array.from({ length: 12 }, (_, i) => i + 1);
    const plain = Uint8Array.from({ length: 40 }, (_, i) => i);
    const counter = Uint8Array.from([...nonce, 0, 0, 0, 1]);
    const body = Uint8Array.from([...nonce, ...ctr(raw, counter).encrypt(plain)]);
    expect(await openCtrBody(key, body, 'c')).toEqual({ ok: true, value: plain });
    expect(await openCtrBody(key, nonce, 'c')).toEqual({ ok: true, value: new Uint8Array(0) });
    expect(await openCtrBody(key, nonce.subarray(1), 'c')).toEqual({
      ok: false,
      error: { type: 'Malformed', detail: 'c: module too short' },
    });
  });
});
