/**
 * The client side of the relay's blind sequencer (core/relay-wire.ts `commit`,
 * `sequenced`, `refused`, `accepted`): posts commit bundles and resolves each
 * with the relay's verdict. Every receipt — ours, or a winner's handed to us as
 * the loser — is checked under the relay key this machine pinned, and a
 * winner's bundle against the hash its receipt signs, before anything is
 * believed; pushed `accepted` bundles are handed on only after the same check.
 * Receipts go into the machine's ReceiptLog, which catches a relay that signs
 * two commits for one epoch.
 */
import { bytesEqual } from '../core/bytes.js';
import { blake3 } from '../core/hash.js';
import type { ReceiptLog } from '../core/mls/receipt-log.js';
import type { Receipt } from '../core/mls/receipt.js';
import type { SequencerRejection } from '../core/mls/sequencer.js';
import type { EndpointToRelay, RelayToEndpoint } from '../core/relay-wire.js';
import { err, ok, type Result } from '../core/result.js';

type Verdict = Result<Receipt, SequencerRejection>;
export type SequencerMessage = Extract<RelayToEndpoint, { t: 'sequenced' | 'refused' | 'accepted' | 'commit-log' }>;

export const isSequencerMessage = (m: RelayToEndpoint): m is SequencerMessage =>
  m.t === 'sequenced' || m.t === 'refused' || m.t === 'accepted' || m.t === 'commit-log';

/** An accepted commit as the relay's log returns it, its receipt checked. */
export type LoggedCommit = { readonly receipt: Receipt; readonly bundle: Uint8Array };

const LOG_TIMEOUT_MS = 10_000;

export class RelaySequencerPort {
  readonly #send: (message: Extract<EndpointToRelay, { t: 'commit' | 'commits' }>) => void;
  readonly #log: ReceiptLog;
  readonly #onAccepted: (bundle: Uint8Array, receipt: Receipt) => void;
  readonly #pending = new Map<number, { bundle: Uint8Array; resolve: (v: Verdict) => void }>();
  readonly #logs = new Map<number, (items: LoggedCommit[]) => void>();
  #rid = 0;

  constructor(
    send: (message: Extract<EndpointToRelay, { t: 'commit' | 'commits' }>) => void,
    log: ReceiptLog,
    onAccepted: (bundle: Uint8Array, receipt: Receipt) => void,
  ) {
    this.#send = send;
    this.#log = log;
    this.#onAccepted = onAccepted;
  }

  submit(bundle: Uint8Array): Promise<Verdict> {
    const rid = ++this.#rid;
    return new Promise((resolve) => {
      this.#pending.set(rid, { bundle, resolve });
      this.#send({ t: 'commit', rid, bundle });
    });
  }

  /**
   * The accepted commits of `group` from `epoch` on (one page), each receipt
   * checked and each bundle against its receipt; the first that fails ends the
   * list, so a caller never applies past a gap.
   */
  log(group: Uint8Array, epoch: number, timeoutMs = LOG_TIMEOUT_MS): Promise<LoggedCommit[]> {
    const rid = ++this.#rid;
    return new Promise((resolve) => {
      // A relay that does not answer (refused us, or lost the session) yields no page, never a hang.
      const timer = setTimeout(() => this.#logs.delete(rid) && resolve([]), timeoutMs);
      this.#logs.set(rid, (items) => {
        clearTimeout(timer);
        resolve(items);
      });
      this.#send({ t: 'commits', rid, group, from: epoch });
    });
  }

  /** Answers every request still waiting (the session ended): commits as unavailable, logs as empty. */
  abandon(reason: string): void {
    for (const [, waiting] of this.#pending) waiting.resolve(err({ type: 'MalformedBundle', reason }));
    for (const [, resolve] of this.#logs) resolve([]);
    this.#pending.clear();
    this.#logs.clear();
  }

  /** Takes a sequencer message from the relay session. */
  receive(message: SequencerMessage): void {
    if (message.t === 'commit-log') {
      const resolve = this.#logs.get(message.rid);
      if (!resolve) return;
      this.#logs.delete(message.rid);
      const items: LoggedCommit[] = [];
      for (const [receiptBytes, bundle] of message.items) {
        const receipt = this.#checked(receiptBytes, bundle);
        if (!receipt) break;
        items.push({ receipt, bundle });
      }
      return resolve(items);
    }
    if (message.t === 'accepted') {
      const receipt = this.#checked(message.receipt, message.bundle);
      if (receipt) this.#onAccepted(message.bundle, receipt);
      return;
    }
    const waiting = this.#pending.get(message.rid);
    if (!waiting) return;
    this.#pending.delete(message.rid);
    if (message.t === 'sequenced') {
      const receipt = this.#checked(message.receipt, waiting.bundle);
      return waiting.resolve(
        receipt ? ok(receipt) : err({ type: 'MalformedBundle', reason: 'sequencer: the receipt does not verify' }),
      );
    }
    waiting.resolve(err(this.#rejection(message)));
  }

  #rejection(m: Extract<SequencerMessage, { t: 'refused' }>): SequencerRejection {
    if (m.code === 'EpochTaken') {
      const receipt = this.#checked(m.receipt, m.bundle);
      if (receipt) {
        const { epoch, seq } = receipt.body;
        return { type: 'EpochTaken', epoch, winner: { epoch, seq, receipt: m.receipt, bundle: m.bundle } };
      }
    }
    if (m.code === 'PosterMismatch') return { type: 'PosterMismatch', reason: m.reason };
    if (m.code === 'NotASteward') return { type: 'NotASteward', reason: m.reason };
    return { type: 'MalformedBundle', reason: `${m.code}: ${m.reason}` };
  }

  /** A receipt that verifies under the pinned key, names this bundle, and agrees with every one kept. */
  #checked(receiptBytes: Uint8Array, bundle: Uint8Array): Receipt | undefined {
    const verdict = this.#log.observe(receiptBytes);
    if (!verdict.ok || !bytesEqual(verdict.value.body.bundle, blake3(bundle))) return undefined;
    return verdict.value;
  }
}
