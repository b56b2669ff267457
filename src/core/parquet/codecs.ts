/**
 * Decompression for every codec the Parquet format names but LZO (which no maintained
 * JavaScript decoder reads; a file using it is `Unsupported`): hyparquet reads SNAPPY and
 * UNCOMPRESSED itself; GZIP, BROTLI, LZ4 (the Hadoop framing and the bare block), LZ4_RAW
 * and ZSTD come from hyparquet-compressors (pure JavaScript; fzstd for ZSTD). Its own
 * `compressors` object is not used: it would load a WebAssembly snappy we do not need.
 *
 * Each decompressor is held to the page's declared size (hyparquet checks it after the
 * call); a ZSTD frame is decoded into a buffer of that size, so it cannot grow without
 * bound, and a frame whose header declares another size than the page is refused (fzstd
 * would fill the buffer and stop, cutting the page short without a word).
 */
import { decompress as zstd } from 'fzstd';
import { decompressBrotli } from 'hyparquet-compressors/src/brotli.js';
import { gunzip } from 'hyparquet-compressors/src/gzip.js';
import { decompressLz4, decompressLz4Raw } from 'hyparquet-compressors/src/lz4.js';
import type { CompressionCodec, Compressors } from 'hyparquet/src/types.js';

export const DECOMPRESSORS: Compressors = {
  GZIP: (input, length) => gunzip(input, new Uint8Array(length)),
  BROTLI: decompressBrotli,
  ZSTD: (input, length) => {
    const declared = frameContentSize(input);
    if (declared !== undefined && declared !== length) {
      throw new Error(`zstd: the frame declares ${declared} bytes, the page ${length}`);
    }
    return zstd(input, new Uint8Array(length));
  },
  LZ4: decompressLz4,
  LZ4_RAW: decompressLz4Raw,
};

/** Codecs this reader decodes. */
export function isReadableCodec(codec: CompressionCodec): boolean {
  return codec === 'UNCOMPRESSED' || codec === 'SNAPPY' || DECOMPRESSORS[codec] !== undefined;
}

/**
 * The content size a zstd frame's header declares (RFC 8878 §3.1.1.1), or undefined when the
 * bytes are no zstd frame or the header declares none.
 */
export function frameContentSize(frame: Uint8Array): number | undefined {
  if (frame.length < 5 || frame[0] !== 0x28 || frame[1] !== 0xb5 || frame[2] !== 0x2f || frame[3] !== 0xfd) {
    return undefined;
  }
  const descriptor = frame[4]!;
  const singleSegment = (descriptor >> 5) & 1;
  const fcsFlag = descriptor >> 6;
  const fcsBytes = fcsFlag === 0 ? singleSegment : [0, 2, 4, 8][fcsFlag]!;
  if (fcsBytes === 0) return undefined;
  const at = 5 + (singleSegment ? 0 : 1) + [0, 1, 2, 4][descriptor & 3]!;
  if (frame.length < at + fcsBytes) return undefined;
  let size = 0;
  for (let i = fcsBytes - 1; i >= 0; i--) size = size * 256 + frame[at + i]!;
  return fcsBytes === 2 ? size + 256 : size;
}
