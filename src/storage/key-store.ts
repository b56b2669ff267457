/**
 * The machine's protected key store (IndexedDB, opened only inside the crypto
 * and MLS workers). It holds the non-extractable signing, endpoint and wrapping keys as
 * CryptoKey objects (structured-cloned by IndexedDB, never exportable), and every
 * secret that must be handed on later (group secret, domain key generations) as
 * bytes wrapped under the wrapping key.
 */
import { Dexie, type Table } from 'dexie';
import type { WrappedSecret } from '../runtime/webcrypto.js';

export type IdentityRecord = {
  readonly id: 'self';
  readonly signing: CryptoKeyPair;
  readonly signingPublic: Uint8Array;
  readonly endpoint: CryptoKeyPair;
  readonly endpointPublic: Uint8Array;
  /** X25519 frame key (runtime/frame-channel.ts); added to identities made before frames used HPKE. */
  readonly frame?: CryptoKeyPair;
  readonly framePublic?: Uint8Array;
  readonly wrapping: CryptoKey;
  readonly createdAt: number;
};

/** The key-store name of one KEK generation of a domain (written by the MLS worker, read by the crypto worker). */
export const domainSecretName = (domain: string, gen: number): string => `domain/${domain}/${gen}`;

export type SecretRecord = { readonly name: string } & WrappedSecret;

/** A frame request id this machine accepted, kept while a replay could still arrive in its time window. */
export type ReplayRecord = { readonly rid: string; readonly ts: number };

/** An invitation this machine issued and has not yet seen used. */
export type InvitationRecord = { readonly inv: string; readonly expiresAt: number };

export class KeyDatabase extends Dexie {
  identity!: Table<IdentityRecord, 'self'>;
  secrets!: Table<SecretRecord, string>;
  invitations!: Table<InvitationRecord, string>;
  replay!: Table<ReplayRecord, string>;

  constructor(name = 'sov-keys') {
    super(name);
    this.version(1).stores({ identity: 'id', secrets: 'name', invitations: 'inv' });
    this.version(2).stores({ replay: 'rid, ts' });
  }
}
