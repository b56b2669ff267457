/**
 * Building RLE / bit-packed hybrid streams for the tests of core/parquet/hybrid.ts: valid
 * ones as another implementation writes them (hyparquet-writer), and the varints that
 * hand-built malformed ones are made of.
 */
import { ByteWriter } from 'hyparquet-writer/src/bytewriter.js';
import { writeRleBitPackedHybrid } from 'hyparquet-writer/src/encoding.js';

/** `values` of `width` bits each, as hyparquet-writer encodes them. */
export function encoded(values: readonly number[], width: number): Uint8Array {
  const w = new ByteWriter();
  writeRleBitPackedHybrid(w, Int32Array.from(values), width);
  return w.getBytes();
}

/** A varint (LEB128) of a non-negative number below 2^35. */
export function varint(n: number): number[] {
  const out: number[] = [];
  for (;;) {
    const low = n % 128;
    n = Math.floor(n / 128);
    if (n === 0) return [...out, low];
    out.push(low | 0x80);
  }
}
