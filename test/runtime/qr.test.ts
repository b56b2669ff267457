/**
 * The QR pieces that can be checked without a browser: the fake-camera file the e2e test feeds to
 * Chromium, the QR generator's size and determinism at the settings QrCode.svelte uses, and the
 * pinning of the decoder's .wasm to the JavaScript glue the ponyfill bundles.
 */
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { encode } from 'uqr';
import { describe, expect, it } from 'vitest';
import { toBase64Url } from '../../src/core/bytes.js';
import { seededRandom } from '../helpers/deterministic.ts';
import { encodeY4m, solidImage, writeY4m } from '../e2e/fake-camera.ts';

const HEADER_640X480 = 'YUV4MPEG2 W640 H480 F10:1 Ip A1:1 C420jpeg\n';
const FRAME_MARKER = 'FRAME\n';

function pixel(r: number, g: number, b: number, a = 255): Uint8Array {
  return new Uint8Array([r, g, b, a, r, g, b, a, r, g, b, a, r, g, b, a]);
}

/** The Y, Cb and Cr of a 2×2 single-colour frame. */
function ycbcrOf(rgba: Uint8Array): number[] {
  const bytes = encodeY4m({ rgba, width: 2, height: 2 }, 1);
  const planes = bytes.subarray(bytes.length - 6);
  return [planes[0]!, planes[4]!, planes[5]!];
}

describe('fake camera: YUV4MPEG2 writer', () => {
  it('writes the header, then per frame the marker and I420 planes', () => {
    const bytes = encodeY4m(solidImage(640, 480, 200), 10);
    const frameBytes = 640 * 480 * 1.5;
    expect(new TextDecoder().decode(bytes.subarray(0, HEADER_640X480.length))).toBe(HEADER_640X480);
    expect(bytes.length).toBe(HEADER_640X480.length + 10 * (FRAME_MARKER.length + frameBytes));
    const secondFrame = HEADER_640X480.length + FRAME_MARKER.length + frameBytes;
    expect(new TextDecoder().decode(bytes.subarray(secondFrame, secondFrame + FRAME_MARKER.length))).toBe(FRAME_MARKER);
  });

  it('writes the same bytes to a file', () => {
    const dir = mkdtempSync(join(tmpdir(), 'sov-y4m-'));
    try {
      const image = solidImage(6, 4, 0);
      writeY4m(join(dir, 'camera.y4m'), image.rgba, image.width, image.height, 3);
      expect(new Uint8Array(readFileSync(join(dir, 'camera.y4m')))).toEqual(encodeY4m(image, 3));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('converts to full-range BT.601, compositing transparency over white', () => {
    expect(ycbcrOf(pixel(255, 255, 255))).toEqual([255, 128, 128]);
    expect(ycbcrOf(pixel(0, 0, 0))).toEqual([0, 128, 128]);
    expect(ycbcrOf(pixel(255, 0, 0))).toEqual([76, 85, 255]);
    expect(ycbcrOf(pixel(0, 0, 0, 0))).toEqual([255, 128, 128]);
  });

  it('pads odd sides with white to even ones', () => {
    const bytes = encodeY4m(solidImage(3, 1, 0), 1);
    const header = 'YUV4MPEG2 W4 H2 F10:1 Ip A1:1 C420jpeg\n';
    expect(new TextDecoder().decode(bytes.subarray(0, header.length))).toBe(header);
    const luma = bytes.subarray(header.length + FRAME_MARKER.length, header.length + FRAME_MARKER.length + 8);
    expect([...luma]).toEqual([0, 0, 0, 255, 255, 255, 255, 255]);
  });

  it('refuses pixels that do not match the size, and absurd sizes', () => {
    expect(() => encodeY4m({ rgba: new Uint8Array(15), width: 2, height: 2 })).toThrow(/expected 16 RGBA bytes/);
    expect(() => encodeY4m({ rgba: new Uint8Array(0), width: 0, height: 2 })).toThrow(/width must be/);
    expect(() => encodeY4m(solidImage(2, 2, 0), 0)).toThrow(/frames must be/);
  });
});

describe('QR generator at the QrCode settings (byte mode, level M, 4-module quiet zone)', () => {
  const qrSettings = { ecc: 'M', border: 4 } as const;
  const utf8Bytes = (text: string): number[] => Array.from(new TextEncoder().encode(text));
  const ticketLike = (bytes: number): string => `sov1.${toBase64Url(seededRandom(`qr ${bytes}`).bytes(bytes))}`;

  it('fits ticket-sized texts (300 to 400 characters) in versions 13 to 15, 77 to 85 modules with the quiet zone', () => {
    for (const [bytes, characters, version] of [
      [222, 301, 13],
      [259, 351, 14],
      [296, 400, 15],
    ] as const) {
      const text = ticketLike(bytes);
      expect(text.length).toBe(characters);
      const code = encode(utf8Bytes(text), qrSettings);
      expect(code.version).toBe(version);
      expect(code.size).toBe(17 + 4 * version + 8);
      expect(code.data.length).toBe(code.size);
      expect(code.data.every((row) => row.length === code.size)).toBe(true);
    }
  });

  it('draws the same code for the same text, and a different one for another text', () => {
    const text = ticketLike(259);
    expect(encode(utf8Bytes(text), qrSettings)).toEqual(encode(utf8Bytes(text), qrSettings));
    expect(encode(utf8Bytes(`${text}x`), qrSettings).data).not.toEqual(encode(utf8Bytes(text), qrSettings).data);
  });

  it('keeps the quiet zone light', () => {
    const { data, size } = encode(utf8Bytes(ticketLike(259)), qrSettings);
    for (let i = 0; i < size; i++) {
      for (const edge of [0, 1, 2, 3, size - 4, size - 3, size - 2, size - 1]) {
        expect(data[edge]![i]).toBe(false);
        expect(data[i]![edge]).toBe(false);
      }
    }
  });
});

describe('QR decoder .wasm pinning', () => {
  it('serves the exact zxing-wasm build the barcode-detector ponyfill was made with', async () => {
    const ponyfill = await import('barcode-detector/ponyfill');
    const zxing = await import('zxing-wasm/reader');
    expect(ponyfill.ZXING_WASM_VERSION).toBe(zxing.ZXING_WASM_VERSION);
    const wasmPath = createRequire(import.meta.url).resolve('zxing-wasm/reader/zxing_reader.wasm');
    const digest = createHash('sha256').update(readFileSync(wasmPath)).digest('hex');
    expect(digest).toBe(ponyfill.ZXING_WASM_SHA256);
  });
});
