/**
 * Pairing tickets (SSP/1 "Adding a machine", seed 004 "P2P endpoint lifecycle").
 *
 *   text   = "sov1." ‖ base64url(cbor(Ticket))
 *   Ticket = {v:2, secret: 32B group secret, endpoint: 32B inviter endpoint id,
 *             kid: 32B inviter frame key (X25519, core/frame.ts), fp: 16B inviter
 *             signing-key fingerprint, relay: URL, rk: 32B the relay's Ed25519 key
 *             (pinned: the joiner refuses a relay that cannot prove it), inv: 16B invitation id}
 *
 * The ticket is a bearer secret: it must never be logged or persisted in clear
 * outside the key store. `inv` names one invitation, so the inviter can accept
 * each ticket once and refuse stale ones. (Short authentication strings and QR
 * arrive with the trust ceremonies; this is the copy/paste form.)
 */
import { fromBase64Url, isBytes, toBase64Url } from './bytes.js';
import { decodeCbor, encodeCbor, isRecord } from './cbor.js';
import { err, ok, type Result } from './result.js';

export const TICKET_PREFIX = 'sov1.';
export const MAX_TICKET_CHARS = 2048;

export type Ticket = {
  readonly v: 2;
  readonly secret: Uint8Array;
  readonly endpoint: Uint8Array;
  readonly kid: Uint8Array;
  readonly fp: Uint8Array;
  readonly relay: string;
  readonly rk: Uint8Array;
  readonly inv: Uint8Array;
};

export type TicketError = { readonly type: 'InvalidTicket'; readonly reason: string };

const invalid = (reason: string): Result<never, TicketError> => err({ type: 'InvalidTicket', reason });

export function encodeTicket(ticket: Ticket): string {
  return TICKET_PREFIX + toBase64Url(encodeCbor(ticket));
}

/** A relay's WebSocket address: ws:// or wss://, at most 512 characters. */
export function isRelayUrl(value: unknown): value is string {
  if (typeof value !== 'string' || value.length > 512) return false;
  try {
    const url = new URL(value);
    return url.protocol === 'ws:' || url.protocol === 'wss:';
  } catch {
    return false;
  }
}

export function decodeTicket(text: string): Result<Ticket, TicketError> {
  const trimmed = text.trim();
  if (trimmed.length > MAX_TICKET_CHARS) return invalid('too long');
  if (!trimmed.startsWith(TICKET_PREFIX)) return invalid('not a sov1 ticket');
  const bytes = fromBase64Url(trimmed.slice(TICKET_PREFIX.length));
  if (!bytes) return invalid('not base64url');
  const decoded = decodeCbor(bytes, MAX_TICKET_CHARS);
  if (!decoded.ok) return invalid(decoded.error.reason);
  const t = decoded.value;
  if (!isRecord(t) || Object.keys(t).length !== 8 || t['v'] !== 2) return invalid('unsupported version or fields');
  const { secret, endpoint, kid, fp, relay, rk, inv } = t;
  if (!isBytes(secret, 32) || !isBytes(endpoint, 32) || !isBytes(kid, 32) || !isBytes(fp, 16) || !isBytes(inv, 16)) {
    return invalid('field sizes');
  }
  if (!isRelayUrl(relay)) return invalid('relay must be a ws: or wss: URL');
  if (!isBytes(rk, 32)) return invalid('relay key size');
  return ok({ v: 2, secret, endpoint, kid, fp, relay, rk, inv });
}
