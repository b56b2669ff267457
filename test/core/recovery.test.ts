/**
 * Recovery material in the core (core/recovery): the recovery code (a mistype told apart
 * from a wrong code), the kit sealed under it (every field back, a wrong code, a changed or
 * cut file, a forged cost), checkpoints (sealed, opened only with their secret and mesh) and
 * recovery roots (signed, opened only by a kit they name, refused when forged or moved).
 */
import { describe, expect, it } from 'vitest';
import { toHex } from '../../src/core/bytes.js';
import { decodeCbor, encodeCbor } from '../../src/core/cbor.js';
import { blake3 } from '../../src/core/hash.js';
import {
  makeRoot,
  openCheckpoint,
  openRoot,
  recoveryTags,
  sealCheckpoint,
} from '../../src/core/recovery/checkpoint.js';
import { formatCode, newRecoveryCode, parseCode } from '../../src/core/recovery/code.js';
import { openKit, sealKit, type RecoveryKit } from '../../src/core/recovery/kit.js';
import { drawKitMachine, hpkeRootKeys } from '../../src/runtime/recovery-keys.js';
import { nobleVerifier, seededRandom, unsafeTestingSigner } from '../helpers/deterministic.js';

const bytes = (n: number, fill: number) => new Uint8Array(n).fill(fill);

async function kit(): Promise<RecoveryKit> {
  return {
    group: bytes(32, 1),
    relay: 'ws://127.0.0.1:8787/ws',
    relayKey: bytes(32, 2),
    anchors: [bytes(32, 3)],
    at: 1_720_000_000_000,
    machine: await drawKitMachine(),
    gens: [
      { domain: 'CONTROL', gen: 1, key: bytes(32, 4) },
      { domain: 'LAB', gen: 3, key: bytes(32, 5) },
    ],
    root: bytes(32, 6),
  };
}

describe('recovery code', () => {
  it('reads back what it shows, in any case, with look-alikes and without dashes', () => {
    const code = newRecoveryCode(seededRandom('code'));
    expect(code.text).toMatch(/^[0-9A-HJKMNP-TV-Z]{4}(-[0-9A-HJKMNP-TV-Z]{4}){6}$/);
    const parsed = parseCode(code.text.toLowerCase().replace(/-/g, ' '));
    expect(parsed.ok && toHex(parsed.value)).toBe(toHex(code.bytes));
    const zeros = formatCode(new Uint8Array(16));
    const lookalike = parseCode(zeros.replace(/0/g, 'O'));
    expect(lookalike.ok && toHex(lookalike.value)).toBe('00'.repeat(16));
  });

  it('tells a mistyped code from a wrong one: a changed, missing or foreign character', () => {
    const { text } = newRecoveryCode(seededRandom('typo'));
    const flip = (at: number) => {
      const c = text[at] === '2' ? '3' : '2';
      return text.slice(0, at) + c + text.slice(at + 1);
    };
    for (const at of [0, 7, 15, 30, 33]) {
      expect(parseCode(flip(at))).toMatchObject({ ok: false, error: { type: 'MistypedCode' } });
    }
    expect(parseCode(text.slice(0, -1))).toMatchObject({ ok: false, error: { type: 'MistypedCode' } });
    expect(parseCode(text.replace(/.$/, 'U'))).toMatchObject({ ok: false, error: { type: 'MistypedCode' } });
  });
});

describe('recovery kit', () => {
  it('opens with its code to every field it was sealed with', async () => {
    const code = newRecoveryCode(seededRandom('kit-code'));
    const original = await kit();
    const file = await sealKit(original, code.bytes, seededRandom('kit'));
    const opened = await openKit(file, code.text);
    expect(opened.ok).toBe(true);
    if (!opened.ok) return;
    expect(opened.value).toEqual(original);
  });

  it('refuses a wrong code, a changed or cut file, and a cost no kit is written with', async () => {
    const code = newRecoveryCode(seededRandom('kit-code-2'));
    const file = await sealKit(await kit(), code.bytes, seededRandom('kit-2'));
    const other = newRecoveryCode(seededRandom('other'));
    expect(await openKit(file, other.text)).toMatchObject({ ok: false, error: { type: 'WrongCode' } });
    const changed = file.slice();
    changed[changed.length - 5]! ^= 1;
    expect(await openKit(changed, code.text)).toMatchObject({ ok: false, error: { type: 'WrongCode' } });
    expect(await openKit(file.subarray(0, file.length - 20), code.text)).toMatchObject({
      ok: false,
      error: { type: 'KitUnreadable' },
    });
    const outer = decodeCbor(file, 1 << 22);
    if (!outer.ok) throw new Error('kit file does not decode');
    const costly = encodeCbor({ ...(outer.value as object), kdf: ['scrypt', 24, 8, 1] });
    expect(await openKit(costly, code.text)).toMatchObject({
      ok: false,
      error: { type: 'KitUnreadable', reason: 'scrypt cost out of bounds' },
    });
    expect(await openKit(new TextEncoder().encode('not a kit'), code.text)).toMatchObject({
      ok: false,
      error: { type: 'KitUnreadable' },
    });
  });
});

