/**
 * The recovery kit (seed 003 "Recovery"; issue 24): what lets a fresh machine restore a mesh
 * that lost every machine — the mesh's group secret and relay, the admins to trust, the key
 * history (every retained generation of every domain the exporting admin held), the pointer
 * to the recovery root, and the keys of the kit's own machine: an identity an admin enrolled
 * in the keyring for the kit (`keyring.recovery`), so the relay admits whoever restores with it
 * and recovery roots carry an access record for it (checkpoint.ts). Sealed under a key derived
 * from the recovery code (code.ts) with scrypt (@noble/hashes); never sent to a relay.
 *
 *   kit   = cbor({v: 1, kdf: ["scrypt", log2 N, r, p], salt: 16B, sealed: nonce(12) ‖ AES-256-GCM(K, body, aad)})
 *   K     = scrypt(code bytes, salt, N, r, p, 32)
 *   aad   = "sov/1/recovery-kit" ‖ salt ‖ u8 log2 N ‖ u8 r ‖ u8 p
 *   body  = cbor({v: 1, group: 32B, relay: text, relayKey: 32B, anchors: [32B] (1..16), at: ms,
 *                 machine: {signing: PKCS#8, signingPub: 32B, endpoint: PKCS#8, endpointPub: 32B,
 *                           frame: PKCS#8, framePub: 32B},
 *                 gens: [[domain, gen ≥ 1, key 32B]] (≤ 65,536), root: 32B | empty})
 *
 * A forged file cannot make opening costly: N, r and p are bounded (≤ 256 MiB of scrypt memory).
 */
import { gcm } from '@noble/ciphers/aes.js';
import { scryptAsync } from '@noble/hashes/scrypt.js';
import { concat, isBytes, utf8 } from '../bytes.js';
import { decodeCbor, encodeCbor, isRecord } from '../cbor.js';
import type { Random } from '../ports.js';
import { err, ok, type Result } from '../result.js';
import { isDomainName, type DomainName } from '../schema.js';
import { parseCode, type CodeError } from './code.js';

const LABEL = utf8('sov/1/recovery-kit');
const NONCE_BYTES = 12;
const SALT_BYTES = 16;
/** scrypt cost written into new kits: 2^15 × 8 × 128 B = 32 MiB, a fraction of a second. */
export const KIT_LOG_N = 15;
const MAX_LOG_N = 18;
const MAX_KIT_BYTES = 4 * 1024 * 1024;
const MAX_GENERATIONS = 65_536;
const MAX_ANCHORS = 16;

/** The kit machine's keys: private halves as PKCS#8, public halves raw. */
export type KitMachine = {
  readonly signing: Uint8Array;
  readonly signingPub: Uint8Array;
  readonly endpoint: Uint8Array;
  readonly endpointPub: Uint8Array;
  readonly frame: Uint8Array;
  readonly framePub: Uint8Array;
};

export type KitGeneration = { readonly domain: DomainName; readonly gen: number; readonly key: Uint8Array };

export type RecoveryKit = {
  readonly group: Uint8Array;
  readonly relay: string;
  readonly relayKey: Uint8Array;
  readonly anchors: readonly Uint8Array[];
  readonly at: number;
  readonly machine: KitMachine;
  readonly gens: readonly KitGeneration[];
  /** The recovery root current when the kit was made (storage id), if there was one. */
  readonly root: Uint8Array | undefined;
};

export type KitError =
  CodeError | { readonly type: 'KitUnreadable'; readonly reason: string } | { readonly type: 'WrongCode' };

const unreadable = (reason: string): Result<never, KitError> => err({ type: 'KitUnreadable', reason });

function kitAad(salt: Uint8Array, logN: number, r: number, p: number): Uint8Array {
  return concat(LABEL, salt, Uint8Array.of(logN, r, p));
}

function kitKey(code: Uint8Array, salt: Uint8Array, logN: number, r: number, p: number): Promise<Uint8Array> {
  return scryptAsync(code, salt, { N: 2 ** logN, r, p, dkLen: 32, maxmem: 2 ** (logN + 8) * r * p });
}

/** Seals a kit under a recovery code's bytes (code.ts `newRecoveryCode`). */
export function sealKit(kit: RecoveryKit, code: Uint8Array, random: Random): Promise<Uint8Array> {
  return sealKitBody(encodeBody(kit), code, random);
}

/** Seals a kit body's bytes as they are (sealKit; tests seal malformed bodies with it). */
export async function sealKitBody(
  body: Uint8Array,
  code: Uint8Array,
  random: Random,
  [logN, r, p]: readonly [number, number, number] = [KIT_LOG_N, 8, 1],
): Promise<Uint8Array> {
  const salt = random.bytes(SALT_BYTES);
  const key = await kitKey(code, salt, logN, r, p);
  const nonce = random.bytes(NONCE_BYTES);
  const sealed = gcm(key, nonce, kitAad(salt, logN, r, p)).encrypt(body);
  return encodeCbor({ v: 1, kdf: ['scrypt', logN, r, p], salt, sealed: concat(nonce, sealed) });
}

