/**
 * Where a Parquet file's bytes come from: all of them in memory, or a source that reads
 * byte ranges on demand (an object in the relay's blind store that this machine does not
 * hold). The reader asks for the tail first (magic, footer length, footer), then for each
 * column chunk it decodes — so a query reads the footer and the chunks of the row groups
 * that survive pruning, never the rest.
 *
 * A ranged read is trusted no more than the whole file: every module of an encrypted file
 * is AES-GCM sealed with an AAD that names the file and the module's place in it, so bytes
 * from elsewhere (another object, another offset, a truncated answer) fail to open.
 */
import { concat } from '../bytes.js';
import { err, ok, type Result } from '../result.js';
import { u32 } from './decoding.js';
import type { ParquetError } from './modules.js';

export type ByteSource = {
  /** The file's length in bytes. */
  readonly size: number;
  /** Bytes [start, end) of the file: exactly `end - start` of them, or why not. */
  read(start: number, end: number): Promise<Result<Uint8Array, ParquetError>>;
  /** How many bytes of the end the first read takes (TAIL_GUESS unless told). */
  readonly tailGuess?: number;
};

/** A source over bytes in memory (views, not copies). */
export function bytesSource(bytes: Uint8Array): ByteSource {
  return {
    size: bytes.length,
    read: (start, end) =>
      Promise.resolve(
        start < 0 || end > bytes.length || end < start
          ? err({ type: 'Truncated', detail: `bytes ${start}–${end} are outside the file` })
          : ok(bytes.subarray(start, end)),
      ),
  };
}

/**
 * How much of a file's end one read takes: the magic, the footer length and, for the
 * objects this project writes, the whole footer — one round trip, not two.
 */
export const TAIL_GUESS = 16 * 1024;

/**
 * The parts of a file that its tail is read from, as one short file: the opening magic,
 * the footer region, its length and the closing magic. `readTail` (footer.ts) reads this
 * exactly as it reads the whole file; a footer longer than the file is left out, and the
 * length field then tells `readTail` so. `end`: the bytes of the first read (see `withTail`).
 */
export async function tailBytes(
  source: ByteSource,
): Promise<Result<{ readonly tail: Uint8Array; readonly end: Uint8Array }, ParquetError>> {
  const size = source.size;
  if (size < 12) return err({ type: 'Truncated', detail: 'shorter than magic, footer length and magic' });
  const guess = Math.min(size, Math.max(12, source.tailGuess ?? TAIL_GUESS));
  const end = await source.read(size - guess, size);
  if (!end.ok) return end;
  const head = size === guess ? ok(end.value.subarray(0, 4)) : await source.read(0, 4);
  if (!head.ok) return head;
  const length = u32(end.value, guess - 8);
  const closing = end.value.subarray(guess - 8);
  if (length > size - 12) return ok({ tail: concat(head.value, closing), end: end.value });
  const region =
    length + 8 <= guess
      ? ok(end.value.subarray(guess - 8 - length, guess - 8))
      : await source.read(size - 8 - length, size - 8);
  if (!region.ok) return region;
  return ok({ tail: concat(head.value, region.value, closing), end: end.value });
}

/**
 * `source`, answering reads inside its last `tail.length` bytes from `tail` (the end the
 * footer was read from): for a file no longer than the first read, nothing is read twice.
 */
export function withTail(source: ByteSource, tail: Uint8Array): ByteSource {
  const from = source.size - tail.length;
  return {
    size: source.size,
    read: (start, end) =>
      start >= from && end <= source.size && end >= start
        ? Promise.resolve(ok(tail.subarray(start - from, end - from)))
        : source.read(start, end),
  };
}
