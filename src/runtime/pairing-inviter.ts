/**
 * The inviting side of pairing (SSP/1 "Adding a machine"; DESIGN §3), in the tab that holds
 * the relay session. One ceremony per invitation:
 *
 *   joiner → us   join-request {inv, signer, endpoint, name, commit}
 *   us → joiner   join-challenge {nonce Ni}            (only after the commitment arrived)
 *   joiner → us   join-reveal {nonce Nj}               (must open the commitment, else refused)
 *   both humans compare the six digits; each confirms or declines
 *   joiner → us   join-confirm {its MLS key packages}
 *   us            admission list naming the joiner → MLS add (sequenced) → keyring record
 *   us → joiner   join-accept {our signer, anchors, classes, Welcomes}
 *
 * Default deny: a decline on either side, a commitment that does not open, or a ceremony left
 * unconfirmed for the request window admits nothing and closes the invitation. A closed
 * invitation stays on the relay's admission list for the request window, so the refusal
 * reaches a joiner the relay would otherwise no longer serve. Repeats (lost frames) are
 * answered idempotently: the same challenge, the same accept.
 *
 * Everything it needs of the machine comes through `InviterPort`; mesh-node.ts wires it.
 */
import { bytesEqual, fromHex, toHex } from '../core/bytes.js';
import { MAX_REQUEST_AGE_MS } from '../core/frame.js';
import { shortFingerprint } from '../core/identity.js';
import { invitationRefusal, type InvitationState } from '../core/pairing.js';
import type { DomainItems, PeerMessage } from '../core/peer-wire.js';
import type { Result } from '../core/result.js';
import type { PrivacyClass } from '../core/sync-manifest.js';
import type { InboundMessage, JoinError, PeerAddress } from './crypto-service.js';

export type JoinRequest = Extract<InboundMessage, { t: 'join-request' }>;
type JoinReveal = Extract<InboundMessage, { t: 'join-reveal' }>;
type JoinConfirm = Extract<InboundMessage, { t: 'join-confirm' }>;

/** A pairing request waiting at this (inviting) machine, as the UI shows it. */
export type PairingView = {
  readonly inv: string;
  readonly name: string;
  readonly fingerprint: string;
  /** The short authentication string, once the joiner revealed its nonce. */
  readonly sas: string | undefined;
  readonly confirmed: boolean;
  readonly joinerConfirmed: boolean;
  /** Names of the live machines that vouched for this joiner's fingerprint. */
  readonly vouchedBy: readonly string[];
};

/** What the inviting side needs of the machine; every call may answer at once or later. */
export type InviterPort = {
  readonly crypto: {
    sealMessage(to: PeerAddress, message: PeerMessage): Promise<Uint8Array>;
    invitationState(inv: Uint8Array): Promise<InvitationState>;
    closeInvitation(inv: Uint8Array, reason: string): Promise<void>;
    pairingCode(p: {
      inv: Uint8Array;
      joiner: { signer: Uint8Array; endpoint: Uint8Array; frame: Uint8Array };
      commit: Uint8Array;
      inviterNonce: Uint8Array;
      joinerNonce: Uint8Array;
    }): Promise<string | undefined> | string | undefined;
    admitJoin(
      request: { inv: Uint8Array; endpoint: Uint8Array; frame: string },
      anchors: readonly Uint8Array[],
      classes: readonly (readonly [string, PrivacyClass])[],
      welcomes: DomainItems,
    ): Promise<Result<Uint8Array, JoinError>>;
  };
  /** Our signing key (hex). */
  self(): string;
  isAdmin(): boolean;
  /** The signers this machine trusts as admins without a control record. */
  anchors(): readonly string[];
  /** The mesh's privacy classes, sent to the joiner to follow until the signed records arrive. */
  classes(): Promise<readonly (readonly [string, PrivacyClass])[]>;
  /** Fingerprint → signers that vouched for it; and how many vouches admit. */
  vouchers(): Promise<ReadonlyMap<string, readonly string[]>>;
  vouchThreshold(): Promise<number>;
  /** Signer → name of the machines of the keyring. */
  names(): ReadonlyMap<string, string>;
  sendTo(endpoint: string, body: Uint8Array): void;
  /** Pushes the admission list in force, naming also `joining`. */
  pushAdmission(joining?: string): Promise<void>;
  /** Lets our MLS worker admit leaves of these signers (besides the keyring's). */
  syncKeyring(extra: readonly string[]): Promise<void>;
  /** Adds the joiner to every built-in domain's MLS group: the Welcomes. */
  addJoiner(kps: DomainItems): Promise<Result<DomainItems, { readonly type: string; readonly text: string }>>;
  /** Writes the joiner's keyring record. */
  recordMachine(
    signer: string,
    cols: { endpoint: string; frame: string; name: string },
  ): Promise<Result<unknown, { type: string }>>;
  /** The machine joined: peers, other tabs and delivery learn of it. */
  joined(): Promise<void>;
  notice(kind: 'info' | 'warning', text: string): void;
  count(type: string): void;
  changed(): Promise<void>;
  now(): number;
  random(bytes: number): Uint8Array;
};

