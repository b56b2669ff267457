/**
 * Leaf bindings: the MLS credential identity of a mesh machine's leaf, tying
 * the leaf's MLS signature key (raw bytes, because MLS libraries sign with raw
 * keys, kept only inside encrypted group state) to the machine's own signing
 * key (a non-extractable WebCrypto key, which never leaves the crypto worker).
 *
 *   identity = cbor({v: 1, machine: 32B, leaf: 32B, sig: 64B})
 *   sig      = Ed25519(machine key, "sov/1/mls-leaf" ‖ leaf)
 *
 * A provider's authentication callback accepts a leaf only when the binding's
 * `leaf` is the signature key MLS reports, the signature verifies, and the
 * machine is a current (not removed) member of the keyring.
 */
import { ed25519 } from '@noble/curves/ed25519.js';
import { bytesEqual, concat, isBytes, utf8 } from '../bytes.js';
import { decodeCbor, encodeCbor, isRecord } from '../cbor.js';
import type { Signer } from '../ports.js';

const LABEL = utf8('sov/1/mls-leaf');

export type LeafBinding = { readonly machine: Uint8Array; readonly leaf: Uint8Array };

export async function bindLeaf(machine: Signer, leafPublicKey: Uint8Array): Promise<Uint8Array> {
  const sig = await machine.sign(concat(LABEL, leafPublicKey));
  return encodeCbor({ v: 1, machine: machine.publicKey, leaf: leafPublicKey, sig });
}

/** The binding an identity carries, if it is well-formed and its signature verifies. */
export function readLeafBinding(identity: Uint8Array): LeafBinding | undefined {
  const decoded = decodeCbor(identity, 256);
  if (!decoded.ok || !isRecord(decoded.value)) return undefined;
  const { v, machine, leaf, sig } = decoded.value;
  if (Object.keys(decoded.value).length !== 4 || v !== 1) return undefined;
  if (!isBytes(machine, 32) || !isBytes(leaf, 32) || !isBytes(sig, 64)) return undefined;
  try {
    if (!ed25519.verify(sig, concat(LABEL, leaf), machine, { zip215: false })) return undefined;
  } catch {
    return undefined;
  }
  return { machine, leaf };
}

/** An authentication callback for providers: binding valid, key as MLS reports it, machine admitted. */
export function leafAuthenticator(isMachineAdmitted: (machine: Uint8Array) => Promise<boolean>) {
  return async (identity: Uint8Array, signaturePublicKey: Uint8Array): Promise<boolean> => {
    const binding = readLeafBinding(identity);
    if (!binding || !bytesEqual(binding.leaf, signaturePublicKey)) return false;
    return isMachineAdmitted(binding.machine);
  };
}
