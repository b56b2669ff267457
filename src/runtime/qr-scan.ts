/**
 * Reading QR codes from a camera, for pairing tickets shown on another machine's screen.
 *
 * Two decoders, one interface:
 *  - `native`: the Shape Detection API's `BarcodeDetector`, where the browser has it and it lists
 *    'qr_code' (Android, ChromeOS, macOS). Chromium on Linux, Firefox and desktop Safari do not.
 *  - `wasm`: the `barcode-detector` ponyfill (same API, so both paths read the same way), which runs
 *    ZXing-C++ compiled to WebAssembly (`zxing-wasm`).
 *
 * Why the .wasm is served by us: the ponyfill's default `locateFile` fetches it from a public CDN.
 * That fails offline, is refused by our CSP (`default-src 'self'`), and would let a third party
 * serve code into the pairing screen. So Vite emits `zxing_reader.wasm` as an asset of our own origin
 * (the service worker precaches every `*.wasm`) and Emscripten is pointed at it. The ponyfill bundles
 * its own copy of zxing-wasm's JavaScript glue, so the module is prepared through the ponyfill's
 * `prepareZXingModule` (its module cache is the one `detect` uses); the .wasm file comes from the
 * `zxing-wasm` package pinned to the same version (test/runtime/qr.test.ts checks the two agree).
 * The ponyfill is imported lazily: screens that never scan do not load it.
 *
 * Camera access is opened here too, returning its expected failures (no camera, permission denied)
 * as values (STYLE §6) so the scanner only has to show them.
 */
import zxingReaderWasmUrl from 'zxing-wasm/reader/zxing_reader.wasm?url';
import { err, ok, type Result } from '../core/result.js';

export type QrDetectorKind = 'native' | 'wasm';

export type QrDetector = {
  readonly kind: QrDetectorKind;
  /** Decoded texts of the QR codes visible in `source`, empty when there are none. */
  detect(source: ImageBitmapSource | HTMLVideoElement): Promise<string[]>;
};

/** The part of the Shape Detection API we use; TypeScript's DOM library does not declare it. */
type BarcodeDetectorLike = {
  detect(source: ImageBitmapSource): Promise<readonly { readonly rawValue: string }[]>;
};
type BarcodeDetectorClass = {
  new (options: { formats: string[] }): BarcodeDetectorLike;
  getSupportedFormats(): Promise<readonly string[]>;
};

const QR_FORMAT = 'qr_code';

/**
 * The native detector when the browser has one that reads QR codes, otherwise the WebAssembly one,
 * with its module already instantiated so the first `detect` is not slow and a missing .wasm shows up
 * here. Rejects with `qr-scan: …` when neither is available.
 */
export async function createQrDetector(): Promise<QrDetector> {
  const native = await nativeQrDetector();
  return native ?? (await wasmQrDetector());
}

async function nativeQrDetector(): Promise<QrDetector | undefined> {
  const NativeDetector = (globalThis as { BarcodeDetector?: BarcodeDetectorClass }).BarcodeDetector;
  if (NativeDetector === undefined) return undefined;
  try {
    const formats = await NativeDetector.getSupportedFormats();
    if (!formats.includes(QR_FORMAT)) return undefined;
    return wrapDetector('native', new NativeDetector({ formats: [QR_FORMAT] }));
  } catch {
    // Some platforms expose the class but fail to reach the system detector: use ours instead.
    return undefined;
  }
}

/** Emscripten asks for the .wasm by file name; every other file keeps its default location. */
const zxingOverrides = {
  locateFile: (path: string, prefix: string): string => (path.endsWith('.wasm') ? zxingReaderWasmUrl : prefix + path),
};

async function wasmQrDetector(): Promise<QrDetector> {
  const { BarcodeDetector, prepareZXingModule, purgeZXingModule } = await import('barcode-detector/ponyfill');
  try {
    // The same overrides object every time, so a second scanner reuses the instantiated module.
    await prepareZXingModule({ overrides: zxingOverrides, equalityFn: Object.is, fireImmediately: true });
  } catch (cause) {
    // zxing-wasm caches the rejected instantiation; forget it so the next attempt fetches again.
    purgeZXingModule();
    throw new Error('qr-scan: the QR decoder (zxing_reader.wasm) could not be loaded', { cause });
  }
  return wrapDetector('wasm', new BarcodeDetector({ formats: [QR_FORMAT] }));
}

function wrapDetector(kind: QrDetectorKind, detector: BarcodeDetectorLike): QrDetector {
  return {
    kind,
    async detect(source) {
      const barcodes = await detector.detect(source);
      return barcodes.map((barcode) => barcode.rawValue).filter((text) => text.length > 0);
    },
  };
}

export type CameraProblem =
  | { readonly type: 'NoCamera' }
  | { readonly type: 'PermissionDenied' }
  | { readonly type: 'CameraFailed'; readonly reason: string };

/** The rear camera where there is one (tablets, phones), any camera otherwise. */
const CAMERA_CONSTRAINTS: MediaStreamConstraints = { video: { facingMode: 'environment' }, audio: false };

export async function openCamera(): Promise<Result<MediaStream, CameraProblem>> {
  // `mediaDevices` is missing outside secure contexts and in browsers without camera support.
  if (typeof navigator === 'undefined' || !('mediaDevices' in navigator)) return err({ type: 'NoCamera' });
  try {
    return ok(await navigator.mediaDevices.getUserMedia(CAMERA_CONSTRAINTS));
  } catch (error) {
    return err(cameraProblem(error));
  }
}

/** getUserMedia's failures by DOMException name (Media Capture and Streams §10.2, "getUserMedia"). */
function cameraProblem(error: unknown): CameraProblem {
  const name = error instanceof DOMException ? error.name : '';
  if (name === 'NotAllowedError' || name === 'SecurityError') return { type: 'PermissionDenied' };
  if (name === 'NotFoundError' || name === 'OverconstrainedError') return { type: 'NoCamera' };
  return { type: 'CameraFailed', reason: error instanceof Error ? error.message : String(error) };
}

/** Turns the camera off (its light too): stopping every track is what releases the device. */
export function stopCamera(stream: MediaStream): void {
  for (const track of stream.getTracks()) track.stop();
}
