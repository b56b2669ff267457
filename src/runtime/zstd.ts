/**
 * ZSTD for objects, from the reference zstd built to WebAssembly (@bokuweb/zstd-wasm): in
 * browsers its web build (the .wasm is an asset of the bundle, precached with the app), in
 * Node its file-loading build. Started once per thread, on first use.
 *
 *   - Writing: pages of the objects this machine forms, at level 3 (zstd's own default, the
 *     one DuckDB writes with). Where WebAssembly cannot start, objects are written with
 *     Snappy, which every reader reads too.
 *   - Reading: about thirty times faster than the core's pure-JavaScript decoder (fzstd), and
 *     held to the same contract — exactly the page's declared length, or a throw. The
 *     WebAssembly decoder is used only for a single frame that declares that length in its
 *     header (what every writer we know makes, ours included); anything else goes to the
 *     core's decoder (core/parquet/codecs.ts), which refuses a frame that declares another
 *     size and decodes the rest into a buffer of the page's size.
 */
import { compress, decompress, init } from '@bokuweb/zstd-wasm';
import type { Compressors } from 'hyparquet/src/types.js';
import { DECOMPRESSORS, frameContentSize } from '../core/parquet/codecs.js';
import { SNAPPY, type PageCompression } from '../core/parquet/write.js';

const LEVEL = 3;

let started: Promise<boolean> | undefined;

function wasm(): Promise<boolean> {
  started ??= init().then(
    () => true,
    () => false,
  );
  return started;
}

export async function zstdCompression(): Promise<PageCompression> {
  return (await wasm()) ? { codec: 'ZSTD', compress: (raw) => compress(raw, LEVEL) } : SNAPPY;
}

/** Decompressors for `openParquet`'s options: the WebAssembly ZSTD where it started, else none (the core's). */
export async function zstdDecompressors(): Promise<Partial<Compressors>> {
  return (await wasm()) ? { ZSTD: decompressZstd } : {};
}

const pureZstd = DECOMPRESSORS.ZSTD!;

function decompressZstd(input: Uint8Array, length: number): Uint8Array {
  if (frameContentSize(input) === length) {
    try {
      const out = decompress(input, { defaultHeapSize: length });
      if (out.length === length) return out;
    } catch {
      // Trailing frames or a corrupt block: the pure decoder decides, within the page's size.
    }
  }
  return pureZstd(input, length);
}
