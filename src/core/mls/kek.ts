/**
 * Domain key-encryption-key generations (DESIGN §4, seed 003 "Keys: three
 * levels"): independently random 32-byte keys, never derived from MLS secrets,
 * handed to a domain's members inside an MLS application message of the epoch
 * they are for, in a package an admin machine signs.
 *
 *   package = cbor([body bytes, sig])
 *   body    = cbor({v: 1, domain, group: bytes, epoch: uint,
 *                   gens: [[gen: uint ≥ 1, key: 32B]], by: 32B,
 *                   ent?: [[machine: 32B, history: text, fromGen: uint ≥ 1]],
 *                   hist?: [gen: uint ≥ 1]})
 *   sig     = Ed25519(by, "sov/1/kek" ‖ body)
 *
 * `epoch` is the MLS epoch the message is sealed in, so a package cannot be
 * replayed into another epoch or group; `by` must be an admin of the keyring
 * (the receiver's check). What `gens` holds is the history policy of the
 * commit it travels with: the current generation only (forward), every
 * generation (full history), or a freshly minted one.
 *
 * `ent` is the domain's entitlement table (core/mls/entitlement.ts: how each member was let
 * in) and `hist` the generations that carry rewrapped history (minted by a rotation or a
 * removal), as the signing admin knows them: every member learns them with the keys, so any
 * admin can rewrap and add within the entitlement rules, not only the one that added a
 * machine. Packages of earlier versions have neither.
 */
import { ed25519 } from '@noble/curves/ed25519.js';
import { bytesEqual, concat, fromHex, isBytes, toHex, utf8 } from '../bytes.js';
import { decodeCbor, encodeCbor, isRecord } from '../cbor.js';
import type { Signer } from '../ports.js';
import { err, ok, type Result } from '../result.js';
import type { Entitlement, History } from './entitlement.js';

const LABEL = utf8('sov/1/kek');
/** Room for every generation and every entitlement at their limits (~37 KiB and ~184 KiB). */
const MAX_PACKAGE = 256 * 1024;
const MAX_GENERATIONS = 1024;
const MAX_ENTITLEMENTS = 4096;
const HISTORIES: readonly string[] = ['forward', 'full', 'fresh'] satisfies History[];

export type Generation = { readonly gen: number; readonly key: Uint8Array };

export type KekPackage = {
  readonly domain: string;
  readonly group: Uint8Array;
  readonly epoch: number;
  readonly gens: readonly Generation[];
  readonly by: Uint8Array;
  /** Undefined in a package that carries no table (an earlier version's). */
  readonly entitlements?: readonly Entitlement[] | undefined;
  readonly historyGens?: readonly number[] | undefined;
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
    ...(pkg.entitlements && {
      ent: pkg.entitlements.flatMap((e) => {
        const machine = fromHex(e.machine);
        return machine?.length === 32 ? [[machine, e.history, e.fromGen]] : [];
      }),
    }),
    ...(pkg.historyGens && { hist: [...pkg.historyGens] }),
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
  const optional = new Set(['ent', 'hist']);
  const required = Object.keys(m).filter((k) => !optional.has(k));
  if (required.sort().join(',') !== 'by,domain,epoch,gens,group,v' || m['v'] !== 1) return invalid('fields');
  const { domain, group, epoch, gens, by, ent, hist } = m;
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
  const entitlements = ent === undefined ? undefined : entitlementsOf(ent);
  if (entitlements === null) return invalid('entitlements');
  const historyGens = hist === undefined ? undefined : generationNumbers(hist);
  if (historyGens === null) return invalid('history generations');
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
  return ok({
    domain,
    group,
    epoch,
    gens: generations,
    by,
    ...(entitlements && { entitlements }),
    ...(historyGens && { historyGens }),
  });
}

const isGen = (n: unknown): n is number => typeof n === 'number' && Number.isSafeInteger(n) && n >= 1;

/** The entitlement table a package carries; null when it is not one. */
function entitlementsOf(value: unknown): Entitlement[] | null {
  if (!Array.isArray(value) || value.length > MAX_ENTITLEMENTS) return null;
  const out: Entitlement[] = [];
  for (const e of value as unknown[]) {
    if (!Array.isArray(e) || e.length !== 3) return null;
    const [machine, history, fromGen] = e as unknown[];
    if (!isBytes(machine, 32) || typeof history !== 'string' || !HISTORIES.includes(history) || !isGen(fromGen)) {
      return null;
    }
    out.push({ machine: toHex(machine), history: history as History, fromGen });
  }
  return out;
}

function generationNumbers(value: unknown): number[] | null {
  if (!Array.isArray(value) || value.length > MAX_GENERATIONS) return null;
  return (value as unknown[]).every(isGen) ? (value as number[]) : null;
}
