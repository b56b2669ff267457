/**
 * The platform side of recovery (core/recovery): HPKE for the access record a recovery root
 * carries to each kit (base mode, X25519 / HKDF-SHA256 / AES-256-GCM, @hpke/core over
 * WebCrypto), and the kit machine's keys — drawn extractable once, only to be written into
 * the sealed kit, and imported again from it as the key store keeps keys (non-extractable
 * where this engine can store a CryptoKey of that type).
 */
import { Aes256Gcm, CipherSuite, DhkemX25519HkdfSha256, HkdfSha256 } from '@hpke/core';
import type { KitMachine } from '../core/recovery/kit.js';
import type { RootAccess, RootKeys } from '../core/recovery/checkpoint.js';
import type { IdentityMaker } from '../storage/key-store.js';
import { retryingKeyGeneration } from '../storage/key-wrap.js';

const suite = new CipherSuite({ kem: new DhkemX25519HkdfSha256(), kdf: new HkdfSha256(), aead: new Aes256Gcm() });

const buffer = (bytes: Uint8Array): ArrayBuffer =>
  bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;

/** Root access records sealed to kits' frame keys; opened with `frame`, this machine's frame key, if given. */
export function hpkeRootKeys(frame?: { readonly keys: CryptoKeyPair; readonly publicKey: Uint8Array }): RootKeys {
  return {
    async seal(recipient, secret, info, aad): Promise<RootAccess> {
      const recipientPublicKey = await suite.kem.deserializePublicKey(buffer(recipient));
      const sealed = await retryingKeyGeneration(() =>
        suite.seal({ recipientPublicKey, info: buffer(info) }, buffer(secret), buffer(aad)),
      );
      return { kid: recipient, enc: new Uint8Array(sealed.enc), ct: new Uint8Array(sealed.ct) };
    },
    async open(access, info, aad) {
      if (!frame) return undefined;
      try {
        const pt = await suite.open(
          { recipientKey: frame.keys, enc: buffer(access.enc), info: buffer(info) },
          buffer(access.ct),
          buffer(aad),
        );
        return new Uint8Array(pt);
      } catch {
        return undefined;
      }
    },
  };
}

const raw = async (key: CryptoKey) => new Uint8Array(await crypto.subtle.exportKey('raw', key));
const pkcs8 = async (key: CryptoKey) => new Uint8Array(await crypto.subtle.exportKey('pkcs8', key));

/** Draws the keys of a new recovery kit's machine, exported for the kit (and nowhere else). */
export async function drawKitMachine(): Promise<KitMachine> {
  const ed = () =>
    retryingKeyGeneration(() => crypto.subtle.generateKey({ name: 'Ed25519' }, true, ['sign', 'verify']));
  const x = () => retryingKeyGeneration(() => crypto.subtle.generateKey({ name: 'X25519' }, true, ['deriveBits']));
  const [signing, endpoint, frame] = [await ed(), await ed(), (await x()) as CryptoKeyPair];
  return {
    signing: await pkcs8(signing.privateKey),
    signingPub: await raw(signing.publicKey),
    endpoint: await pkcs8(endpoint.privateKey),
    endpointPub: await raw(endpoint.publicKey),
    frame: await pkcs8(frame.privateKey),
    framePub: await raw(frame.publicKey),
  };
}

/**
 * The identity maker (storage/key-store.ts) of a machine restored from a kit: its keys are
 * the kit's, imported extractable only where the key store wraps that type to keep it.
 */
export function kitIdentity(machine: KitMachine): IdentityMaker {
  return async (keeping) => {
    const pair = async (priv: Uint8Array, pub: Uint8Array, algorithm: 'Ed25519' | 'X25519'): Promise<CryptoKeyPair> => {
      const extractable = keeping[algorithm] === 'wrapped';
      const [privUse, pubUse]: [KeyUsage[], KeyUsage[]] =
        algorithm === 'Ed25519' ? [['sign'], ['verify']] : [['deriveBits'], []];
      return {
        privateKey: await crypto.subtle.importKey('pkcs8', buffer(priv), { name: algorithm }, extractable, privUse),
        publicKey: await crypto.subtle.importKey('raw', buffer(pub), { name: algorithm }, true, pubUse),
      };
    };
    return {
      signing: await pair(machine.signing, machine.signingPub, 'Ed25519'),
      endpoint: await pair(machine.endpoint, machine.endpointPub, 'Ed25519'),
      frame: await pair(machine.frame, machine.framePub, 'X25519'),
    };
  };
}