/** Inviter-side state of one ceremony (in the tab holding the relay session; a reload restarts it). */
type Pairing = {
  readonly joiner: PeerAddress;
  readonly request: JoinRequest;
  /** The joiner's MLS key packages, from its confirmation. */
  kps?: DomainItems;
  /** Our nonce Ni, sent only after the joiner's commitment arrived. */
  readonly nonce: Uint8Array;
  readonly startedAt: number;
  sas?: string;
  confirmed: boolean;
  joinerConfirmed: boolean;
};

export const DECLINED_HERE = 'the inviting machine declined the pairing code';

export class InviterCeremony {
  readonly #port: InviterPort;
  readonly #pairings = new Map<string, Pairing>();
  /** Join-accepts sent in the request window, re-sent if the joiner's confirmation arrives again (a lost accept). */
  readonly #accepted = new Map<string, { to: string; body: Uint8Array; at: number }>();
  /** Join refusals already shown (`inv:reason`), so a joiner's repeats do not repeat the notice. */
  readonly #refusals = new Set<string>();

  constructor(port: InviterPort) {
    this.#port = port;
  }

  /** Step 1: a join request with its commitment arrived; answer with our nonce. */
  async request(joiner: PeerAddress, request: JoinRequest): Promise<void> {
    const port = this.#port;
    if (toHex(request.endpoint) !== joiner.endpoint) {
      return this.#refuse(joiner, request.inv, 'endpoint does not match the sender');
    }
    if (!port.isAdmin()) return this.#refuse(joiner, request.inv, 'this machine is not an admin');
    const invitation = await port.crypto.invitationState(request.inv);
    if (invitation.state !== 'open') return this.#refuse(joiner, request.inv, invitationRefusal(invitation));
    const inv = toHex(request.inv);
    const known = this.#pairingFrom(joiner, request.inv);
    if (known && !bytesEqual(known.request.commit, request.commit)) return port.count('UnexpectedPairingMessage');
    // A repeated request (our challenge was lost) gets the same challenge again.
    const nonce = known?.nonce ?? port.random(32);
    if (!known) {
      this.#pairings.set(inv, {
        joiner,
        request,
        nonce,
        startedAt: port.now(),
        confirmed: false,
        joinerConfirmed: false,
      });
    }
    const signer = fromHex(port.self())!;
    port.sendTo(
      joiner.endpoint,
      await port.crypto.sealMessage(joiner, { t: 'join-challenge', inv: request.inv, signer, nonce }),
    );
  }

  /** Step 3: the joiner's nonce must open its commitment; then both humans compare the string. */
  async revealed(from: PeerAddress, reveal: JoinReveal): Promise<void> {
    const port = this.#port;
    const inv = toHex(reveal.inv);
    const pairing = this.#pairingFrom(from, reveal.inv);
    if (!pairing || pairing.sas) return port.count('UnexpectedPairingMessage');
    const { request } = pairing;
    const sas = await port.crypto.pairingCode({
      inv: request.inv,
      joiner: { signer: request.signer, endpoint: request.endpoint, frame: fromHex(from.frame)! },
      commit: request.commit,
      inviterNonce: pairing.nonce,
      joinerNonce: reveal.nonce,
    });
    if (!sas) return this.#end(inv, pairing, 'CommitmentMismatch');
    pairing.sas = sas;
    port.notice('info', `${request.name || 'a machine'} asks to join: compare the pairing code`);
  }

  /** The joining human confirmed; a repeat after we admitted gets the same accept again. */
  async joinerConfirmed(from: PeerAddress, message: JoinConfirm): Promise<void> {
    const sent = this.#accepted.get(toHex(message.inv));
    if (sent?.to === from.endpoint) return this.#port.sendTo(from.endpoint, sent.body);
    const pairing = this.#pairingFrom(from, message.inv);
    if (!pairing?.sas) return this.#port.count('UnexpectedPairingMessage');
    pairing.joinerConfirmed = true;
    pairing.kps = message.kps;
    return this.#complete(toHex(message.inv), pairing);
  }

  /** The joining human declined; false if no ceremony of ours matches. */
  async joinerDeclined(from: PeerAddress, inv: Uint8Array, reason: string): Promise<boolean> {
    const pairing = this.#pairingFrom(from, inv);
    if (!pairing) return false;
    await this.#end(toHex(inv), pairing, undefined, reason);
    return true;
  }

  /**
   * Our human compared the string and confirmed (or declined); or, `by: 'vouches'`, admits a
   * machine enough members vouched for in person. Admitted once both sides confirmed.
   */
  async answer(inv: string, confirmed: boolean, by: 'code' | 'vouches' = 'code'): Promise<void> {
    const pairing = this.#pairings.get(inv);
    if (!pairing?.sas) return;
    if (!confirmed) return this.#end(inv, pairing, DECLINED_HERE);
    if (by === 'vouches') {
      const vouched = (await this.#port.vouchers()).get(shortFingerprint(pairing.request.signer)) ?? [];
      if (vouched.length < (await this.#port.vouchThreshold())) {
        throw new Error('mesh: not enough vouches for this machine');
      }
    }
    pairing.confirmed = true;
    await this.#complete(inv, pairing);
    await this.#port.changed();
  }

  /** Open ceremonies; one left unconfirmed for the request window is dropped (default deny). */
  views(vouchers: ReadonlyMap<string, readonly string[]>): PairingView[] {
    const names = this.#port.names();
    const now = this.#port.now();
    for (const [inv, p] of this.#pairings) if (now - p.startedAt > MAX_REQUEST_AGE_MS) this.#pairings.delete(inv);
    return [...this.#pairings].map(([inv, p]) => ({
      inv,
      name: p.request.name || 'machine',
      fingerprint: shortFingerprint(p.request.signer),
      sas: p.sas,
      confirmed: p.confirmed,
      joinerConfirmed: p.joinerConfirmed,
      vouchedBy: (vouchers.get(shortFingerprint(p.request.signer)) ?? []).map((s) => names.get(s) ?? s.slice(0, 8)),
    }));
  }

  /** The ceremony this frame belongs to: same invitation, same sender endpoint and frame key. */
  #pairingFrom(from: PeerAddress, inv: Uint8Array): Pairing | undefined {
    const pairing = this.#pairings.get(toHex(inv));
    if (!pairing || pairing.joiner.endpoint !== from.endpoint || pairing.joiner.frame !== from.frame) return undefined;
    return pairing;
  }

  /**
   * Tells a joiner why its ceremony ended. The relay still serves it: its invitation stays on
   * the admission list, closed, for the request window (crypto-service `closeInvitation`).
   */
  #refuse(joiner: PeerAddress, inv: Uint8Array, reason: string): void {
    // A joiner repeats its request until an answer arrives: one notice per ticket and reason.
    const key = `${toHex(inv)}:${reason}`;
    if (!this.#refusals.has(key)) this.#port.notice('warning', `refused a join request: ${reason}`);
    this.#refusals.add(key);
    void this.#port.crypto
      .sealMessage(joiner, { t: 'join-refused', inv, reason })
      .then((b) => this.#port.sendTo(joiner.endpoint, b));
  }

  /** Ends a ceremony without admitting: tells the joiner why (when we refuse) and closes the invitation. */
  async #end(inv: string, pairing: Pairing, refusal?: string, theirReason?: string): Promise<void> {
    const port = this.#port;
    this.#pairings.delete(inv);
    await port.crypto.closeInvitation(pairing.request.inv, refusal ?? 'declined by the joining machine');
    if (refusal) this.#refuse(pairing.joiner, pairing.request.inv, refusal);
    else port.notice('warning', `${pairing.request.name || 'the joining machine'} declined: ${theirReason ?? ''}`);
    await port.pushAdmission();
    await port.changed();
  }

  /** Both humans confirmed the same string: admit the machine. */
  async #complete(inv: string, pairing: Pairing): Promise<void> {
    if (!pairing.confirmed || !pairing.joinerConfirmed) return;
    this.#pairings.delete(inv);
    await this.#admit(pairing.joiner, pairing.request, pairing.kps ?? []);
  }

  async #admit(joiner: PeerAddress, request: JoinRequest, kps: DomainItems): Promise<void> {
    const port = this.#port;
    const from = joiner.endpoint;
    const refuse = (reason: string): void => this.#refuse(joiner, request.inv, reason);
    if (!port.isAdmin()) return refuse('this machine is not an admin');
    const invitation = await port.crypto.invitationState(request.inv);
    if (invitation.state !== 'open') return refuse(invitationRefusal(invitation));
    const anchors = port.anchors().map((a) => fromHex(a)!);
    const classes = await port.classes();
    // The relay serves the joiner as a member before its MLS add reaches the sequencer (both go
    // over our session, in order); if the admission fails below, the next list leaves it out.
    await port.pushAdmission(from);
    const retract = async (reason: string): Promise<void> => {
      refuse(reason);
      await port.pushAdmission();
    };
    // The joiner enters each built-in domain's MLS group before the keyring names it, so
    // our MLS worker must admit its leaf now; other members admit it once the record arrives.
    await port.syncKeyring([toHex(request.signer)]);
    const welcomes = await port.addJoiner(kps);
    if (!welcomes.ok) return retract(`${welcomes.error.type}: ${welcomes.error.text}`);
    const accept = await port.crypto.admitJoin(
      { inv: request.inv, endpoint: request.endpoint, frame: joiner.frame },
      anchors,
      classes,
      welcomes.value,
    );
    if (!accept.ok) return retract(accept.error.type);
    const name = request.name || 'machine';
    const added = await port.recordMachine(toHex(request.signer), { endpoint: from, frame: joiner.frame, name });
    if (!added.ok) return retract(added.error.type);
    // The relay serves the joiner as a member (and its used invitation closed) before the keys go out.
    await port.pushAdmission();
    port.sendTo(from, accept.value);
    const now = port.now();
    this.#accepted.set(toHex(request.inv), { to: from, body: accept.value, at: now });
    for (const [inv, sent] of this.#accepted) if (now - sent.at > MAX_REQUEST_AGE_MS) this.#accepted.delete(inv);
    port.notice('info', `${name} joined the mesh`);
    await port.joined();
  }
}
