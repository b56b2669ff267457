/**
 * A camera for Chromium made from a picture: Chromium's `--use-file-for-fake-video-capture=<file>`
 * plays a YUV4MPEG2 file in a loop as the webcam, so a scanner test sees exactly the pixels we choose.
 *
 * File layout (YUV4MPEG2, as Chromium's FileVideoCaptureDevice reads it):
 *   "YUV4MPEG2 W<w> H<h> F10:1 Ip A1:1 C420jpeg\n"
 *   then per frame: "FRAME\n" ‖ Y plane (w·h) ‖ Cb plane (w/2·h/2) ‖ Cr plane (w/2·h/2)
 * `C420jpeg` means full-range BT.601 Y'CbCr with chroma sited between the 2×2 luma samples it covers,
 * which is what the conversion below produces. 4:2:0 needs even sides, so odd pictures are padded
 * with white on the right and bottom.
 */
import type { Locator, Page } from '@playwright/test';
import { writeFileSync } from 'node:fs';

export type RgbaImage = { readonly rgba: Uint8Array; readonly width: number; readonly height: number };

/** Frames per second announced in the header; the same picture repeats, so only the loop rate changes. */
const FRAME_RATE = '10:1';
const FRAME_MARKER = 'FRAME\n';
const MAX_SIDE = 4096;
const MAX_FRAMES = 300;

/** The YUV4MPEG2 bytes of `frames` copies of an RGBA picture (alpha composited over white). */
export function encodeY4m(image: RgbaImage, frames = 10): Uint8Array {
  checkImage(image);
  if (!Number.isInteger(frames) || frames < 1 || frames > MAX_FRAMES) {
    throw new RangeError(`fake-camera: frames must be 1..${MAX_FRAMES}, got ${frames}`);
  }
  const even = padToEven(image);
  const header = `YUV4MPEG2 W${even.width} H${even.height} F${FRAME_RATE} Ip A1:1 C420jpeg\n`;
  const frame = concat([new TextEncoder().encode(FRAME_MARKER), rgbaToI420(even)]);
  return concat([new TextEncoder().encode(header), ...Array.from({ length: frames }, () => frame)]);
}

export function writeY4m(path: string, rgba: Uint8Array, width: number, height: number, frames = 10): void {
  writeFileSync(path, encodeY4m({ rgba, width, height }, frames));
}

/** A picture of one grey level: a camera that sees no QR code at all. */
export function solidImage(width: number, height: number, level: number): RgbaImage {
  const rgba = new Uint8Array(width * height * 4).fill(level);
  for (let i = 3; i < rgba.length; i += 4) rgba[i] = 255;
  return { rgba, width, height };
}

function checkImage({ rgba, width, height }: RgbaImage): void {
  for (const [name, side] of [
    ['width', width],
    ['height', height],
  ] as const) {
    if (!Number.isInteger(side) || side < 1 || side > MAX_SIDE) {
      throw new RangeError(`fake-camera: ${name} must be 1..${MAX_SIDE}, got ${side}`);
    }
  }
  if (rgba.length !== width * height * 4) {
    throw new RangeError(`fake-camera: expected ${width * height * 4} RGBA bytes, got ${rgba.length}`);
  }
}

function padToEven(image: RgbaImage): RgbaImage {
  const width = image.width + (image.width % 2);
  const height = image.height + (image.height % 2);
  if (width === image.width && height === image.height) return image;
  const rgba = new Uint8Array(width * height * 4).fill(255);
  for (let y = 0; y < image.height; y++) {
    rgba.set(image.rgba.subarray(y * image.width * 4, (y + 1) * image.width * 4), y * width * 4);
  }
  return { rgba, width, height };
}