/** A kit's body as CBOR (before sealing). */
export function encodeBody(kit: RecoveryKit): Uint8Array {
  const m = kit.machine;
  return encodeCbor({
    v: 1,
    group: kit.group,
    relay: kit.relay,
    relayKey: kit.relayKey,
    anchors: kit.anchors,
    at: kit.at,
    machine: {
      signing: m.signing,
      signingPub: m.signingPub,
      endpoint: m.endpoint,
      endpointPub: m.endpointPub,
      frame: m.frame,
      framePub: m.framePub,
    },
    gens: kit.gens.map((g) => [g.domain, g.gen, g.key]),
    root: kit.root ?? new Uint8Array(0),
  });
}

/**
 * Opens a kit file with the code a human typed: `MistypedCode` before any key is derived,
 * `WrongCode` when the code is well formed but not this kit's, `KitUnreadable` for a file that
 * is not a kit (or was cut short or changed).
 */
export async function openKit(file: Uint8Array, typedCode: string): Promise<Result<RecoveryKit, KitError>> {
  const code = parseCode(typedCode);
  if (!code.ok) return code;
  const decoded = decodeCbor(file, MAX_KIT_BYTES);
  if (!decoded.ok) return unreadable(`not a recovery kit (${decoded.error.reason})`);
  const outer = decoded.value;
  if (!isRecord(outer) || outer['v'] !== 1) return unreadable('not a version 1 recovery kit');
  const { kdf, salt, sealed } = outer;
  if (!Array.isArray(kdf) || kdf.length !== 4 || kdf[0] !== 'scrypt') return unreadable('unknown key derivation');
  const [, logN, r, p] = kdf as [string, unknown, unknown, unknown];
  if (!isSmall(logN, 10, MAX_LOG_N) || r !== 8 || !isSmall(p, 1, 4)) return unreadable('scrypt cost out of bounds');
  if (!isBytes(salt, SALT_BYTES) || !isBytes(sealed) || sealed.length < NONCE_BYTES + 16) {
    return unreadable('salt or sealed body malformed');
  }
  const key = await kitKey(code.value, salt, logN, r, p);
  let body: Uint8Array;
  try {
    body = gcm(key, sealed.subarray(0, NONCE_BYTES), kitAad(salt, logN, r, p)).decrypt(sealed.subarray(NONCE_BYTES));
  } catch {
    return err({ type: 'WrongCode' });
  }
  return decodeBody(body);
}

const isSmall = (v: unknown, min: number, max: number): v is number =>
  typeof v === 'number' && Number.isInteger(v) && v >= min && v <= max;

const isKey = (v: unknown): v is Uint8Array => isBytes(v) && v.length >= 32 && v.length <= 128;

/** A key history as kits and checkpoints carry it, `[[domain, gen, key]]`; undefined if malformed. */
export function decodeGenerations(gens: unknown): KitGeneration[] | undefined {
  if (!Array.isArray(gens) || gens.length > MAX_GENERATIONS) return undefined;
  const history: KitGeneration[] = [];
  for (const g of gens) {
    if (!Array.isArray(g) || g.length !== 3) return undefined;
    const [domain, gen, key] = g as [unknown, unknown, unknown];
    if (!isDomainName(domain) || !isSmall(gen, 1, 2 ** 32 - 1) || !isBytes(key, 32)) return undefined;
    history.push({ domain, gen, key });
  }
  return history;
}

function decodeBody(bytes: Uint8Array): Result<RecoveryKit, KitError> {
  const decoded = decodeCbor(bytes, MAX_KIT_BYTES);
  if (!decoded.ok) return unreadable(decoded.error.reason);
  const b = decoded.value;
  if (!isRecord(b) || b['v'] !== 1) return unreadable('not a version 1 kit body');
  const { group, relay, relayKey, anchors, at, machine, gens, root } = b;
  if (!isBytes(group, 32) || !isBytes(relayKey, 32)) return unreadable('group secret or relay key malformed');
  if (typeof relay !== 'string' || !/^wss?:\/\//.test(relay)) return unreadable('relay address malformed');
  if (!Array.isArray(anchors) || anchors.length < 1 || anchors.length > MAX_ANCHORS) {
    return unreadable('anchors malformed');
  }
  if (!anchors.every((a) => isBytes(a, 32))) return unreadable('anchors malformed');
  if (typeof at !== 'number' || !Number.isSafeInteger(at) || at < 0) return unreadable('time malformed');
  if (!isRecord(machine)) return unreadable('machine keys malformed');
  const { signing, signingPub, endpoint, endpointPub, frame, framePub } = machine;
  if (!isKey(signing) || !isKey(endpoint) || !isKey(frame)) return unreadable('machine keys malformed');
  if (!isBytes(signingPub, 32) || !isBytes(endpointPub, 32) || !isBytes(framePub, 32)) {
    return unreadable('machine keys malformed');
  }
  const history = decodeGenerations(gens);
  if (!history) return unreadable('key history malformed');
  if (!isBytes(root) || (root.length !== 0 && root.length !== 32)) return unreadable('root pointer malformed');
  return ok({
    group,
    relay,
    relayKey,
    anchors: anchors,
    at,
    machine: { signing, signingPub, endpoint, endpointPub, frame, framePub },
    gens: history,
    root: root.length === 32 ? root : undefined,
  });
}
