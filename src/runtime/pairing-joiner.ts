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
import { ok, type Result } from '../core/result.js';
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
  /** The failure last shown, so a step failing at every repeat is shown once. */
  #reported: string | undefined;

  constructor(port: JoinerPort) {
    this.#port = port;
  }

  get view(): JoinView {
    return this.#view;
  }

  /**
   * The relay session is up: send the request (again, from the start) and keep repeating.
   * The repeats are scheduled first: a step that fails (an engine's crypto error, a worker
   * restarting) is reported and tried again at the next repeat, never the end of the join.
   */
  async start(): Promise<void> {
    this.#view = { sas: undefined, answered: false };
    this.#reported = undefined;
    this.#repeat();
    await this.#attempt(() => this.#sendRequest());
  }

  /** Step 2: the inviter's nonce arrived; reveal ours and show the string. */
  async challenged(challenge: JoinChallenge): Promise<void> {
    const port = this.#port;
    const inviter = port.inviter();
    if (!inviter || this.#view.refused !== undefined) return port.count('UnexpectedPairingMessage');
    await this.#attempt(async () => {
      const revealed = await port.crypto.joinReveal(challenge);
      if (!revealed.ok) return revealed.error.type;
      port.sendTo(inviter.endpoint, revealed.value.body);
      if (this.#view.sas === revealed.value.sas) return undefined;
      this.#view = { sas: revealed.value.sas, answered: false };
      port.notice('info', 'compare the pairing code with the inviting machine');
      return undefined;
    });
  }

  /** Our human compared the string with the inviting machine's and confirmed (or declined). */
  async answer(confirmed: boolean): Promise<void> {
    const port = this.#port;
    const inviter = port.inviter();
    if (!inviter || !this.#view.sas || this.#view.refused !== undefined) return;
    const sent = await this.#attempt(() => this.#sendAnswer(confirmed), 'answer again');
    if (!sent) return;
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

  /** The step to repeat: the request until challenged, the confirmation until the keys arrive. */
  async #again(): Promise<void> {
    const port = this.#port;
    if (!port.inviter()) return this.stop();
    if (!port.online() || this.#view.refused !== undefined) return;
    if (!this.#view.sas) await this.#attempt(() => this.#sendRequest());
    else if (this.#view.answered) await this.#attempt(() => this.#sendAnswer(true));
  }

  async #sendRequest(): Promise<string | undefined> {
    const port = this.#port;
    const request = await port.crypto.joinRequest(port.name());
    if (!request.ok) return request.error.type;
    port.sendTo(request.value.to, request.value.body);
    return undefined;
  }

  async #sendAnswer(confirmed: boolean): Promise<string | undefined> {
    const port = this.#port;
    const inviter = port.inviter();
    if (!inviter) return 'NoPendingJoin';
    const kps = confirmed ? await port.joinOffers() : ok([]);
    if (!kps.ok) return kps.error.type;
    const answer = await port.crypto.joinAnswer(confirmed, kps.value);
    if (!answer.ok) return answer.error.type;
    port.sendTo(inviter.endpoint, answer.value);
    return undefined;
  }

  /**
   * Runs one step; a step that fails — an error it returns or one thrown on the way — is shown
   * to our human (once while it repeats) and the ceremony goes on: repeated steps are tried
   * again at the next repeat, the human's answer when they answer again. True when it went out.
   */
  async #attempt(step: () => Promise<string | undefined>, next = 'trying again'): Promise<boolean> {
    let failed: string | undefined;
    try {
      failed = await step();
    } catch (e) {
      failed = e instanceof Error ? `${e.name}: ${e.message}` : String(e);
    }
    if (failed === undefined) {
      this.#reported = undefined;
      return true;
    }
    if (this.#reported !== failed) {
      this.#reported = failed;
      this.#port.notice('warning', `join: ${failed} (${next})`);
      await this.#port.changed();
    }
    return false;
  }
}
