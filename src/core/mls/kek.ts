/**
 * Domain key-encryption-key generations (DESIGN §4, seed 003 "Keys: three
 * levels"): independently random 32-byte keys, never derived from MLS secrets,
 * handed to a domain's members inside an MLS application message of the epoch
 * they are for, in a package an admin machine signs.
 *
 *   package = cbor([body bytes, sig])
 *   body    = cbor({v: 1, domain, group: bytes, epoch: uint,
 *                   gens: [[gen: uint ≥ 1, key: 32B]], by: 32B})
 *   sig     = Ed25519(by, "sov/1/kek" ‖ body)
 *
 * `epoch` is the MLS epoch the message is sealed in, so a package cannot be
 * replayed into another epoch or group; `by` must be an admin of the keyring
 * (the receiver's check). What `gens` holds is the history policy of the
 * commit it travels with: the current generation only (forward), every
 * generation (full history), or a freshly minted one.
 */
import { ed25519 } from '@noble/curves/ed25519.js';
import { bytesEqual, concat, isBytes, utf8 } from '../bytes.js';
import { decodeCbor, encodeCbor, isRecord } from '../cbor.js';
import type { Signer } from '../ports.js';
import { err, ok, type Result } from '../result.js';

const LABEL = utf8('sov/1/kek');
const MAX_PACKAGE = 64 * 1024;
const MAX_GENERATIONS = 1024;

export type Generation = { readonly gen: number; readonly key: Uint8Array };

export type KekPackage = {
  readonly domain: string;
  readonly group: Uint8Array;
  readonly epoch: number;
  readonly gens: readonly Generation[];
  readonly by: Uint8Array;
};

export type KekError = { readonly type: 'KekPackageInvalid'; readonly reason: string };

const invalid = (reason: string): Result<never, KekError> =>
  err({ type: 'KekPackageInvalid', reason: `kek: ${reason}` });

export async function signKekPackage(pkg: Omit<KekPackage, 'by'>, admin: Signer): Promise<Uint8Array> {
  const body = encodeCbor({
    v: 1,
    domain: pkg.domain,
    group: pkg.group,
    epoch: pkg.epoch,
    gens: pkg.gens.map((g) => [g.gen, g.key]),
    by: admin.publicKey,
  });
  return encodeCbor([body, await admin.sign(concat(LABEL, body))]);
}

/** Decodes and verifies a package for (`domain`, `group`, `epoch`); who signed it is the caller's check. */
export function openKekPackage(
  bytes: Uint8Array,
  expected: { readonly domain: string; readonly group: Uint8Array; readonly epoch: number },
): Result<KekPackage, KekError> {
  const outer = decodeCbor(bytes, MAX_PACKAGE);
  if (!outer.ok || !Array.isArray(outer.value) || outer.value.length !== 2) return invalid('not [body, sig]');
  const [body, sig] = outer.value as unknown[];
  if (!isBytes(body) || !isBytes(sig, 64)) return invalid('not [body, sig]');
  const decoded = decodeCbor(body, MAX_PACKAGE);
  if (!decoded.ok || !isRecord(decoded.value)) return invalid('body');
  const m = decoded.value;
  if (Object.keys(m).sort().join(',') !== 'by,domain,epoch,gens,group,v' || m['v'] !== 1) return invalid('fields');
  const { domain, group, epoch, gens, by } = m;
  if (typeof domain !== 'string' || !isBytes(group) || !isBytes(by, 32)) return invalid('field types');
  if (typeof epoch !== 'number' || !Number.isSafeInteger(epoch) || epoch < 0) return invalid('epoch');
  if (!Array.isArray(gens) || gens.length === 0 || gens.length > MAX_GENERATIONS) return invalid('generations');
  const generations: Generation[] = [];
  for (const g of gens) {
    if (!Array.isArray(g) || g.length !== 2) return invalid('generation');
    const [gen, key] = g as unknown[];
    if (typeof gen !== 'number' || !Number.isSafeInteger(gen) || gen < 1 || !isBytes(key, 32))
      return invalid('generation');
    generations.push({ gen, key });
  }
  if (domain !== expected.domain || !bytesEqual(group, expected.group) || epoch !== expected.epoch) {
    return invalid('package is for another domain, group or epoch');
  }
  let verified = false;
  try {
    verified = ed25519.verify(sig, concat(LABEL, body), by, { zip215: false });
  } catch {
    // a malformed key is a failed verification
  }
  if (!verified) return invalid('signature does not verify');
  return ok({ domain, group, epoch, gens: generations, by });
}
