/**
 * MlsProvider: the narrow, bytes-in/bytes-out interface the mesh needs from an
 * MLS (RFC 9420) implementation, so the library behind it can be replaced.
 *
 * The user named `openmls-wasm`; the registry's 0.1.0 is a demo without remove
 * or serialisation and cannot be rebuilt here (../shared/notes/mls.md), so the
 * product runs `TsMlsProvider` (runtime/mls/ts-mls-provider.ts). A complete
 * openmls build slots in by implementing this interface; the acceptance suite
 * (test/helpers/mls-provider-suite.ts) runs against every provider.
 *
 * Every value is bytes: key packages, Welcomes, commits and application
 * messages are MLSMessage encodings (RFC 9420 §6); group state and private key
 * packages are the provider's own opaque encodings, which callers keep only
 * encrypted at rest (they hold the leaf's private keys). States are values:
 * `commit` returns the *staged* next state beside the current one, and a caller
 * adopts it only once the blind sequencer accepted the commit (DESIGN §6).
 *
 * An identity is the MLS basic credential's bytes: for the mesh, a leaf binding
 * (core/mls/leaf-binding.ts) that ties the leaf's MLS signature key to a
 * machine's signing key; `authenticate` decides whether an identity may be a
 * member (the keyring's verdict), and every provider must ask it for every
 * leaf it accepts — in Welcomes, commits and external joins.
 */
import type { Result } from '../result.js';

export type MlsFailure = { readonly type: 'MlsRejected'; readonly reason: string };

export type KeyPackagePair = {
  /** The public key package, an MLSMessage (wire format key_package). */
  readonly publicPackage: Uint8Array;
  /** Its private keys, in the provider's encoding: keep it encrypted at rest, use it once. */
  readonly privatePackage: Uint8Array;
};

export type StagedCommit = {
  /** The state to adopt once the sequencer accepts `commit`. */
  readonly state: Uint8Array;
  readonly commit: Uint8Array;
  readonly welcome: Uint8Array | undefined;
};

export type Processed =
  | { readonly kind: 'commit'; readonly state: Uint8Array; readonly epoch: bigint }
  /** A proposal by reference, kept in the state until a commit of the epoch applies it (the mesh sends none). */
  | { readonly kind: 'proposal'; readonly state: Uint8Array }
  /**
   * An application message. Its MLS sender is authenticated by MLS but not
   * reported: what the mesh sends this way is signed by a machine key inside
   * (core/mls/kek.ts), which says who it came from.
   */
  | { readonly kind: 'application'; readonly state: Uint8Array; readonly message: Uint8Array };

export type GroupSummary = {
  readonly groupId: Uint8Array;
  readonly epoch: bigint;
  /** Member identities, in leaf order. */
  readonly members: readonly Uint8Array[];
  /** This machine's own identity in the group. */
  readonly self: Uint8Array;
  /** RFC 9420 §8.7: the epoch's authenticator, equal on every member that agrees on the epoch. */
  readonly epochAuthenticator: Uint8Array;
};

/** An external pre-shared key (RFC 9420 §8.4) a commit or Welcome may name. */
export type ExternalPsk = { readonly id: Uint8Array; readonly secret: Uint8Array };

/** What a joiner may need besides its key package: the tree when the Welcome omits it, external PSKs. */
export type JoinOptions = { readonly ratchetTree?: Uint8Array; readonly psks?: readonly ExternalPsk[] };

/** A key package's private keys made elsewhere (the interop vectors): init, HPKE leaf and signature keys. */
export type PrivateKeys = {
  readonly init: Uint8Array;
  readonly encryption: Uint8Array;
  readonly signature: Uint8Array;
};

export type SignatureKeyPair = { readonly publicKey: Uint8Array; readonly secretKey: Uint8Array };

export interface MlsProvider {
  readonly name: string;
  /** A fresh leaf signature key (the identity binds its public half to the machine first). */
  signatureKey(): Promise<SignatureKeyPair>;
  keyPackage(identity: Uint8Array, signatureKey: SignatureKeyPair): Promise<KeyPackagePair>;
  /** A key package pair from a public key package and its private keys, made elsewhere. */
  importKeyPackage(publicPackage: Uint8Array, keys: PrivateKeys): Result<KeyPackagePair, MlsFailure>;
  createGroup(groupId: Uint8Array, own: KeyPackagePair): Promise<Result<Uint8Array, MlsFailure>>;
  /** Adds the members of these key packages and removes these identities, in one commit. */
  commit(
    state: Uint8Array,
    change: {
      readonly add: readonly Uint8Array[];
      readonly remove: readonly Uint8Array[];
      readonly authenticatedData: Uint8Array;
    },
  ): Promise<Result<StagedCommit, MlsFailure>>;
  join(welcome: Uint8Array, own: KeyPackagePair, options?: JoinOptions): Promise<Result<Uint8Array, MlsFailure>>;
  /** Processes a commit, a proposal or an application message of the group. */
  process(
    state: Uint8Array,
    message: Uint8Array,
    options?: { readonly psks?: readonly ExternalPsk[] },
  ): Promise<Result<Processed, MlsFailure>>;
  /** Seals an application message in the state's epoch; returns the advanced state. */
  encrypt(
    state: Uint8Array,
    message: Uint8Array,
  ): Promise<Result<{ readonly state: Uint8Array; readonly message: Uint8Array }, MlsFailure>>;
  summary(state: Uint8Array): Result<GroupSummary, MlsFailure>;
  /** A GroupInfo with the external public key and the tree, for a member that must rejoin. */
  groupInfo(state: Uint8Array): Promise<Result<Uint8Array, MlsFailure>>;
  /** Rejoins (resync) by external commit from a GroupInfo: the commit goes to the sequencer. */
  rejoin(
    groupInfo: Uint8Array,
    own: KeyPackagePair,
    authenticatedData: Uint8Array,
  ): Promise<Result<StagedCommit, MlsFailure>>;
}

/** Who may hold a leaf: the keyring's answer for an identity and its MLS signature key. */
export type Authenticate = (identity: Uint8Array, signaturePublicKey: Uint8Array) => Promise<boolean>;
