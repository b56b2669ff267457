/**
 * What a member keeps of the sequencer's receipts (DESIGN §6): every verified
 * receipt per group, so a receipt heard later — from the relay or gossiped by
 * a peer as its head — is checked against all of them. Two receipts under the
 * pinned relay key that disagree about one epoch or one sequence number are
 * proof of misbehaviour: the log keeps the proof and reports it, it never
 * "resolves" it. A receipt whose chain link cannot be checked yet (a gap) is
 * kept too; links are checked whenever both neighbours are known.
 */
import { bytesEqual, toHex } from '../bytes.js';
import { err, ok, type Result } from '../result.js';
import { conflictBetween, verifyReceipt, type Misbehaviour, type Receipt, type ReceiptError } from './receipt.js';

export type BrokenChain = {
  readonly type: 'BrokenReceiptChain';
  readonly group: string;
  readonly seq: number;
  readonly first: Uint8Array;
  readonly second: Uint8Array;
};

export type ReceiptVerdict = Result<Receipt, ReceiptError | Misbehaviour | BrokenChain>;

export class ReceiptLog {
  readonly #relayKey: Uint8Array;
  /** group hex → seq → receipt */
  readonly #groups = new Map<string, Map<number, Receipt>>();
  readonly #proofs: (Misbehaviour | BrokenChain)[] = [];

  constructor(relayKey: Uint8Array) {
    this.#relayKey = relayKey;
  }

  /** Verifies and records a receipt; a contradiction is returned and kept as proof. */
  observe(bytes: Uint8Array): ReceiptVerdict {
    const verified = verifyReceipt(bytes, this.#relayKey);
    if (!verified.ok) return verified;
    const receipt = verified.value;
    const groupHex = toHex(receipt.body.group);
    let bySeq = this.#groups.get(groupHex);
    if (!bySeq) this.#groups.set(groupHex, (bySeq = new Map<number, Receipt>()));
    for (const known of bySeq.values()) {
      const conflict = conflictBetween(known, receipt);
      if (conflict) return this.#proof(conflict);
    }
    const before = bySeq.get(receipt.body.seq - 1);
    if (before && !bytesEqual(receipt.body.prev, before.hash)) return this.#broken(groupHex, before, receipt);
    const after = bySeq.get(receipt.body.seq + 1);
    if (after && !bytesEqual(after.body.prev, receipt.hash)) return this.#broken(groupHex, receipt, after);
    bySeq.set(receipt.body.seq, receipt);
    return ok(receipt);
  }

  #proof(proof: Misbehaviour): ReceiptVerdict {
    this.#proofs.push(proof);
    return err(proof);
  }

  #broken(group: string, first: Receipt, second: Receipt): ReceiptVerdict {
    const proof: BrokenChain = {
      type: 'BrokenReceiptChain',
      group,
      seq: second.body.seq,
      first: first.bytes,
      second: second.bytes,
    };
    this.#proofs.push(proof);
    return err(proof);
  }

  /** The newest receipt of a group: what a member gossips. */
  head(group: Uint8Array): Receipt | undefined {
    const bySeq = this.#groups.get(toHex(group));
    return bySeq && bySeq.size > 0 ? bySeq.get(Math.max(...bySeq.keys())) : undefined;
  }

  heads(): Receipt[] {
    return [...this.#groups.values()].flatMap((bySeq) =>
      bySeq.size === 0 ? [] : [bySeq.get(Math.max(...bySeq.keys()))!],
    );
  }

  misbehaviour(): readonly (Misbehaviour | BrokenChain)[] {
    return this.#proofs;
  }

  /** Every kept receipt, for persisting; `observe` them again to restore. */
  all(): Uint8Array[] {
    return [...this.#groups.values()].flatMap((bySeq) => [...bySeq.values()].map((r) => r.bytes));
  }
}
