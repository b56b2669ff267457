/**
 * Recovery material in the core (core/recovery): the recovery code (a mistype told apart
 * from a wrong code), the kit sealed under it (every field back, a wrong code, a changed or
 * cut file, a forged cost), checkpoints (sealed, opened only with their secret and mesh) and
 * recovery roots (signed, opened only by a kit they name, refused when forged or moved).
 */
import { describe, expect, it } from 'vitest';
import { concat, toHex, utf8 } from '../../src/core/bytes.js';
import { decodeCbor, encodeCbor } from '../../src/core/cbor.js';
import { blake3 } from '../../src/core/hash.js';
import {
  makeRoot,
  openCheckpoint,
  openRoot,
  recoveryTags,
  sealCheckpoint,
  sealCheckpointBody,
  signRoot,
} from '../../src/core/recovery/checkpoint.js';
import { formatCode, newRecoveryCode, parseCode } from '../../src/core/recovery/code.js';
import { encodeBody, openKit, sealKit, sealKitBody, type RecoveryKit } from '../../src/core/recovery/kit.js';
import { drawKitMachine, hpkeRootKeys } from '../../src/runtime/recovery-keys.js';
import { nobleVerifier, seededRandom, unsafeTestingSigner } from '../helpers/deterministic.js';

const bytes = (n: number, fill: number) => new Uint8Array(n).fill(fill);
/** An asymmetric matcher for a text field of an error. */
const matching = (re: RegExp): unknown => expect.stringMatching(re) as unknown;

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

/** The kit machine's frame key as the HPKE root keys a restoring machine holds. */
async function frameOf(k: RecoveryKit) {
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
    // As docs/protocol.md writes them.
    expect(toHex(a.roots)).toBe(toHex(blake3(encodeCbor(['sov/1/recovery-roots', bytes(32, 1)]))));
    expect(toHex(a.checkpoints)).toBe(toHex(blake3(encodeCbor(['sov/1/recovery-checkpoints', bytes(32, 1)]))));
    expect(toHex(a.roots)).not.toBe(toHex(a.checkpoints));
    expect(toHex(recoveryTags(bytes(32, 2)).roots)).not.toBe(toHex(a.roots));
  });
});

