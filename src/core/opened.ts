/**
 * An envelope this machine opened (decrypted, decoded, signature checked) on
 * its way to admission, with the names it is stored and deduplicated by.
 */
import { eventIdOf, type SignedEvent } from './event.js';
import { envelopeId, type SealedEvent } from './seal.js';

/** The names a replica keeps an opened envelope under (`envelopeId`, `eventIdOf`). */
export type EnvelopeNames = { readonly outerId: string; readonly eventId: string };

export type OpenedEnvelope = {
  readonly sealed: SealedEvent;
  readonly bytes: Uint8Array;
  readonly event: SignedEvent;
  /** Its names, when the opener built them already (they are asked for several times per admission). */
  readonly names?: EnvelopeNames;
};

export function namesOf(opened: OpenedEnvelope): EnvelopeNames {
  return opened.names ?? { outerId: envelopeId(opened.sealed), eventId: eventIdOf(opened.event) };
}
