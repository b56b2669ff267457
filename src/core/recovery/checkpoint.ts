/**
 * Checkpoints and recovery roots (seed 003 "Recovery"). Ciphertext alone is noise: to
 * recover, a machine also needs the catalog and the key history. An admin periodically
 * snapshots the state plane — every public-lane envelope it holds, sealed as it is (the
 * catalog's `object_catalog` and `object_access` rows with their delete and supersession
 * objects, the keyring that says whose signatures count, every other table) — together with
 * the key history it holds, into an encrypted checkpoint object, stored in the relay's blind
 * store under a recovery tag so blind archives copy it like data. A small signed recovery
 * root names the checkpoint and carries the access record that opens it, once for each
 * recovery kit of the keyring (HPKE to the kit machine's frame key):
 *
 *   checkpoint = nonce(12) ‖ AES-256-GCM(HKDF(secret, "sov/1/checkpoint"), body, aad = "sov/1/checkpoint" ‖ topic)
 *   body       = cbor({v: 1, topic: 32B, at: ms, by: 32B, gens: [[domain, gen, key 32B]], entries: [sealed envelope]})
 *   id         = BLAKE3(checkpoint)
 *
 *   root       = cbor([body bytes, sig])                                              ≤ 64 KiB
 *   body       = cbor({v: 1, topic: 32B, checkpoint: 32B id, bytes, entries, at: ms, by: 32B,
 *                      access: [[kid 32B, enc 32B, ct]] (1..64)})
 *   sig        = Ed25519(by, "sov/1/recovery-root" ‖ body)
 *   access     = HPKE base mode (X25519, HKDF-SHA256, AES-256-GCM) to kid, info = "sov/1/recovery-root" ‖ topic,
 *                aad = checkpoint id, plaintext = secret (32B)
 *
 * The root's signer must turn out to be an admin of the restored keyring (restore.ts): the
 * signature alone only says who wrote it.
 */
import { gcm } from '@noble/ciphers/aes.js';
import { bytesEqual, concat, isBytes, utf8 } from '../bytes.js';
import { decodeCbor, encodeCbor, isRecord } from '../cbor.js';
import { blake3, deriveKey } from '../hash.js';
import type { Random, Signer, Verifier } from '../ports.js';
import { err, ok, type Result } from '../result.js';
import { decodeGenerations, type KitGeneration } from './kit.js';

const CHECKPOINT_LABEL = 'sov/1/checkpoint';
const ROOT_LABEL = 'sov/1/recovery-root';
const NONCE_BYTES = 12;
export const CHECKPOINT_SECRET_BYTES = 32;
/** A checkpoint opens in memory: past this the admin is told, and the mesh needs incremental checkpoints. */
export const MAX_CHECKPOINT_BYTES = 256 * 1024 * 1024;
export const MAX_ROOT_BYTES = 64 * 1024;
const MAX_ACCESS = 64;

/** Sealing and opening a checkpoint secret for a recovery kit's frame key (HPKE; runtime supplies it). */
export interface RootKeys {
  seal(recipient: Uint8Array, secret: Uint8Array, info: Uint8Array, aad: Uint8Array): Promise<RootAccess>;
  /** Undefined when the record is not for this key or does not open. */
  open(access: RootAccess, info: Uint8Array, aad: Uint8Array): Promise<Uint8Array | undefined>;
}

export type RootAccess = { readonly kid: Uint8Array; readonly enc: Uint8Array; readonly ct: Uint8Array };

export type CheckpointContent = {
  readonly topic: Uint8Array;
  readonly at: number;
  /** The admin that wrote it (signer id). */
  readonly by: Uint8Array;
  readonly gens: readonly KitGeneration[];
  /** Sealed envelopes, as the log holds them. */
  readonly entries: readonly Uint8Array[];
};

export type RecoveryRoot = {
  readonly topic: Uint8Array;
  readonly checkpoint: Uint8Array;
  readonly bytes: number;
  readonly entries: number;
  readonly at: number;
  readonly by: Uint8Array;
  readonly access: readonly RootAccess[];
};