describe('checkpoints and recovery roots', () => {
  const topic = bytes(32, 9);
  const admin = unsafeTestingSigner('admin');

  it('a checkpoint opens with its secret and mesh only', () => {
    const sealed = sealCheckpoint(
      {
        topic,
        at: 5,
        by: admin.publicKey,
        gens: [{ domain: 'LAB', gen: 2, key: bytes(32, 7) }],
        entries: [bytes(40, 1), bytes(3, 2)],
      },
      seededRandom('checkpoint'),
    );
    if (!sealed.ok) throw new Error('sealing failed');
    const { bytes: ct, id, secret } = sealed.value;
    expect(toHex(id)).toBe(toHex(blake3(ct)));
    const opened = openCheckpoint(ct, secret, topic);
    expect(opened.ok && opened.value.entries.map((e) => e.length)).toEqual([40, 3]);
    expect(opened.ok && opened.value.gens[0]).toMatchObject({ domain: 'LAB', gen: 2 });
    expect(openCheckpoint(ct, bytes(32, 0), topic)).toMatchObject({ error: { type: 'CheckpointMalformed' } });
    expect(openCheckpoint(ct, secret, bytes(32, 8))).toMatchObject({ error: { type: 'CheckpointMalformed' } });
    expect(openCheckpoint(ct.subarray(0, 20), secret, topic)).toMatchObject({
      error: { type: 'CheckpointMalformed' },
    });
  });

  it('a root is opened by a kit it names, and refused forged, moved or to another kit', async () => {
    const [kitA, kitB] = [await kit(), await kit()];
    const frameOf = async (k: RecoveryKit) => {
      const privateKey = await crypto.subtle.importKey(
        'pkcs8',
        new Uint8Array(k.machine.frame),
        { name: 'X25519' },
        false,
        ['deriveBits'],
      );
      const publicKey = await crypto.subtle.importKey(
        'raw',
        new Uint8Array(k.machine.framePub),
        { name: 'X25519' },
        true,
        [],
      );
      return hpkeRootKeys({ keys: { privateKey, publicKey }, publicKey: k.machine.framePub });
    };
    const checkpoint = bytes(32, 0xcc);
    const secret = bytes(32, 0x5e);
    const made = await makeRoot(
      { topic, checkpoint, bytes: 100, entries: 2, at: 7, by: admin.publicKey },
      secret,
      [kitA.machine.framePub],
      hpkeRootKeys(),
      admin,
    );
    if (!made.ok) throw new Error('root not made');
    const context = { topic, kid: kitA.machine.framePub };
    const opened = await openRoot(made.value, context, await frameOf(kitA), nobleVerifier);
    expect(opened.ok && toHex(opened.value.secret)).toBe(toHex(secret));
    expect(opened.ok && toHex(opened.value.root.checkpoint)).toBe(toHex(checkpoint));

    const forB = await openRoot(made.value, { topic, kid: kitB.machine.framePub }, await frameOf(kitB), nobleVerifier);
    expect(forB).toMatchObject({ ok: false, error: { type: 'RootNotForThisKit' } });
    const elsewhere = await openRoot(
      made.value,
      { topic: bytes(32, 1), kid: context.kid },
      await frameOf(kitA),
      nobleVerifier,
    );
    expect(elsewhere).toMatchObject({ ok: false, error: { type: 'RootOtherMesh' } });
    const forged = made.value.slice();
    forged[20]! ^= 1;
    const refused = await openRoot(forged, context, await frameOf(kitA), nobleVerifier);
    expect(refused.ok).toBe(false);
    expect(['RootSignatureInvalid', 'RootMalformed']).toContain(!refused.ok && refused.error.type);
    expect(await openRoot(made.value.subarray(0, 30), context, await frameOf(kitA), nobleVerifier)).toMatchObject({
      error: { type: 'RootMalformed' },
    });
    expect(
      await makeRoot(
        { topic, checkpoint, bytes: 1, entries: 1, at: 1, by: admin.publicKey },
        secret,
        [],
        hpkeRootKeys(),
        admin,
      ),
    ).toMatchObject({ ok: false, error: { type: 'RootMalformed' } });
  });

  it('tags recovery objects by mesh, roots apart from checkpoints', () => {
    const a = recoveryTags(bytes(32, 1));
    expect(toHex(a.roots)).not.toBe(toHex(a.checkpoints));
    expect(toHex(recoveryTags(bytes(32, 2)).roots)).not.toBe(toHex(a.roots));
  });
});
