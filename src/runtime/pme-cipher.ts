/**
 * The Parquet Modular Encryption cipher port (core/parquet/modules.ts) on
 * WebCrypto, in browsers, workers and Node alike. Keys are imported
 * non-extractable and used only for the one file being read or written.
 */
import type { AesKey, PmeCipher } from '../core/parquet/modules.js';

const buffer = (bytes: Uint8Array): Uint8Array<ArrayBuffer> =>
  bytes.buffer instanceof ArrayBuffer ? (bytes as Uint8Array<ArrayBuffer>) : new Uint8Array(bytes);

export const webPmeCipher: PmeCipher = {
  async key(raw: Uint8Array): Promise<AesKey> {
    const [gcm, ctr] = await Promise.all([
      crypto.subtle.importKey('raw', buffer(raw), 'AES-GCM', false, ['encrypt', 'decrypt']),
      crypto.subtle.importKey('raw', buffer(raw), 'AES-CTR', false, ['decrypt']),
    ]);
    return {
      async gcmEncrypt(nonce, aad, plain) {
        const out = await crypto.subtle.encrypt(
          { name: 'AES-GCM', iv: buffer(nonce), additionalData: buffer(aad) },
          gcm,
          buffer(plain),
        );
        return new Uint8Array(out);
      },
      async gcmDecrypt(nonce, aad, sealed) {
        try {
          const out = await crypto.subtle.decrypt(
            { name: 'AES-GCM', iv: buffer(nonce), additionalData: buffer(aad) },
            gcm,
            buffer(sealed),
          );
          return new Uint8Array(out);
        } catch {
          return undefined;
        }
      },
      async ctrDecrypt(counter, ciphertext) {
        const out = await crypto.subtle.decrypt(
          { name: 'AES-CTR', counter: buffer(counter), length: 32 },
          ctr,
          buffer(ciphertext),
        );
        return new Uint8Array(out);
      },
    };
  },
};
