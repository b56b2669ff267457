/**
 * Length padding before encryption, so ciphertext sizes say little about what is inside.
 *
 * Sizes: Padmé (Nikitin et al., "Reducing Metadata Leakage from Encrypted Files and
 * Communication with PURBs", PETS 2019, §4). A length L is rounded up by clearing its low
 * bits, keeping only the top ⌊log2 ⌊log2 L⌋⌋ + 1 bits of significance: at most
 * O(log log L) bits of the length leak, and the overhead is at most 11.1% (12% for tiny L).
 *
 * Marker: ISO/IEC 7816-4 — the plaintext, one 0x80 byte, then zero bytes to the padded size —
 * so padding is removed without a length field, and any plaintext (ending in zeros or not)
 * round-trips. The padded bytes are encrypted and authenticated with the plaintext: an
 * attacker who cannot forge the AEAD cannot change the padding either.
 */
import { err, ok, type Result } from './result.js';

const MARKER = 0x80;

/** The Padmé size class of a length: ≥ `length`, and `length` itself for lengths below 4. */
export function padme(length: number): number {
  if (!Number.isSafeInteger(length) || length < 0 || length > 0x7fff_ffff) {
    throw new RangeError(`padme: length ${length} out of range`);
  }
  if (length < 4) return length;
  const e = 31 - Math.clz32(length); // ⌊log2 L⌋ ≥ 2
  const s = 31 - Math.clz32(e) + 1; // ⌊log2 E⌋ + 1
  const mask = 2 ** (e - s) - 1;
  return (length + mask) & ~mask;
}

/**
 * `plain` followed by the marker and zeros up to the Padmé size of `plain.length + 1`, or up to
 * `cap` when that size class would exceed it (so a message that fits a size limit unpadded
 * still fits padded); never shorter than `plain.length + 1`.
 */
export function pad(plain: Uint8Array, cap = Number.MAX_SAFE_INTEGER): Uint8Array {
  const least = plain.length + 1;
  const size = Math.max(least, Math.min(padme(least), cap));
  const out = new Uint8Array(size);
  out.set(plain);
  out[plain.length] = MARKER;
  return out;
}

export type PaddingError = { readonly type: 'BadPadding' };

/** The plaintext inside padded bytes (a view, not a copy); refused when the marker is missing. */
export function unpad(padded: Uint8Array): Result<Uint8Array, PaddingError> {
  let end = padded.length - 1;
  while (end >= 0 && padded[end] === 0) end--;
  if (end < 0 || padded[end] !== MARKER) return err({ type: 'BadPadding' });
  return ok(padded.subarray(0, end));
}
