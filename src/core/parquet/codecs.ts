/**
 * Decompression for every codec the Parquet format names but LZO (which no maintained
 * JavaScript decoder reads; a file using it is `Unsupported`): hyparquet reads SNAPPY and
 * UNCOMPRESSED itself; GZIP, BROTLI, LZ4 (the Hadoop framing and the bare block), LZ4_RAW
 * and ZSTD come from hyparquet-compressors (pure JavaScript; fzstd for ZSTD). Its own
 * `compressors` object is not used: it would load a WebAssembly snappy we do not need.
 *
 * Each decompressor is held to the page's declared size (hyparquet checks it after the
 * call); a ZSTD frame is decoded into a buffer of that size, so a frame that claims more
 * fails instead of growing without bound.
 */
import { decompress as zstd } from 'fzstd';
import { decompressBrotli } from 'hyparquet-compressors/src/brotli.js';
import { gunzip } from 'hyparquet-compressors/src/gzip.js';
import { decompressLz4, decompressLz4Raw } from 'hyparquet-compressors/src/lz4.js';
import type { CompressionCodec, Compressors } from 'hyparquet/src/types.js';

export const DECOMPRESSORS: Compressors = {
  GZIP: (input, length) => gunzip(input, new Uint8Array(length)),
  BROTLI: decompressBrotli,
  ZSTD: (input, length) => zstd(input, new Uint8Array(length)),
  LZ4: decompressLz4,
  LZ4_RAW: decompressLz4Raw,
};

/** Codecs this reader decodes. */
export function isReadableCodec(codec: CompressionCodec): boolean {
  return codec === 'UNCOMPRESSED' || codec === 'SNAPPY' || DECOMPRESSORS[codec] !== undefined;
}
