/**
 * The short authentication string of pairing (SSP/1 "Adding a machine";
 * DESIGN §3): a commit-then-reveal exchange so that neither side — nor anyone
 * between them — can choose the string both humans compare.
 *
 *   J → I  commit = BLAKE3("sov/1/pair-commit" ‖ J.signer ‖ J.endpoint ‖ J.frame ‖ Nj)
 *   I → J  Ni                      (I's nonce, sent only after the commitment arrived)
 *   J → I  Nj                      (I recomputes the commitment; a mismatch ends the pairing)
 *   SAS    = 6 decimal digits of HKDF-SHA-256(BLAKE3(transcript), info "sov/1/sas", 6 bytes)
 *            transcript = label ‖ topic ‖ inv ‖ I's signer, endpoint, frame key ‖
 *                         J's signer, endpoint, frame key ‖ commit ‖ Ni ‖ Nj
 *
 * A man in the middle who substitutes its own keys on one side must fix its
 * commitment before it learns Ni, so it gets one guess at matching the other
 * side's string: a 1-in-10^6 chance per attempt, and every attempt shows a
 * pairing request a human has to confirm. 48 bits reduced mod 10^6 have a
 * bias below 2^-28 — irrelevant next to that.
 */
import { bytesEqual, concat, utf8 } from './bytes.js';
import { blake3, deriveKey } from './hash.js';

export const SAS_DIGITS = 6;

export type PairingParty = { readonly signer: Uint8Array; readonly endpoint: Uint8Array; readonly frame: Uint8Array };

export type PairingTranscript = {
  readonly topic: Uint8Array;
  readonly inv: Uint8Array;
  readonly inviter: PairingParty;
  readonly joiner: PairingParty;
  readonly commit: Uint8Array;
  readonly inviterNonce: Uint8Array;
  readonly joinerNonce: Uint8Array;
};

const partyBytes = (p: PairingParty): Uint8Array => concat(p.signer, p.endpoint, p.frame);

export function pairingCommit(joiner: PairingParty, joinerNonce: Uint8Array): Uint8Array {
  return blake3(concat(utf8('sov/1/pair-commit'), partyBytes(joiner), joinerNonce));
}

/** Whether a revealed nonce opens the commitment the joiner sent first. */
export function commitOpens(commit: Uint8Array, joiner: PairingParty, joinerNonce: Uint8Array): boolean {
  return bytesEqual(commit, pairingCommit(joiner, joinerNonce));
}

/** The string both humans compare, e.g. "042 917". */
export function shortAuthString(t: PairingTranscript): string {
  const transcript = concat(
    utf8('sov/1/sas-transcript'),
    t.topic,
    t.inv,
    partyBytes(t.inviter),
    partyBytes(t.joiner),
    t.commit,
    t.inviterNonce,
    t.joinerNonce,
  );
  const bytes = deriveKey(blake3(transcript), 'sov/1/sas', 6);
  let value = 0;
  for (const b of bytes) value = value * 256 + b;
  const digits = String(value % 10 ** SAS_DIGITS).padStart(SAS_DIGITS, '0');
  return `${digits.slice(0, 3)} ${digits.slice(3)}`;
}

/** Where an invitation of ours stands: a joiner presenting a closed or expired one is told which. */
export type InvitationState =
  | { readonly state: 'open' }
  | { readonly state: 'closed'; readonly reason: string }
  | { readonly state: 'expired' }
  | { readonly state: 'unknown' };

/** The reason kept on an invitation a machine joined with. */
export const INVITATION_USED = 'this ticket was already used to join';

/** What a joiner is told when its invitation no longer admits anyone. */
export function invitationRefusal(invitation: Exclude<InvitationState, { state: 'open' }>): string {
  switch (invitation.state) {
    case 'closed':
      return invitation.reason;
    case 'expired':
      return 'this ticket has expired';
    case 'unknown':
      return 'the inviting machine does not know this ticket';
  }
}
