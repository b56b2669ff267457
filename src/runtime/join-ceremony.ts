/**
 * The joiner's side of pairing, inside the crypto worker (crypto-service.ts delegates to
 * this): a pasted ticket kept pending, the commitment to our nonce, the reveal and the
 * short authentication string our human compares, the answer, and the check that the
 * inviter's accept comes after a confirmation made with that very inviter.
 *
 *   ticket ─ begin ─▶ request ──▶ (challenge) ─ reveal ─▶ sas shown ─ answer ─▶ (accept) ─ accept
 *
 * The pending ticket is kept wrapped in the key store, so a reload continues the join; the
 * ceremony itself (our nonce) lives only in memory, so a reload starts it over.
 */
import { bytesEqual, toHex } from '../core/bytes.js';
import { decodeCbor, encodeCbor } from '../core/cbor.js';
import { fingerprint } from '../core/identity.js';
import { pairingCommit, shortAuthString, type PairingParty } from '../core/pairing.js';
import type { DomainItems, PeerMessage } from '../core/peer-wire.js';
import { err, ok, type Result } from '../core/result.js';
import { decodeTicket, type TicketError } from '../core/ticket.js';
import { webRandom } from './webcrypto.js';

export type JoinStart = {
  readonly topic: string;
  readonly relay: string;
  /** The relay's key from the ticket (hex), which the joiner pins. */
  readonly relayKey: string;
  readonly inviter: string;
  /** The inviter's frame key from the ticket (hex). */
  readonly inviterFrame: string;
};

export type JoinError =
  | TicketError
  | { readonly type: 'AlreadyInMesh' }
  | { readonly type: 'NoPendingJoin' }
  | { readonly type: 'NotConfirmed' }
  | { readonly type: 'CommitmentMismatch' }
  | { readonly type: 'InviterMismatch' }
  | { readonly type: 'InvitationUnknown' }
  | { readonly type: 'InvitationExpired' };

/** The ticket being joined with: whom we expect the keys from, and the invitation. */
type PendingJoin = { inviter: Uint8Array; kid: Uint8Array; fp: Uint8Array; inv: Uint8Array };

/** The ceremony in progress: our secret nonce, and the string once computed. */
type Ceremony = { nonce: Uint8Array; commit: Uint8Array; sas?: string; inviterSigner?: Uint8Array; confirmed: boolean };

const PENDING_JOIN = 'pending-join';

/** What the ceremony needs of the crypto service. */
export type JoinPort = {
  /** Whether this machine holds any domain key: a member, which joins nothing. */
  member(): boolean;
  /** This machine as a party of the ceremony (signer, endpoint, frame key). */
  party(): PairingParty;
  /** The mesh's topic once its group secret is known. */
  topic(): Uint8Array | undefined;
  /** Keeps the mesh's group secret from a ticket (wrapped) and opens its frame channel. */
  joinGroup(secret: Uint8Array): Promise<void>;
  /** Forgets the group secret of an unfinished join. */
  leaveGroup(): Promise<void>;
  storeSecret(name: string, secret: Uint8Array): Promise<void>;
  loadSecret(name: string): Promise<Uint8Array | undefined>;
  deleteSecrets(names: readonly string[]): Promise<void>;
  /** A peer message sealed to an endpoint and its frame key. */
  seal(endpoint: Uint8Array, kid: Uint8Array, message: PeerMessage): Promise<Uint8Array>;
};

export class JoinCeremony {
  readonly #port: JoinPort;
  #pending: PendingJoin | undefined;
  #ceremony: Ceremony | undefined;

  constructor(port: JoinPort) {
    this.#port = port;
  }

  /** Reads a pending ticket kept from before a reload. */
  async load(): Promise<void> {
    const raw = await this.#port.loadSecret(PENDING_JOIN);
    const decoded = raw && decodeCbor(raw, 512);
    this.#pending = decoded && decoded.ok ? (decoded.value as PendingJoin) : undefined;
  }

  /** The invitation id of the pending ticket, which the relay is shown while joining. */
  get invite(): Uint8Array | undefined {
    return this.#pending?.inv;
  }

  /** The frame key the ticket names, when `sender` is the inviter it names. */
  inviterKey(sender: Uint8Array): Uint8Array | undefined {
    const pending = this.#pending;
    return pending && bytesEqual(pending.inviter, sender) ? pending.kid : undefined;
  }