/** Full-range BT.601 (JFIF) conversion; chroma is computed from the 2×2 block's mean colour. */
function rgbaToI420({ rgba, width, height }: RgbaImage): Uint8Array {
  const lumaSize = width * height;
  const chromaWidth = width / 2;
  const chromaSize = lumaSize / 4;
  const out = new Uint8Array(lumaSize + 2 * chromaSize);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const [r, g, b] = rgbOverWhite(rgba, (y * width + x) * 4);
      out[y * width + x] = clampByte(0.299 * r + 0.587 * g + 0.114 * b);
    }
  }
  for (let cy = 0; cy < height / 2; cy++) {
    for (let cx = 0; cx < chromaWidth; cx++) {
      const [r, g, b] = blockMean(rgba, width, cx * 2, cy * 2);
      const at = cy * chromaWidth + cx;
      out[lumaSize + at] = clampByte(128 - 0.168736 * r - 0.331264 * g + 0.5 * b);
      out[lumaSize + chromaSize + at] = clampByte(128 + 0.5 * r - 0.418688 * g - 0.081312 * b);
    }
  }
  return out;
}

function rgbOverWhite(rgba: Uint8Array, at: number): [number, number, number] {
  const alpha = rgba[at + 3]! / 255;
  const over = (channel: number): number => channel * alpha + 255 * (1 - alpha);
  return [over(rgba[at]!), over(rgba[at + 1]!), over(rgba[at + 2]!)];
}

function blockMean(rgba: Uint8Array, width: number, x: number, y: number): [number, number, number] {
  const sum: [number, number, number] = [0, 0, 0];
  for (const [dx, dy] of [
    [0, 0],
    [1, 0],
    [0, 1],
    [1, 1],
  ] as const) {
    const rgb = rgbOverWhite(rgba, ((y + dy) * width + x + dx) * 4);
    for (let c = 0; c < 3; c++) sum[c]! += rgb[c]! / 4;
  }
  return sum;
}

function clampByte(value: number): number {
  return Math.min(255, Math.max(0, Math.round(value)));
}

function concat(parts: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((total, part) => total + part.length, 0));
  let offset = 0;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.length;
  }
  return out;
}

export type FrameSize = { readonly width: number; readonly height: number };

/** A webcam-like 4:3 frame: the code is scaled up to fill most of it, as when held up to a camera. */
export const VGA_FRAME: FrameSize = { width: 640, height: 480 };

/** How much of the frame's shorter side the picture may take, leaving a white margin around it. */
const FILL_RATIO = 0.9;

/**
 * The pixels of an element as displayed (a screenshot, so what a person would photograph), centred
 * on a white frame and scaled with nearest-neighbour sampling so module edges stay sharp.
 * The PNG is decoded by the page's own image decoder, so the test needs no PNG library.
 */
export async function displayedPixels(page: Page, element: Locator, frame: FrameSize = VGA_FRAME): Promise<RgbaImage> {
  const png = (await element.screenshot({ animations: 'disabled' })).toString('base64');
  const base64 = await page.evaluate(
    async ({ png, width, height, fill }) => {
      const bytes = Uint8Array.from(atob(png), (char) => char.charCodeAt(0));
      const bitmap = await createImageBitmap(new Blob([bytes], { type: 'image/png' }));
      const scale = (Math.min(width, height) * fill) / Math.max(bitmap.width, bitmap.height);
      const canvas = new OffscreenCanvas(width, height);
      const context = canvas.getContext('2d')!;
      context.fillStyle = '#fff';
      context.fillRect(0, 0, width, height);
      context.imageSmoothingEnabled = false;
      const [drawWidth, drawHeight] = [Math.round(bitmap.width * scale), Math.round(bitmap.height * scale)];
      context.drawImage(bitmap, (width - drawWidth) >> 1, (height - drawHeight) >> 1, drawWidth, drawHeight);
      const pixels = context.getImageData(0, 0, width, height).data;
      let binary = '';
      for (let i = 0; i < pixels.length; i += 0x8000) {
        binary += String.fromCharCode(...pixels.subarray(i, i + 0x8000));
      }
      return btoa(binary);
    },
    { png, width: frame.width, height: frame.height, fill: FILL_RATIO },
  );
  return { rgba: new Uint8Array(Buffer.from(base64, 'base64')), width: frame.width, height: frame.height };
}
