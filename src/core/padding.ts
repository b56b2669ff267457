/**
 * Length padding before encryption, so ciphertext sizes say little about what is inside.
 *
 * Sizes: Padmé (Nikitin et al., "Reducing Metadata Leakage from Encrypted Files and
 * Communication with PURBs", PETS 2019, §4). A length L is rounded up by clearing its low
 * bits, keeping only the top ⌊log2 ⌊log2 L⌋⌋ + 1 bits of significance: at most
 * O(log log L) bits of the length leak, and the overhead is at most 11.1% (12% for tiny L).
 *
 * Frames use Padmé two bits coarser (`SIZE_CLASS_COARSENESS`): still O(log log L) bits of
 * length, but four size classes per doubling below 64 KiB instead of sixteen, and eight above
 * it. Padmé itself left 41 distinct frame sizes for edits of 1 to 2,000 characters, each
 * naming the edit's length to within 64 bytes (issue 26 asks for at most 12); two bits
 * coarser leaves 11, for about 10% more bytes on that workload (`npm run bench -- metadata`
 * measures it on the real path). The price: at most 25% for messages of 256 bytes and
 * more, 12.5% from 64 KiB (catch-up batches), up to 50% for the rare message under 256 bytes;
 * every message under 32 bytes pads to 32 (`MIN_SIZE_CLASS`).
 *
 * Marker: ISO/IEC 7816-4 — the plaintext, one 0x80 byte, then zero bytes to the padded size —
 * so padding is removed without a length field, and any plaintext (ending in zeros or not)
 * round-trips; the size classes can change without a new format. The padded bytes are
 * encrypted and authenticated with the plaintext: an attacker who cannot forge the AEAD
 * cannot change the padding either.
 */
import { err, ok, type Result } from './result.js';

const MARKER = 0x80;

/** How many bits coarser than Padmé frames are padded (see the header). */
export const SIZE_CLASS_COARSENESS = 2;

/**
 * The Padmé size class of a length, ≥ `length` (`length` itself below 4); with `coarser`,
 * that many more low bits are cleared (never more than all but the leading one).
 */
export function padme(length: number, coarser = 0): number {
  if (!Number.isSafeInteger(length) || length < 0 || length > 0x7fff_ffff) {
    throw new RangeError(`padme: length ${length} out of range`);
  }
  if (length < 4) return length;
  const e = 31 - Math.clz32(length); // ⌊log2 L⌋ ≥ 2
  const s = 31 - Math.clz32(e) + 1; // ⌊log2 E⌋ + 1
  const step = 2 ** Math.min(e, e - s + coarser);
  return Math.ceil(length / step) * step;
}

/**
 * The smallest size class: acknowledgements and refusals (under 32 bytes) all look alike,
 * where Padmé's classes of 16 and 32 told them apart (a 13th size for notes of 1 to 2,000
 * characters: test/cli/metadata.test.ts).
 */
export const MIN_SIZE_CLASS = 32;

/** The size class a frame's message is padded to: Padmé, `SIZE_CLASS_COARSENESS` bits coarser, at least 32. */
export const sizeClass = (length: number): number =>
  length <= MIN_SIZE_CLASS ? MIN_SIZE_CLASS : padme(length, SIZE_CLASS_COARSENESS);

/**
 * `plain` followed by the marker and zeros up to the size class of `plain.length + 1`, or up to
 * `cap` when that size class would exceed it (so a message that fits a size limit unpadded
 * still fits padded); never shorter than `plain.length + 1`.
 */
export function pad(plain: Uint8Array, cap = Number.MAX_SAFE_INTEGER): Uint8Array {
  const least = plain.length + 1;
  const size = Math.max(least, Math.min(sizeClass(least), cap));
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