  /** Takes a pasted ticket: keeps the group secret (wrapped) and remembers whom we expect keys from. */
  async begin(text: string): Promise<Result<JoinStart, JoinError>> {
    if (this.#port.member()) return err({ type: 'AlreadyInMesh' });
    const ticket = decodeTicket(text);
    if (!ticket.ok) return ticket;
    const { secret, endpoint, kid, fp, inv, relay, rk } = ticket.value;
    const pending: PendingJoin = { inviter: endpoint, kid, fp, inv };
    await this.#port.joinGroup(secret);
    await this.#port.storeSecret(PENDING_JOIN, encodeCbor(pending));
    this.#pending = pending;
    return ok({
      topic: toHex(this.#port.topic()!),
      relay,
      relayKey: toHex(rk),
      inviter: toHex(endpoint),
      inviterFrame: toHex(kid),
    });
  }

  /** Forgets an unfinished join: the group secret and the pending ticket. Refused once keys arrived. */
  async abandon(): Promise<Result<true, { type: 'AlreadyInMesh' }>> {
    if (this.#port.member()) return err({ type: 'AlreadyInMesh' });
    await this.#port.deleteSecrets([PENDING_JOIN]);
    await this.#port.leaveGroup();
    this.#pending = undefined;
    this.#ceremony = undefined;
    return ok(true);
  }

  /**
   * The join request to send to the inviter named by the pending ticket. Sent
   * again (a lost frame, a reconnect) it carries the same commitment, so the
   * ceremony in progress continues rather than restarting.
   */
  async request(name: string): Promise<Result<{ to: string; body: Uint8Array }, JoinError>> {
    const pending = this.#pending;
    if (!pending) return err({ type: 'NoPendingJoin' });
    const party = this.#port.party();
    if (!this.#ceremony) {
      const nonce = webRandom.bytes(32);
      this.#ceremony = { nonce, commit: pairingCommit(party, nonce), confirmed: false };
    }
    const message: PeerMessage = {
      t: 'join-request',
      inv: pending.inv,
      signer: party.signer,
      endpoint: party.endpoint,
      name,
      commit: this.#ceremony.commit,
    };
    return ok({ to: toHex(pending.inviter), body: await this.#port.seal(pending.inviter, pending.kid, message) });
  }

  /**
   * Answers the inviter's challenge by revealing our nonce, and computes the short
   * authentication string our human must compare. The challenge must come from the
   * signing key the ticket's fingerprint names.
   */
  async reveal(challenge: {
    inv: Uint8Array;
    signer: Uint8Array;
    nonce: Uint8Array;
  }): Promise<Result<{ sas: string; body: Uint8Array }, JoinError>> {
    const pending = this.#pending;
    const ceremony = this.#ceremony;
    const topic = this.#port.topic();
    if (!pending || !ceremony || !topic || !bytesEqual(pending.inv, challenge.inv)) {
      return err({ type: 'NoPendingJoin' });
    }
    if (!bytesEqual(pending.fp, fingerprint(challenge.signer))) return err({ type: 'InviterMismatch' });
    const sas = shortAuthString({
      topic,
      inv: pending.inv,
      inviter: { signer: challenge.signer, endpoint: pending.inviter, frame: pending.kid },
      joiner: this.#port.party(),
      commit: ceremony.commit,
      inviterNonce: challenge.nonce,
      joinerNonce: ceremony.nonce,
    });
    // A repeated challenge (our reveal was lost) yields the same string and keeps our human's answer.
    const confirmed = ceremony.sas === sas && ceremony.confirmed;
    this.#ceremony = { ...ceremony, sas, inviterSigner: challenge.signer, confirmed };
    const reveal: PeerMessage = { t: 'join-reveal', inv: pending.inv, nonce: ceremony.nonce };
    return ok({ sas, body: await this.#port.seal(pending.inviter, pending.kid, reveal) });
  }

  /**
   * Our human confirmed the string (or declined it); the answer to send to the
   * inviter, with our MLS key packages for the domains it adds us to.
   */
  async answer(confirmed: boolean, kps: DomainItems = []): Promise<Result<Uint8Array, JoinError>> {
    const pending = this.#pending;
    const ceremony = this.#ceremony;
    if (!pending || !ceremony?.sas) return err({ type: 'NoPendingJoin' });
    this.#ceremony = { ...ceremony, confirmed };
    const message: PeerMessage = confirmed
      ? { t: 'join-confirm', inv: pending.inv, kps }
      : { t: 'join-refused', inv: pending.inv, reason: 'the joining machine declined the pairing code' };
    return ok(await this.#port.seal(pending.inviter, pending.kid, message));
  }

  /**
   * The inviter's accept: taken only from the inviter the ticket names, for its
   * invitation, after our human confirmed the string computed with this very inviter.
   * The join is then over: the pending ticket is forgotten.
   */
  async accept(
    sender: Uint8Array,
    message: Extract<PeerMessage, { t: 'join-accept' }>,
  ): Promise<Result<typeof message, JoinError>> {
    const pending = this.#pending;
    if (!pending || !bytesEqual(pending.inv, message.inv)) return err({ type: 'NoPendingJoin' });
    if (!bytesEqual(pending.inviter, sender) || !bytesEqual(pending.fp, fingerprint(message.signer))) {
      return err({ type: 'InviterMismatch' });
    }
    const ceremony = this.#ceremony;
    if (!ceremony?.confirmed || !ceremony.inviterSigner || !bytesEqual(ceremony.inviterSigner, message.signer)) {
      return err({ type: 'NotConfirmed' });
    }
    await this.#port.deleteSecrets([PENDING_JOIN]);
    this.#pending = undefined;
    this.#ceremony = undefined;
    return ok(message);
  }
}
