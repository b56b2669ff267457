/**
 * The core's only windows onto the platform (STYLE §1): time, randomness and the
 * private-key operations, injected so that tests pin them and workers supply
 * WebCrypto-backed, non-extractable implementations.
 */

export interface Clock {
  /** Wall-clock milliseconds since the Unix epoch. */
  now(): number;
}

export interface Random {
  bytes(length: number): Uint8Array;
}

/** Signs with a key the caller never sees (a non-extractable WebCrypto key in browsers). */
export interface Signer {
  readonly publicKey: Uint8Array;
  sign(message: Uint8Array): Promise<Uint8Array>;
}

export interface Verifier {
  verify(publicKey: Uint8Array, message: Uint8Array, signature: Uint8Array): Promise<boolean>;
}
