/**
 * ZSTD page compression for the objects this machine forms, from the reference zstd built
 * to WebAssembly (@bokuweb/zstd-wasm): in browsers its web build (the .wasm is an asset of
 * the bundle, precached with the app), in Node its file-loading build. Started once per
 * thread, on first use; where WebAssembly cannot start, objects are written with Snappy,
 * which every reader reads too.
 *
 * Level 3, zstd's own default (the same DuckDB writes with).
 */
import { compress, init } from '@bokuweb/zstd-wasm';
import { SNAPPY, type PageCompression } from '../core/parquet/write.js';

const LEVEL = 3;

let started: Promise<PageCompression> | undefined;

export function zstdCompression(): Promise<PageCompression> {
  started ??= init().then(
    (): PageCompression => ({ codec: 'ZSTD', compress: (raw) => compress(raw, LEVEL) }),
    (): PageCompression => SNAPPY,
  );
  return started;
}