export type CheckpointError =
  | { readonly type: 'CheckpointMalformed'; readonly detail: string }
  | { readonly type: 'CheckpointTooLarge'; readonly bytes: number }
  | { readonly type: 'RootMalformed'; readonly detail: string }
  | { readonly type: 'RootSignatureInvalid' }
  | { readonly type: 'RootOtherMesh' }
  | { readonly type: 'RootNotForThisKit' };

/** The blind-store tags recovery objects live under: the relay groups them without learning the mesh. */
export function recoveryTags(group: Uint8Array): { readonly roots: Uint8Array; readonly checkpoints: Uint8Array } {
  return {
    roots: blake3(encodeCbor(['sov/1/recovery-roots', group])),
    checkpoints: blake3(encodeCbor(['sov/1/recovery-checkpoints', group])),
  };
}

const rootInfo = (topic: Uint8Array) => concat(utf8(ROOT_LABEL), topic);
const checkpointKey = (secret: Uint8Array) => deriveKey(secret, CHECKPOINT_LABEL);
const checkpointAad = (topic: Uint8Array) => concat(utf8(CHECKPOINT_LABEL), topic);

/** Seals a checkpoint under a fresh secret: its bytes, storage id and secret. */
export function sealCheckpoint(
  content: CheckpointContent,
  random: Random,
): Result<{ bytes: Uint8Array; id: Uint8Array; secret: Uint8Array }, CheckpointError> {
  const body = encodeCbor({
    v: 1,
    topic: content.topic,
    at: content.at,
    by: content.by,
    gens: content.gens.map((g) => [g.domain, g.gen, g.key]),
    entries: content.entries,
  });
  if (body.length > MAX_CHECKPOINT_BYTES) return err({ type: 'CheckpointTooLarge', bytes: body.length });
  return ok(sealCheckpointBody(body, content.topic, random));
}

/** Seals a checkpoint body's bytes as they are (sealCheckpoint; tests seal malformed bodies with it). */
export function sealCheckpointBody(
  body: Uint8Array,
  topic: Uint8Array,
  random: Random,
): { bytes: Uint8Array; id: Uint8Array; secret: Uint8Array } {
  const secret = random.bytes(CHECKPOINT_SECRET_BYTES);
  const nonce = random.bytes(NONCE_BYTES);
  const bytes = concat(nonce, gcm(checkpointKey(secret), nonce, checkpointAad(topic)).encrypt(body));
  return { bytes, id: blake3(bytes), secret };
}

/** Opens a checkpoint whose bytes already hash to the id its root names. */
export function openCheckpoint(
  bytes: Uint8Array,
  secret: Uint8Array,
  topic: Uint8Array,
): Result<CheckpointContent, CheckpointError> {
  const bad = (detail: string): Result<never, CheckpointError> => err({ type: 'CheckpointMalformed', detail });
  if (bytes.length < NONCE_BYTES + 16) return bad('too short');
  let body: Uint8Array;
  try {
    body = gcm(checkpointKey(secret), bytes.subarray(0, NONCE_BYTES), checkpointAad(topic)).decrypt(
      bytes.subarray(NONCE_BYTES),
    );
  } catch {
    return bad('does not open with the secret its root carries');
  }
  const decoded = decodeCbor(body, MAX_CHECKPOINT_BYTES + 1024);
  if (!decoded.ok) return bad(decoded.error.reason);
  const c = decoded.value;
  if (!isRecord(c) || c['v'] !== 1) return bad('not a version 1 checkpoint');
  const { at, by, gens, entries } = c;
  if (!isBytes(c['topic'], 32) || !bytesEqual(c['topic'], topic)) return bad('of another mesh');
  if (typeof at !== 'number' || !Number.isSafeInteger(at) || !isBytes(by, 32)) return bad('header malformed');
  if (!Array.isArray(entries) || !entries.every((e) => isBytes(e))) {
    return bad('body malformed');
  }
  const history = decodeGenerations(gens);
  if (!history) return bad('key history malformed');
  return ok({ topic, at, by, gens: history, entries: entries });
}