describe('malformed recovery material', () => {
  const code = newRecoveryCode(seededRandom('malformed'));
  /** Cheap scrypt (the lowest cost a kit may name) so that every variant opens in milliseconds. */
  const seal = (body: unknown, kdf: [number, number, number] = [10, 8, 1]) =>
    sealKitBody(encodeCbor(body), code.bytes, seededRandom('seal'), kdf);
  const opened = async (body: unknown, kdf?: [number, number, number]) => openKit(await seal(body, kdf), code.text);

  it('names what is wrong with a kit body, field by field, and takes every bound it allows', async () => {
    const valid = decodeCbor(encodeBody(await kit()), 1 << 22);
    if (!valid.ok) throw new Error('kit body does not decode');
    const body = valid.value as Record<string, unknown>;
    const machine = body['machine'] as Record<string, unknown>;
    const gen = (domain: unknown, g: unknown, key: unknown) => [domain, g, key];
    const cases: [Record<string, unknown> | unknown[], string][] = [
      [[1, 2], 'not a version 1 kit body'],
      [{ ...body, v: 2 }, 'not a version 1 kit body'],
      [{ ...body, group: bytes(31, 1) }, 'group secret or relay key malformed'],
      [{ ...body, relayKey: bytes(33, 1) }, 'group secret or relay key malformed'],
      [{ ...body, relay: 'https://relay.example' }, 'relay address malformed'],
      [{ ...body, relay: 7 }, 'relay address malformed'],
      [{ ...body, relay: 'https://relay.example/?ws://' }, 'relay address malformed'],
      [{ ...body, anchors: [] }, 'anchors malformed'],
      [{ ...body, anchors: bytes(32, 1) }, 'anchors malformed'],
      [{ ...body, anchors: Array.from({ length: 17 }, () => bytes(32, 1)) }, 'anchors malformed'],
      [{ ...body, anchors: [bytes(32, 1), bytes(31, 1)] }, 'anchors malformed'],
      [{ ...body, at: -1 }, 'time malformed'],
      [{ ...body, at: 1.5 }, 'time malformed'],
      [{ ...body, at: '1' }, 'time malformed'],
      [{ ...body, machine: [] }, 'machine keys malformed'],
      [{ ...body, machine: { ...machine, signing: bytes(31, 1) } }, 'machine keys malformed'],
      [{ ...body, machine: { ...machine, endpoint: bytes(129, 1) } }, 'machine keys malformed'],
      [{ ...body, machine: { ...machine, frame: 'key' } }, 'machine keys malformed'],
      [{ ...body, machine: { ...machine, signingPub: bytes(31, 1) } }, 'machine keys malformed'],
      [{ ...body, machine: { ...machine, endpointPub: bytes(33, 1) } }, 'machine keys malformed'],
      [{ ...body, machine: { ...machine, framePub: null } }, 'machine keys malformed'],
      [{ ...body, gens: {} }, 'key history malformed'],
      [{ ...body, gens: [['LAB', 1]] }, 'key history malformed'],
      [{ ...body, gens: [gen('lab', 1, bytes(32, 1))] }, 'key history malformed'],
      [{ ...body, gens: [gen('LAB', 0, bytes(32, 1))] }, 'key history malformed'],
      [{ ...body, gens: [gen('LAB', 2 ** 32, bytes(32, 1))] }, 'key history malformed'],
      [{ ...body, gens: [gen('LAB', 1.5, bytes(32, 1))] }, 'key history malformed'],
      [{ ...body, gens: [gen('LAB', 1, bytes(31, 1))] }, 'key history malformed'],
      [{ ...body, gens: Array.from({ length: 65_537 }, () => gen('LAB', 1, bytes(32, 1))) }, 'key history malformed'],
      [{ ...body, root: bytes(31, 1) }, 'root pointer malformed'],
      [{ ...body, root: 'none' }, 'root pointer malformed'],
    ];
    for (const [variant, reason] of cases) {
      expect(await opened(variant), reason).toMatchObject({ ok: false, error: { type: 'KitUnreadable', reason } });
    }
    const bounds: Record<string, unknown>[] = [
      { ...body, anchors: Array.from({ length: 16 }, () => bytes(32, 1)), at: 0, root: new Uint8Array(0) },
      { ...body, machine: { ...machine, signing: bytes(32, 1), endpoint: bytes(128, 1) } },
      { ...body, gens: Array.from({ length: 65_536 }, (_, i) => gen('LAB', (i % 7) + 2 ** 32 - 7, bytes(32, 1))) },
      { ...body, gens: [] },
    ];
    for (const variant of bounds) expect((await opened(variant)).ok).toBe(true);
    const none = await opened({ ...body, root: new Uint8Array(0) });
    expect(none.ok && none.value.root).toBeUndefined();
  }, 60_000);

  it('names what is wrong with a kit file around the body, and takes every cost it allows', async () => {
    const file = decodeCbor(await seal(encodeCbor({})), 1 << 22);
    if (!file.ok) throw new Error('kit file does not decode');
    const outer = file.value as Record<string, unknown>;
    const cases: [unknown, string][] = [
      [[1], 'not a version 1 recovery kit'],
      [{ ...outer, v: 2 }, 'not a version 1 recovery kit'],
      [{ ...outer, kdf: 'scrypt' }, 'unknown key derivation'],
      [{ ...outer, kdf: ['scrypt', 10, 8] }, 'unknown key derivation'],
      [{ ...outer, kdf: ['argon2', 10, 8, 1] }, 'unknown key derivation'],
      [{ ...outer, kdf: ['scrypt', 9, 8, 1] }, 'scrypt cost out of bounds'],
      [{ ...outer, kdf: ['scrypt', 19, 8, 1] }, 'scrypt cost out of bounds'],
      [{ ...outer, kdf: ['scrypt', 10.5, 8, 1] }, 'scrypt cost out of bounds'],
      [{ ...outer, kdf: ['scrypt', 10, 4, 1] }, 'scrypt cost out of bounds'],
      [{ ...outer, kdf: ['scrypt', 10, 8, 0] }, 'scrypt cost out of bounds'],
      [{ ...outer, kdf: ['scrypt', 10, 8, 5] }, 'scrypt cost out of bounds'],
      [{ ...outer, salt: bytes(15, 1) }, 'salt or sealed body malformed'],
      [{ ...outer, sealed: bytes(27, 1) }, 'salt or sealed body malformed'],
      [{ ...outer, sealed: 'sealed' }, 'salt or sealed body malformed'],
    ];
    for (const [variant, reason] of cases) {
      expect(await openKit(encodeCbor(variant), code.text), reason).toMatchObject({
        ok: false,
        error: { type: 'KitUnreadable', reason },
      });
    }
    expect(await openKit(utf8('not a kit'), code.text)).toMatchObject({
      error: { type: 'KitUnreadable', reason: matching(/^not a recovery kit \(cbor: /) },
    });
    expect(await openKit(await seal({}), 'AAAA-AAAA')).toMatchObject({ error: { type: 'MistypedCode' } });
    expect(
      await openKit(await sealKitBody(utf8('x'), code.bytes, seededRandom('x'), [10, 8, 1]), code.text),
    ).toMatchObject({ error: { type: 'KitUnreadable', reason: matching(/^cbor: /) } });
    // The least a sealed body can be (a nonce and a tag) is read as a wrong code, not malformed.
    expect(await openKit(encodeCbor({ ...outer, sealed: bytes(28, 1) }), code.text)).toMatchObject({
      error: { type: 'WrongCode' },
    });
    const valid = decodeCbor(encodeBody(await kit()), 1 << 22);
    if (!valid.ok) throw new Error('kit body does not decode');
    expect((await opened(valid.value, [10, 8, 4])).ok).toBe(true);
  }, 60_000);

  it('reads a code character by character: look-alikes, padding bits, the first character', () => {
    const zeros = new Uint8Array(16);
    const text = formatCode(zeros).replace(/-/g, '');
    // Independently: 128 bits, padded to 130, five at a time, in Crockford's alphabet.
    const alphabet = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
    const bitsOf = (b: Uint8Array) => [...b].map((x) => x.toString(2).padStart(8, '0')).join('') + '00';
    const base32 = (b: Uint8Array) =>
      bitsOf(b)
        .match(/.{5}/g)!
        .map((c) => alphabet[parseInt(c, 2)])
        .join('');
    const sample = Uint8Array.from({ length: 16 }, (_, i) => (i * 37 + 11) & 0xff);
    expect(formatCode(sample).replace(/-/g, '').slice(0, 26)).toBe(base32(sample));
    expect(text.slice(0, 26)).toBe('0'.repeat(26));
    // 00001 repeated: 0x08 0x42 0x10 0x84 0x21, so the code is mostly ones.
    const ones = Uint8Array.from({ length: 16 }, (_, i) => [0x08, 0x42, 0x10, 0x84, 0x21][i % 5]!);
    expect(formatCode(ones).slice(0, 9)).toBe('1111-1111');
    const withOnes = formatCode(ones);
    for (const lookalike of ['I', 'L', 'i', 'l']) {
      const typed = withOnes.replace(/1/g, lookalike);
      const parsed = parseCode(typed);
      expect(parsed.ok && toHex(parsed.value), lookalike).toBe(toHex(ones));
    }
    // The 26th character carries two padding bits, which must be zero.
    const padded = `${text.slice(0, 25)}1${text.slice(26)}`;
    expect(parseCode(padded)).toMatchObject({ ok: false, error: { type: 'MistypedCode' } });
    expect(parseCode(`U${text.slice(1)}`)).toMatchObject({
      ok: false,
      error: { type: 'MistypedCode', reason: '“U” is not a character of a recovery code' },
    });
    expect(parseCode(text.slice(1))).toMatchObject({
      error: { reason: 'a recovery code has 28 characters, not 27' },
    });
    expect(parseCode(`${text.slice(0, 26)}00`)).toMatchObject({
      error: { reason: 'the code does not check out: a character is wrong or missing' },
    });
  });

  it('names what is wrong with a checkpoint body', () => {
    const topic = bytes(32, 9);
    const body = { v: 1, topic, at: 5, by: bytes(32, 3), gens: [], entries: [bytes(4, 1)] };
    const cases: [unknown, string][] = [
      [[1], 'not a version 1 checkpoint'],
      [{ ...body, v: 2 }, 'not a version 1 checkpoint'],
      [{ ...body, topic: bytes(32, 8) }, 'of another mesh'],
      [{ ...body, topic: bytes(31, 9) }, 'of another mesh'],
      [{ ...body, at: 1.5 }, 'header malformed'],
      [{ ...body, at: 'now' }, 'header malformed'],
      [{ ...body, by: bytes(31, 3) }, 'header malformed'],
      [{ ...body, entries: bytes(4, 1) }, 'body malformed'],
      [{ ...body, entries: [bytes(4, 1), 'x'] }, 'body malformed'],
      [{ ...body, gens: [['LAB', 0, bytes(32, 1)]] }, 'key history malformed'],
    ];
    for (const [variant, detail] of cases) {
      const sealed = sealCheckpointBody(encodeCbor(variant), topic, seededRandom('cp'));
      expect(openCheckpoint(sealed.bytes, sealed.secret, topic), detail).toMatchObject({
        ok: false,
        error: { type: 'CheckpointMalformed', detail },
      });
    }
    const fine = sealCheckpointBody(encodeCbor(body), topic, seededRandom('cp'));
    expect(openCheckpoint(fine.bytes, fine.secret, topic).ok).toBe(true);
    expect(openCheckpoint(fine.bytes, bytes(32, 0), topic)).toMatchObject({
      error: { detail: 'does not open with the secret its root carries' },
    });
    expect(openCheckpoint(fine.bytes.subarray(0, 28), fine.secret, topic)).toMatchObject({
      error: { detail: 'does not open with the secret its root carries' },
    });
    const notCbor = sealCheckpointBody(utf8('x'), topic, seededRandom('cp'));
    expect(openCheckpoint(notCbor.bytes, notCbor.secret, topic)).toMatchObject({
      error: { type: 'CheckpointMalformed', detail: matching(/^cbor: /) },
    });
    expect(openCheckpoint(fine.bytes.subarray(0, 27), fine.secret, topic)).toMatchObject({
      error: { detail: 'too short' },
    });
  });

  it('names what is wrong with a root, and takes every bound it allows', async () => {
    const topic = bytes(32, 9);
    const admin = unsafeTestingSigner('root-admin');
    const k = await kit();
    const keys = await frameOf(k);
    const context = { topic, kid: k.machine.framePub };
    const checkpoint = bytes(32, 0xcc);
    const record = await hpkeRootKeys().seal(
      k.machine.framePub,
      bytes(32, 7),
      concat(utf8('sov/1/recovery-root'), topic),
      checkpoint,
    );
    const access = (n: number) => [
      [record.kid, record.enc, record.ct],
      ...Array.from({ length: n - 1 }, () => [bytes(32, 1), bytes(32, 2), bytes(48, 3)]),
    ];
    const body = { v: 1, topic, checkpoint, bytes: 0, entries: 0, at: 0, by: admin.publicKey, access: access(1) };
    const read = async (root: Uint8Array) => openRoot(root, context, keys, nobleVerifier);
    const signed = async (b: unknown) => read(await signRoot(encodeCbor(b), admin));
    const cases: [unknown, string][] = [
      [[1], 'not a version 1 root'],
      [{ ...body, v: 2 }, 'not a version 1 root'],
      [{ ...body, topic: bytes(31, 9) }, 'ids malformed'],
      [{ ...body, checkpoint: bytes(33, 1) }, 'ids malformed'],
      [{ ...body, by: bytes(31, 1) }, 'ids malformed'],
      [{ ...body, bytes: -1 }, 'counts malformed'],
      [{ ...body, entries: 1.5 }, 'counts malformed'],
      [{ ...body, at: 'now' }, 'counts malformed'],
      [{ ...body, access: [] }, 'access malformed'],
      [{ ...body, access: 'all' }, 'access malformed'],
      [{ ...body, access: access(65) }, 'access malformed'],
      [{ ...body, access: [[record.kid, record.enc]] }, 'access malformed'],
      [{ ...body, access: [[bytes(31, 1), record.enc, record.ct]] }, 'access malformed'],
      [{ ...body, access: [[record.kid, bytes(33, 1), record.ct]] }, 'access malformed'],
      [{ ...body, access: [[record.kid, record.enc, 'ct']] }, 'access malformed'],
      [{ ...body, access: [[record.kid, record.enc, bytes(257, 1)]] }, 'access malformed'],
    ];
    for (const [variant, detail] of cases) {
      expect(await signed(variant), detail).toMatchObject({ ok: false, error: { type: 'RootMalformed', detail } });
    }
    for (const outer of [
      encodeCbor([1, 2, 3]),
      encodeCbor([encodeCbor(body), bytes(63, 1)]),
      encodeCbor(['b', bytes(64, 1)]),
    ]) {
      expect(await read(outer)).toMatchObject({
        ok: false,
        error: { type: 'RootMalformed', detail: 'not [body, sig]' },
      });
    }
    const sig = decodeCbor(await signRoot(encodeCbor(body), admin), 1 << 16);
    if (!sig.ok) throw new Error('root does not decode');
    const [bodyBytes, signature] = sig.value as [Uint8Array, Uint8Array];
    expect(await read(encodeCbor([bodyBytes, signature, 1]))).toMatchObject({ error: { detail: 'not [body, sig]' } });
    expect(await read(utf8('garbage'))).toMatchObject({
      error: { type: 'RootMalformed', detail: matching(/^cbor: /) },
    });
    expect(await read(await signRoot(utf8('x'), admin))).toMatchObject({
      error: { type: 'RootMalformed', detail: matching(/^cbor: /) },
    });
    // A record that opens to anything but a 32-byte secret is not one for this kit.
    const short = await hpkeRootKeys().seal(
      k.machine.framePub,
      bytes(31, 7),
      concat(utf8('sov/1/recovery-root'), topic),
      checkpoint,
    );
    expect(await signed({ ...body, access: [[short.kid, short.enc, short.ct]] })).toMatchObject({
      error: { type: 'RootNotForThisKit' },
    });
    const sixtyFour = await makeRoot(
      { topic, checkpoint, bytes: 0, entries: 0, at: 0, by: admin.publicKey },
      bytes(32, 7),
      Array.from({ length: 64 }, () => k.machine.framePub),
      hpkeRootKeys(),
      admin,
    );
    expect(sixtyFour.ok && (await read(sixtyFour.value)).ok).toBe(true);
    const opened = await signed({ ...body, access: access(64) });
    expect(opened.ok && toHex(opened.value.secret)).toBe(toHex(bytes(32, 7)));
    expect(opened.ok && opened.value.root.access).toHaveLength(64);
    // A record of 256 bytes is well formed; it only does not open.
    expect(await signed({ ...body, access: [[record.kid, record.enc, bytes(256, 1)]] })).toMatchObject({
      error: { type: 'RootNotForThisKit' },
    });
    const many = await makeRoot(
      { topic, checkpoint, bytes: 0, entries: 0, at: 0, by: admin.publicKey },
      bytes(32, 7),
      Array.from({ length: 65 }, () => k.machine.framePub),
      hpkeRootKeys(),
      admin,
    );
    expect(many).toMatchObject({
      ok: false,
      error: { type: 'RootMalformed', detail: '65 recovery kits (1 to 64 allowed)' },
    });
  }, 60_000);
});
