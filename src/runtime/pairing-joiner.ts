/**
 * The joining side of pairing (the inviting side and the whole exchange: pairing-inviter.ts).
 * A joiner knows only its ticket: the inviter's endpoint and frame key, and the relay. It
 * sends its request with a commitment, reveals its nonce once challenged, shows the string
 * for its human to compare, and sends the answer. Frames can be lost (a relay restart, a
 * dropped socket), so until the inviter answers it repeats its last step — the request until
 * the challenge arrives, then its confirmation until the keys do; the inviter answers repeats
 * idempotently. A refusal from the inviter ends the ceremony: the joiner shows why and stops.
 *
 * The accept itself (becoming a member) is the machine's business: mesh-node.ts.
 */
import type { DomainItems } from '../core/peer-wire.js';
import type { Result } from '../core/result.js';
import type { InboundMessage, JoinError, PeerAddress } from './crypto-service.js';

/** The joining side of the ceremony: the string to compare, and whether our human answered. */
export type JoinView = {
  readonly sas: string | undefined;
  readonly answered: boolean;
  /** The inviting machine ended the ceremony, and why (declined, ticket used or expired …). */
  readonly refused?: string;
};

type JoinChallenge = Extract<InboundMessage, { t: 'join-challenge' }>;

export type JoinerPort = {
  readonly crypto: {
    joinRequest(name: string): Promise<Result<{ to: string; body: Uint8Array }, JoinError>>;
    joinReveal(challenge: JoinChallenge): Promise<Result<{ sas: string; body: Uint8Array }, JoinError>>;
    joinAnswer(confirmed: boolean, kps?: DomainItems): Promise<Result<Uint8Array, JoinError>>;
  };
  /** Our MLS key packages for the built-in domains, sent with a confirmation. */
  joinOffers(): Promise<Result<DomainItems, { readonly type: string }>>;
  /** The inviter our ticket names; undefined once this machine is no longer joining. */
  inviter(): PeerAddress | undefined;
  /** The name this machine gives itself. */
  name(): string;
  /** Whether the relay session is up, so a repeat can go out. */
  online(): boolean;
  sendTo(endpoint: string, body: Uint8Array): void;
  /** Gives up the join: forgets the ticket (the machine reloads). */
  abandon(): Promise<void>;
  notice(kind: 'info' | 'warning', text: string): void;
  count(type: string): void;
  changed(): Promise<void>;
};

export const JOIN_RETRY_MS = 4000;

export class JoinerCeremony {
  readonly #port: JoinerPort;
  #view: JoinView = { sas: undefined, answered: false };
  #retry: ReturnType<typeof setInterval> | undefined;

  constructor(port: JoinerPort) {
    this.#port = port;
  }

  get view(): JoinView {
    return this.#view;
  }

  /** The relay session is up: send the request (again, from the start) and keep repeating. */
  async start(): Promise<void> {
    const port = this.#port;
    this.#view = { sas: undefined, answered: false };
    const request = await port.crypto.joinRequest(port.name());
    if (request.ok) port.sendTo(request.value.to, request.value.body);
    else port.notice('warning', `join: ${request.error.type}`);
    this.#repeat();
  }

  /** Step 2: the inviter's nonce arrived; reveal ours and show the string. */
  async challenged(challenge: JoinChallenge): Promise<void> {
    const port = this.#port;
    const inviter = port.inviter();
    if (!inviter || this.#view.refused !== undefined) return port.count('UnexpectedPairingMessage');
    const revealed = await port.crypto.joinReveal(challenge);
    if (!revealed.ok) return port.notice('warning', `join: ${revealed.error.type}`);
    port.sendTo(inviter.endpoint, revealed.value.body);
    if (this.#view.sas === revealed.value.sas) return;
    this.#view = { sas: revealed.value.sas, answered: false };
    port.notice('info', 'compare the pairing code with the inviting machine');
  }

  /** Our human compared the string with the inviting machine's and confirmed (or declined). */
  async answer(confirmed: boolean): Promise<void> {
    const port = this.#port;
    const inviter = port.inviter();
    if (!inviter || !this.#view.sas || this.#view.refused !== undefined) return;
    const kps = confirmed ? await port.joinOffers() : { ok: true as const, value: [] };
    if (!kps.ok) return port.notice('warning', `join: ${kps.error.type}`);
    const answer = await port.crypto.joinAnswer(confirmed, kps.value);
    if (!answer.ok) return port.notice('warning', `join: ${answer.error.type}`);
    port.sendTo(inviter.endpoint, answer.value);
    this.#view = { ...this.#view, answered: true };
    if (!confirmed) return port.abandon();
    await port.changed();
  }

  /** The inviter ended the ceremony; only the inviter our ticket names can (its frame key opened it). */
  refused(from: string, reason: string): void {
    const port = this.#port;
    if (port.inviter()?.endpoint !== from) return port.count('UnexpectedPairingMessage');
    if (this.#view.refused !== undefined) return;
    this.stop();
    this.#view = { ...this.#view, refused: reason };
    port.notice('warning', `join refused: ${reason}`);
  }

  stop(): void {
    clearInterval(this.#retry);
    this.#retry = undefined;
  }

  #repeat(): void {
    this.stop();
    this.#retry = setInterval(() => void this.#again(), JOIN_RETRY_MS);
  }

  async #again(): Promise<void> {
    const port = this.#port;
    const inviter = port.inviter();
    if (!inviter) return this.stop();
    if (!port.online() || this.#view.refused !== undefined) return;
    if (!this.#view.sas) {
      const request = await port.crypto.joinRequest(port.name());
      if (request.ok) port.sendTo(request.value.to, request.value.body);
    } else if (this.#view.answered) {
      const kps = await port.joinOffers();
      const answer = kps.ok ? await port.crypto.joinAnswer(true, kps.value) : kps;
      if (answer.ok) port.sendTo(inviter.endpoint, answer.value);
    }
  }
}
