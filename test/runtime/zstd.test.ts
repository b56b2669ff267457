/**
 * ZSTD in the runtime (src/runtime/zstd.ts): the WebAssembly build starts in Node, its frames
 * declare their size, and the decoder gives exactly a page's declared length or throws —
 * through the WebAssembly decoder for a single frame that declares that length, through the
 * core's bounded pure-JavaScript decoder for everything else.
 */
import { compress } from '@bokuweb/zstd-wasm';
import { describe, expect, it } from 'vitest';
import { concat, toHex, utf8 } from '../../src/core/bytes.js';
import { frameContentSize } from '../../src/core/parquet/codecs.js';
import { zstdCompression, zstdDecompressors } from '../../src/runtime/zstd.js';

const page = utf8('temperature,humidity\n'.repeat(2000));

describe('ZSTD in the runtime', () => {
  it('compresses with the reference zstd, and the frame declares the page size', async () => {
    const zstd = await zstdCompression();
    expect(zstd.codec).toBe('ZSTD');
    const frame = zstd.compress(page);
    expect(frame.length).toBeLessThan(page.length / 10);
    expect(frameContentSize(frame)).toBe(page.length);
  });

  it('reads frame headers: 1, 2 (+256), 4 and 8 size bytes, none, and bytes that are no frame', () => {
    const magic = [0x28, 0xb5, 0x2f, 0xfd];
    expect(frameContentSize(Uint8Array.of(...magic, 0x20, 200))).toBe(200); // single segment, 1 byte
    expect(frameContentSize(Uint8Array.of(...magic, 0x60, 0x10, 0x00))).toBe(0x10 + 256); // 2 bytes
    expect(frameContentSize(Uint8Array.of(...magic, 0xa0, 1, 2, 3, 4))).toBe(0x04030201); // 4 bytes
    expect(frameContentSize(Uint8Array.of(...magic, 0xe0, 1, 0, 0, 0, 0, 0, 0, 0))).toBe(1); // 8 bytes
    expect(frameContentSize(Uint8Array.of(...magic, 0x81, 0x48, 0x01, 9, 0, 0, 0))).toBe(9); // window byte, 1-byte dictionary id
    expect(frameContentSize(Uint8Array.of(...magic, 0x00, 0x48))).toBeUndefined(); // no size declared
    expect(frameContentSize(Uint8Array.of(...magic, 0x60, 0x10))).toBeUndefined(); // header cut short
    expect(frameContentSize(Uint8Array.of(0x28, 0xb5, 0x2f, 0xfe, 0x20, 1))).toBeUndefined();
  });

  it('decodes exactly the declared length, or throws, whichever decoder answers', async () => {
    const { ZSTD } = await zstdDecompressors();
    if (!ZSTD) throw new Error('the WebAssembly decoder did not start');
    const frame = compress(page, 3);
    expect(toHex(ZSTD(frame, page.length))).toBe(toHex(page));
    // A frame that claims more than the page, one cut short, junk: refused, never misread.
    expect(() => ZSTD(frame, page.length - 1)).toThrow(
      `zstd: the frame declares ${page.length} bytes, the page ${page.length - 1}`,
    );
    expect(() => ZSTD(frame.subarray(0, frame.length - 4), page.length)).toThrow();
    expect(() => ZSTD(new Uint8Array(64).fill(7), 100)).toThrow();
    // Several frames in one page are refused too: the bounded pure decoder (fzstd into a buffer
    // of the page's size) does not read past the first. No Parquet writer we know makes them.
    const half = page.length / 2;
    const two = concat(compress(page.subarray(0, half), 3), compress(page.subarray(half), 3));
    expect(() => ZSTD(two, page.length)).toThrow();
  });
});
