/**
 * Sequencer receipts (DESIGN §6, seed 003 "Coordination"): the relay's signed,
 * hash-chained acknowledgement that it accepted one MLS commit bundle as THE
 * commit of one (group, epoch).
 *
 *   receipt = cbor([body bytes, sig])
 *   body    = cbor({v: 1, topic: 32B, group: bytes, epoch: uint, seq: uint,
 *                   bundle: 32B, prev: 32B | empty, at: ms})
 *   sig     = Ed25519(relay key, "sov/1/receipt" ‖ body bytes)
 *   hash    = BLAKE3(receipt bytes)
 *
 * `bundle` is BLAKE3 of the whole bundle the relay accepted (commit, Welcome and
 * KEK message together); `seq` counts the group's receipts from 1 and `prev` is
 * the hash of receipt `seq - 1` (empty for the first). A relay that can order
 * commits can lie about the order, so members keep receipts and gossip their
 * heads: two receipts under one relay key that name one (topic, group, epoch)
 * with different bundles, or one (topic, group, seq) with different bodies, are
 * a proof of misbehaviour anyone can check (`conflictBetween`).
 */
import { ed25519 } from '@noble/curves/ed25519.js';
import { bytesEqual, concat, isBytes, toHex, utf8 } from '../bytes.js';
import { decodeCbor, encodeCbor, isRecord } from '../cbor.js';
import { blake3 } from '../hash.js';
import { err, ok, type Result } from '../result.js';

const SIGN_LABEL = utf8('sov/1/receipt');
export const MAX_RECEIPT_BYTES = 1024;
export const MAX_GROUP_ID = 255;

export type ReceiptBody = {
  readonly v: 1;
  readonly topic: Uint8Array;
  readonly group: Uint8Array;
  readonly epoch: number;
  readonly seq: number;
  readonly bundle: Uint8Array;
  readonly prev: Uint8Array;
  readonly at: number;
};

export type Receipt = { readonly body: ReceiptBody; readonly bytes: Uint8Array; readonly hash: Uint8Array };

export type ReceiptError = { readonly type: 'ReceiptInvalid'; readonly reason: string };

const invalid = (reason: string): Result<never, ReceiptError> => err({ type: 'ReceiptInvalid', reason });

export function receiptSigningPayload(body: Uint8Array): Uint8Array {
  return concat(SIGN_LABEL, body);
}

/** Signs a receipt with the relay's key (the relay holds it as bytes; see relay/server.ts). */
export function signReceipt(body: ReceiptBody, relaySecretKey: Uint8Array): Receipt {
  const bodyBytes = encodeCbor(body);
  const sig = ed25519.sign(receiptSigningPayload(bodyBytes), relaySecretKey);
  const bytes = encodeCbor([bodyBytes, sig]);
  return { body, bytes, hash: blake3(bytes) };
}

const isUint = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;

function checkBody(value: unknown): Result<ReceiptBody, ReceiptError> {
  if (!isRecord(value)) return invalid('receipt: body is not a map');
  const keys = Object.keys(value).sort().join(',');
  if (keys !== 'at,bundle,epoch,group,prev,seq,topic,v') return invalid('receipt: fields');
  const { v, topic, group, epoch, seq, bundle, prev, at } = value;
  if (v !== 1) return invalid('receipt: version');
  if (!isBytes(topic, 32) || !isBytes(bundle, 32)) return invalid('receipt: topic or bundle size');
  if (!isBytes(group) || group.length === 0 || group.length > MAX_GROUP_ID) return invalid('receipt: group id');
  if (!isUint(epoch) || !isUint(seq) || seq < 1 || !isUint(at)) return invalid('receipt: numbers');
  if (!isBytes(prev) || prev.length !== (seq === 1 ? 0 : 32)) return invalid('receipt: prev link');
  return ok({ v, topic, group, epoch, seq, bundle, prev, at });
}

/** Decodes a receipt and checks it is signed by `relayKey` (the key this machine pinned). */
export function verifyReceipt(bytes: Uint8Array, relayKey: Uint8Array): Result<Receipt, ReceiptError> {
  const outer = decodeCbor(bytes, MAX_RECEIPT_BYTES);
  if (!outer.ok) return invalid(`receipt: ${outer.error.reason}`);
  const pair = outer.value;
  if (!Array.isArray(pair) || pair.length !== 2 || !isBytes(pair[0]) || !isBytes(pair[1], 64)) {
    return invalid('receipt: not [body, sig]');
  }
  const [bodyBytes, sig] = pair as [Uint8Array, Uint8Array];
  const decoded = decodeCbor(bodyBytes, MAX_RECEIPT_BYTES);
  if (!decoded.ok) return invalid(`receipt: ${decoded.error.reason}`);
  const body = checkBody(decoded.value);
  if (!body.ok) return body;
  if (!signatureVerifies(sig, receiptSigningPayload(bodyBytes), relayKey))
    return invalid('receipt: signature does not verify under the pinned relay key');
  return ok({ body: body.value, bytes, hash: blake3(bytes) });
}

function signatureVerifies(sig: Uint8Array, payload: Uint8Array, key: Uint8Array): boolean {
  try {
    return ed25519.verify(sig, payload, key, { zip215: false });
  } catch {
    return false; // a malformed key is a failed verification, not a crash
  }
}

/** Proof that a relay signed two incompatible receipts (both already verified under one key). */
export type Misbehaviour = {
  readonly type: 'ConflictingReceipts';
  readonly kind: 'epoch' | 'sequence';
  readonly group: string;
  readonly epoch: number;
  readonly first: Uint8Array;
  readonly second: Uint8Array;
};

/** Whether two verified receipts of one relay contradict each other. */
export function conflictBetween(a: Receipt, b: Receipt): Misbehaviour | undefined {
  const x = a.body;
  const y = b.body;
  if (!bytesEqual(x.topic, y.topic) || !bytesEqual(x.group, y.group) || bytesEqual(a.hash, b.hash)) return undefined;
  const proof = { type: 'ConflictingReceipts', group: toHex(x.group), first: a.bytes, second: b.bytes } as const;
  if (x.epoch === y.epoch && !bytesEqual(x.bundle, y.bundle)) return { ...proof, kind: 'epoch', epoch: x.epoch };
  if (x.seq === y.seq) return { ...proof, kind: 'sequence', epoch: Math.min(x.epoch, y.epoch) };
  return undefined;
}