/** Writes and signs a recovery root giving each recipient (a kit's frame key) the checkpoint's secret. */
export async function makeRoot(
  root: Omit<RecoveryRoot, 'access'>,
  secret: Uint8Array,
  recipients: readonly Uint8Array[],
  keys: RootKeys,
  signer: Signer,
): Promise<Result<Uint8Array, CheckpointError>> {
  if (recipients.length < 1 || recipients.length > MAX_ACCESS) {
    return err({ type: 'RootMalformed', detail: `${recipients.length} recovery kits (1 to ${MAX_ACCESS} allowed)` });
  }
  const access: RootAccess[] = [];
  for (const kid of recipients) access.push(await keys.seal(kid, secret, rootInfo(root.topic), root.checkpoint));
  const body = encodeCbor({
    v: 1,
    topic: root.topic,
    checkpoint: root.checkpoint,
    bytes: root.bytes,
    entries: root.entries,
    at: root.at,
    by: root.by,
    access: access.map((a) => [a.kid, a.enc, a.ct]),
  });
  return ok(await signRoot(body, signer));
}

/** A root body signed as roots are (makeRoot; tests sign malformed bodies with it). */
export async function signRoot(body: Uint8Array, signer: Signer): Promise<Uint8Array> {
  return encodeCbor([body, await signer.sign(concat(utf8(ROOT_LABEL), body))]);
}

/**
 * Reads a recovery root for one kit: its format, its mesh, its signature, and the checkpoint
 * secret it carries for `kid`. Whether its signer is an admin is the caller's to check.
 */
export async function openRoot(
  bytes: Uint8Array,
  context: { readonly topic: Uint8Array; readonly kid: Uint8Array },
  keys: RootKeys,
  verifier: Verifier,
): Promise<Result<{ root: RecoveryRoot; secret: Uint8Array }, CheckpointError>> {
  const bad = (detail: string): Result<never, CheckpointError> => err({ type: 'RootMalformed', detail });
  const outer = decodeCbor(bytes, MAX_ROOT_BYTES);
  if (!outer.ok) return bad(outer.error.reason);
  if (!Array.isArray(outer.value) || outer.value.length !== 2) return bad('not [body, sig]');
  const [body, sig] = outer.value as [unknown, unknown];
  if (!isBytes(body) || !isBytes(sig, 64)) return bad('not [body, sig]');
  const decoded = decodeCbor(body, MAX_ROOT_BYTES);
  if (!decoded.ok) return bad(decoded.error.reason);
  const r = decoded.value;
  if (!isRecord(r) || r['v'] !== 1) return bad('not a version 1 root');
  const { topic, checkpoint, bytes: size, entries, at, by, access } = r;
  if (!isBytes(topic, 32) || !isBytes(checkpoint, 32) || !isBytes(by, 32)) return bad('ids malformed');
  const counts = [size, entries, at];
  if (!counts.every((n) => typeof n === 'number' && Number.isSafeInteger(n) && n >= 0)) return bad('counts malformed');
  if (!Array.isArray(access) || access.length < 1 || access.length > MAX_ACCESS) return bad('access malformed');
  const records: RootAccess[] = [];
  for (const a of access) {
    if (!Array.isArray(a) || a.length !== 3) return bad('access malformed');
    const [kid, enc, ct] = a as [unknown, unknown, unknown];
    if (!isBytes(kid, 32) || !isBytes(enc, 32) || !isBytes(ct) || ct.length > 256) return bad('access malformed');
    records.push({ kid, enc, ct });
  }
  if (!(await verifier.verify(by, concat(utf8(ROOT_LABEL), body), sig))) return err({ type: 'RootSignatureInvalid' });
  if (!bytesEqual(topic, context.topic)) return err({ type: 'RootOtherMesh' });
  const mine = records.find((a) => bytesEqual(a.kid, context.kid));
  const secret = mine && (await keys.open(mine, rootInfo(topic), checkpoint));
  if (!secret || secret.length !== CHECKPOINT_SECRET_BYTES) return err({ type: 'RootNotForThisKit' });
  const root = {
    topic,
    checkpoint,
    bytes: size as number,
    entries: entries as number,
    at: at as number,
    by,
    access: records,
  };
  return ok({ root, secret });
}
