/**
 * Key-generation packages (core/mls/kek.ts): what an admin signs opens only
 * for the domain, group and epoch it names, and every malformed field is a
 * typed `KekPackageInvalid` naming it — even when the admin signed the
 * malformed body. Signatures are checked strictly (RFC 8032): a key or
 * signature in a non-canonical encoding that ZIP-215 would accept is refused.
 */
import { describe, expect, it } from 'vitest';
import { concat, fromHex, utf8 } from '../../src/core/bytes.js';
import { decodeCbor, encodeCbor } from '../../src/core/cbor.js';
import { openKekPackage, signKekPackage } from '../../src/core/mls/kek.js';
import { seededRandom, unsafeTestingSigner } from '../helpers/deterministic.js';

const random = seededRandom('kek-tests');
const admin = unsafeTestingSigner('admin');
const group = random.bytes(16);
const expected = { domain: 'RESTRICTED', group, epoch: 4 };
const gens = [
  { gen: 1, key: random.bytes(32) },
  { gen: 2, key: random.bytes(32) },
];

const invalid = (reason: string) => ({ ok: false, error: { type: 'KekPackageInvalid', reason: `kek: ${reason}` } });

async function signed(body: Uint8Array, signer = admin): Promise<Uint8Array> {
  return encodeCbor([body, await signer.sign(concat(utf8('sov/1/kek'), body))]);
}

async function realBody(): Promise<Record<string, unknown>> {
  const pkg = decodeCbor(await signKekPackage({ ...expected, gens }, admin), 1 << 16);
  const body = pkg.ok && decodeCbor((pkg.value as Uint8Array[])[0]!, 1 << 16);
  if (!body || !body.ok) throw new Error('decode');
  return body.value as Record<string, unknown>;
}

async function openEdited(edit: (m: Record<string, unknown>) => void) {
  const m = await realBody();
  edit(m);
  return openKekPackage(await signed(encodeCbor(m)), expected);
}

describe('a key-generation package', () => {
  it('opens for the domain, group and epoch it names, with its generations and signer', async () => {
    expect(openKekPackage(await signKekPackage({ ...expected, gens }, admin), expected)).toEqual({
      ok: true,
      value: { ...expected, gens, by: admin.publicKey },
    });
    expect(await openEdited((m) => (m['epoch'] = 0))).toEqual(invalid('package is for another domain, group or epoch'));
    expect(
      openKekPackage(await signed(encodeCbor({ ...(await realBody()), epoch: 0 })), { ...expected, epoch: 0 }),
    ).toMatchObject({ ok: true, value: { epoch: 0 } });
  });

  it.each<[string, Partial<typeof expected>]>([
    ['another domain', { domain: 'GENERAL' }],
    ['another group', { group: random.bytes(16) }],
    ['another epoch', { epoch: 5 }],
  ])('does not open for %s', async (_, other) => {
    const pkg = await signKekPackage({ ...expected, gens }, admin);
    expect(openKekPackage(pkg, { ...expected, ...other })).toEqual(
      invalid('package is for another domain, group or epoch'),
    );
  });

  it.each<[string, (m: Record<string, unknown>) => void, string]>([
    ['version 2', (m) => (m['v'] = 2), 'fields'],
    ['a field too many', (m) => (m['extra'] = 1), 'fields'],
    ['a field missing', (m) => delete m['by'], 'fields'],
    ['a domain that is bytes', (m) => (m['domain'] = utf8('RESTRICTED')), 'field types'],
    ['a group that is text', (m) => (m['group'] = 'group'), 'field types'],
    ['a signer key of 31 bytes', (m) => (m['by'] = admin.publicKey.subarray(1)), 'field types'],
    ['an epoch as text', (m) => (m['epoch'] = '4'), 'epoch'],
    ['a fractional epoch', (m) => (m['epoch'] = 4.5), 'epoch'],
    ['a negative epoch', (m) => (m['epoch'] = -1), 'epoch'],
    ['no generations', (m) => (m['gens'] = []), 'generations'],
    ['generations as a map', (m) => (m['gens'] = { '0': [1, random.bytes(32)] }), 'generations'],
    [
      '1,025 generations',
      (m) => (m['gens'] = Array.from({ length: 1025 }, (_, i) => [i + 1, random.bytes(32)])),
      'generations',
    ],
    ['a generation of three', (m) => (m['gens'] = [[1, random.bytes(32), 0]]), 'generation'],
    ['a generation as a map', (m) => (m['gens'] = [{ '0': 1, '1': random.bytes(32), length: 2 }]), 'generation'],
    ['generation 0', (m) => (m['gens'] = [[0, random.bytes(32)]]), 'generation'],
    ['a fractional generation', (m) => (m['gens'] = [[1.5, random.bytes(32)]]), 'generation'],
    ['a generation as text', (m) => (m['gens'] = [['1', random.bytes(32)]]), 'generation'],
    ['a key of 31 bytes', (m) => (m['gens'] = [[1, random.bytes(31)]]), 'generation'],
  ])('signed by the admin but with %s is refused', async (_, edit, reason) => {
    expect(await openEdited(edit)).toEqual(invalid(reason));
  });

  it('may carry 1,024 generations', async () => {
    const many = await openEdited(
      (m) => (m['gens'] = Array.from({ length: 1024 }, (_, i) => [i + 1, random.bytes(32)])),
    );
    expect(many.ok && many.value.gens).toHaveLength(1024);
  });

  it.each<[string, () => Promise<Uint8Array>, string]>([
    ['not CBOR', async () => new Uint8Array([0xff]), 'not [body, sig]'],
    ['a map', async () => encodeCbor({ body: new Uint8Array(1) }), 'not [body, sig]'],
    ['an array of three', async () => encodeCbor([new Uint8Array(1), new Uint8Array(64), 0]), 'not [body, sig]'],
    ['a body that is text', async () => encodeCbor(['body', new Uint8Array(64)]), 'not [body, sig]'],
    ['a signature of 63 bytes', async () => encodeCbor([encodeCbor({}), new Uint8Array(63)]), 'not [body, sig]'],
    ['a body that is not CBOR', async () => signed(new Uint8Array([0xff])), 'body'],
    ['a body that is an array', async () => signed(encodeCbor([1])), 'body'],
  ])('that is %s is refused', async (_, bytes, reason) => {
    expect(openKekPackage(await bytes(), expected)).toEqual(invalid(reason));
  });

  it('is refused when signed by anyone but the key it names', async () => {
    const m = await realBody();
    expect(openKekPackage(await signed(encodeCbor(m), unsafeTestingSigner('impostor')), expected)).toEqual(
      invalid('signature does not verify'),
    );
  });

  it('is refused, as ZIP-215 would not, with a signer key in a non-canonical encoding', async () => {
    // The identity point with y = p + 1 (not reduced mod p), and the signature R = identity, S = 0:
    // the cofactored equation holds for any message, so only strict decoding of the key refuses it
    // ("Taming the many EdDSAs", Chalkias et al. 2020, vector 9 family).
    const nonCanonicalIdentity = fromHex('eeffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f')!;
    const signature = concat(fromHex('01'.padEnd(64, '0'))!, new Uint8Array(32));
    const m = await realBody();
    m['by'] = nonCanonicalIdentity;
    const body = encodeCbor(m);
    expect(openKekPackage(encodeCbor([body, signature]), expected)).toEqual(invalid('signature does not verify'));
  });
});
