/**
 * Opening sealed envelopes before admission (SSP/1): decode the envelope and
 * check its outer id, decrypt it with the domain key of its generation, decode
 * the signed event inside and check that it names the envelope's domain and lane.
 * Signatures are checked afterwards over the whole batch (chain-verify.ts), so
 * a hash-chained run of one signer costs one signature check.
 *
 * An envelope of a domain this machine holds no key for is `opaque`: kept and
 * forwarded, never read (storage is not reading).
 *
 * Every result is plain data (objects, strings, numbers, byte arrays), so an
 * `EnvelopeOpener` may open a batch in worker threads and post the results back.
 */
import { decodeEvent, eventIdOf, type EventError, type SignedEvent } from './event.js';
import type { EnvelopeNames } from './opened.js';
import { err, type Result } from './result.js';
import type { DomainName } from './schema.js';
import { decodeSealed, envelopeId, undecodableId, type SealedEvent, type SealError } from './seal.js';

export type DomainMismatch = {
  readonly type: 'DomainMismatch';
  readonly envelope: DomainName;
  readonly event: DomainName;
};

/** The envelope's lane label disagrees with the lane its signer wrote into the event. */
export type LaneMismatch = {
  readonly type: 'LaneMismatch';
  readonly envelope: string;
  readonly event: string;
};

/** The event names another key generation than the envelope it came in (chains.ts). */
export type GenerationMismatch = {
  readonly type: 'GenerationMismatch';
  readonly envelope: number;
  readonly event: number;
};

export type OpenError = SealError | EventError | DomainMismatch | LaneMismatch | GenerationMismatch;

export type Opening =
  | {
      readonly kind: 'event';
      readonly sealed: SealedEvent;
      readonly bytes: Uint8Array;
      readonly event: SignedEvent;
      readonly names: EnvelopeNames;
    }
  | { readonly kind: 'opaque'; readonly sealed: SealedEvent; readonly bytes: Uint8Array }
  | { readonly kind: 'rejected'; readonly outerId: string; readonly error: OpenError };

/** Opens a batch of envelopes, results in input order; implementations may spread the work over threads. */
export interface EnvelopeOpener {
  open(envelopes: readonly Uint8Array[]): Promise<Opening[]>;
}

type Decrypt<R> = (sealed: SealedEvent) => R;

function decoded(bytes: Uint8Array): Result<SealedEvent, Opening> {
  const sealed = decodeSealed(bytes);
  if (sealed.ok) return sealed;
  return err({ kind: 'rejected', outerId: undecodableId(bytes), error: sealed.error });
}

function opened(bytes: Uint8Array, sealed: SealedEvent, plain: Result<Uint8Array, SealError>): Opening {
  if (!plain.ok) {
    if (plain.error.type === 'DomainKeyMissing') return { kind: 'opaque', sealed, bytes };
    return { kind: 'rejected', outerId: envelopeId(sealed), error: plain.error };
  }
  const event = decodeEvent(plain.value);
  if (!event.ok) return { kind: 'rejected', outerId: envelopeId(sealed), error: event.error };
  if (event.value.body.domain !== sealed.domain) {
    return {
      kind: 'rejected',
      outerId: envelopeId(sealed),
      error: { type: 'DomainMismatch', envelope: sealed.domain, event: event.value.body.domain },
    };
  }
  const lane = event.value.body.lane ?? 'public';
  if (lane !== (sealed.lane ?? 'public')) {
    return {
      kind: 'rejected',
      outerId: envelopeId(sealed),
      error: { type: 'LaneMismatch', envelope: sealed.lane ?? 'public', event: lane },
    };
  }
  const gen = event.value.body.gen;
  if (gen !== undefined && gen !== sealed.gen) {
    return {
      kind: 'rejected',
      outerId: envelopeId(sealed),
      error: { type: 'GenerationMismatch', envelope: sealed.gen, event: gen },
    };
  }
  const names = { outerId: envelopeId(sealed), eventId: eventIdOf(event.value) };
  return { kind: 'event', sealed, bytes, event: event.value, names };
}

/** Opens one envelope through the (possibly asynchronous) envelope port. */
export async function openEnvelope(
  bytes: Uint8Array,
  decrypt: Decrypt<Promise<Result<Uint8Array, SealError>>>,
): Promise<Opening> {
  const sealed = decoded(bytes);
  if (!sealed.ok) return sealed.error;
  return opened(bytes, sealed.value, await decrypt(sealed.value));
}

/** Opens one envelope with a synchronous decryption (a worker holding the domain keys). */
export function openEnvelopeSync(bytes: Uint8Array, decrypt: Decrypt<Result<Uint8Array, SealError>>): Opening {
  const sealed = decoded(bytes);
  if (!sealed.ok) return sealed.error;
  return opened(bytes, sealed.value, decrypt(sealed.value));
}
