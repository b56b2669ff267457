/**
 * QR pairing, end to end in real Chromium: one browser shows a ticket as a QR code, its displayed
 * pixels become a fake webcam for a second browser, and that browser's scanner must read the ticket
 * back byte for byte, with the WebAssembly decoder served from our own origin under the app's CSP.
 *
 * The components run in a test-only harness page (test/e2e/harness/), built and previewed by Vite
 * here, so this spec needs neither the app build nor a relay.
 */
import { chromium, expect, test, type Browser, type Page } from '@playwright/test';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import playwrightConfig from '../../playwright.config.ts';
import { toBase64Url } from '../../src/core/bytes.js';
import { seededRandom } from '../helpers/deterministic.ts';
import { displayedPixels, solidImage, VGA_FRAME, writeY4m } from './fake-camera.ts';
import { freePort } from './relay-process.ts';

/** Vite runs from the repository root, as `npm run build` does. */
const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));
const VITE = 'node_modules/vite/bin/vite.js';
const HARNESS_CONFIG = 'test/e2e/harness/vite.harness.config.ts';

/** Shaped like a real ticket: the prefix and 259 bytes of base64url, 351 characters in all. */
const TICKET = `sov1.${toBase64Url(seededRandom('qr-scan ticket').bytes(259))}`;

/** Frames of a camera showing no code the decoder must have read: three seconds at four looks a second. */
const NO_CODE_FRAMES = 12;
/** A generous upper limit for those looks on a loaded machine; the test waits for the count, not this. */
const NO_CODE_LIMIT_MS = 60_000;
/** Pause between two probes of the starting preview server: a poll interval, not a barrier. */
const SERVING_POLL_MS = 100;

let outDir: string;
/** Camera files live outside test-results/, which another Playwright run may empty at any time. */
let cameraDir: string;
let preview: ChildProcess | undefined;
let harnessUrl: string;

test.beforeAll(async () => {
  outDir = mkdtempSync(join(tmpdir(), 'sov-qr-harness-'));
  cameraDir = mkdtempSync(join(tmpdir(), 'sov-qr-camera-'));
  const build = spawnSync(process.execPath, [VITE, 'build', '--config', HARNESS_CONFIG, '--outDir', outDir], {
    cwd: REPO_ROOT,
    encoding: 'utf8',
  });
  if (build.status !== 0) throw new Error(`harness build failed:\n${build.stdout}${build.stderr}`);
  const port = await freePort();
  preview = spawn(
    process.execPath,
    [VITE, 'preview', '--config', HARNESS_CONFIG, '--outDir', outDir, '--port', `${port}`],
    {
      cwd: REPO_ROOT,
      stdio: ['ignore', 'ignore', 'inherit'],
    },
  );
  harnessUrl = `http://127.0.0.1:${port}/qr.html`;
  await waitUntilServing(harnessUrl, preview);
});

test.afterAll(() => {
  preview?.kill('SIGTERM');
  rmSync(outDir, { recursive: true, force: true });
  rmSync(cameraDir, { recursive: true, force: true });
});

/** Polls until the preview server answers; its log line is coloured, so it is not parsed. */
async function waitUntilServing(url: string, child: ChildProcess): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`vite preview exited early with ${child.exitCode}`);
    const response = await fetch(url).catch(() => undefined);
    if (response?.ok) return;
    await delay(SERVING_POLL_MS);
  }
  throw new Error('vite preview did not start in 20 s');
}

/** Another Chromium with the project's launch arguments plus `extraArgs`. */
function launchChromium(extraArgs: readonly string[]): Promise<Browser> {
  return chromium.launch({
    executablePath: process.env['SOV_CHROMIUM'] ?? '/usr/bin/chromium',
    args: [...(playwrightConfig.use?.launchOptions?.args ?? []), ...extraArgs],
  });
}

/** A Chromium whose only camera plays `y4mPath`, with camera permission granted without a prompt. */
function launchWithCamera(y4mPath: string): Promise<Browser> {
  return launchChromium([
    '--use-fake-ui-for-media-stream',
    '--use-fake-device-for-media-stream',
    `--use-file-for-fake-video-capture=${y4mPath}`,
  ]);
}

async function expectProblem(scanner: Page, type: string, message: RegExp): Promise<void> {
  const alert = scanner.getByRole('alert');
  await expect(alert).toHaveAttribute('data-problem', type);
  await expect(alert).toHaveText(message);
  await expect(scanner.getByTestId('qr-scanner')).toHaveAttribute('data-phase', 'failed');
  await expect(scanner.getByTestId('scan-result')).toHaveAttribute('data-calls', '0');
}

function greyCameraFile(path: string): string {
  const grey = solidImage(VGA_FRAME.width, VGA_FRAME.height, 128);
  writeY4m(path, grey.rgba, grey.width, grey.height);
  return path;
}

/** Opens the scanner and records every request and CSP complaint the page makes. */
async function openScanner(browser: Browser): Promise<{ page: Page; requests: string[]; cspErrors: string[] }> {
  const page = await browser.newPage();
  const requests: string[] = [];
  const cspErrors: string[] = [];
  page.on('request', (request) => requests.push(request.url()));
  page.on('console', (message) => {
    if (message.text().includes('Content Security Policy')) cspErrors.push(message.text());
  });
  await page.goto(`${harnessUrl}?mode=scan`);
  return { page, requests, cspErrors };
}

test('a ticket shown as a QR code is read back exactly by a camera scanner in another browser', async ({ page }) => {
  await page.goto(`${harnessUrl}?mode=code&text=${encodeURIComponent(TICKET)}`);
  const code = page.getByRole('img', { name: 'Pairing ticket as a QR code' });
  await expect(code).toHaveAttribute('data-testid', 'qr-code');
  // 351 bytes at level M is version 14 (73 modules), plus a 4-module quiet zone on each side.
  await expect(code).toHaveAttribute('viewBox', '0 0 81 81');

  const cameraFile = join(cameraDir, 'qr.y4m');
  const pixels = await displayedPixels(page, code);
  writeY4m(cameraFile, pixels.rgba, pixels.width, pixels.height);

  const camera = await launchWithCamera(cameraFile);
  try {
    const { page: scanner, requests, cspErrors } = await openScanner(camera);
    const result = scanner.getByTestId('scan-result');
    await expect(result).toHaveText(TICKET);
    await expect(scanner.getByTestId('qr-scanner')).toHaveAttribute('data-detector', 'wasm');
    await expect(scanner.getByTestId('qr-scanner')).toHaveAttribute('data-phase', 'done');
    await expect(scanner.getByRole('alert')).toHaveCount(0);
    // onResult fires once, and the camera is released with it: the video holds no picture any more, so no
    // later look could decode a second result.
    const video = await scanner.getByTestId('qr-video').evaluate((v: HTMLVideoElement) => ({
      stream: v.srcObject,
      picture: v.readyState > HTMLMediaElement.HAVE_NOTHING,
    }));
    expect(video).toEqual({ stream: null, picture: false });
    await expect(result).toHaveAttribute('data-calls', '1');

    const origin = new URL(harnessUrl).origin;
    expect(requests.filter((url) => !url.startsWith(`${origin}/`))).toEqual([]);
    expect(requests.some((url) => url.endsWith('.wasm'))).toBe(true);
    expect(cspErrors).toEqual([]);
  } finally {
    await camera.close();
  }
});

test('a camera that sees no QR code never reports a result and shows no error; Cancel releases it', async () => {
  const camera = await launchWithCamera(greyCameraFile(join(cameraDir, 'grey.y4m')));
  try {
    const { page: scanner } = await openScanner(camera);
    const root = scanner.getByTestId('qr-scanner');
    await expect(root).toHaveAttribute('data-phase', 'scanning');
    // The decoder answering for frame after frame is what proves the scanner looked and found nothing.
    await expect
      .poll(async () => Number(await root.getAttribute('data-frames')), { timeout: NO_CODE_LIMIT_MS })
      .toBeGreaterThanOrEqual(NO_CODE_FRAMES);
    await expect(root).toHaveAttribute('data-phase', 'scanning');
    await expect(scanner.getByTestId('scan-result')).toHaveAttribute('data-calls', '0');
    await expect(scanner.getByRole('alert')).toHaveCount(0);

    const cancel = scanner.getByRole('button', { name: 'Cancel' });
    const box = (await cancel.boundingBox())!;
    expect(Math.min(box.width, box.height)).toBeGreaterThanOrEqual(44);
    await cancel.click();
    await expect(scanner.getByTestId('scan-result')).toHaveAttribute('data-cancelled', 'true');
    expect(await scanner.getByTestId('qr-video').evaluate((video: HTMLVideoElement) => video.srcObject)).toBeNull();
  } finally {
    await camera.close();
  }
});

test('a machine without a camera is told so in an alert', async ({ page }) => {
  // The default browser of this suite has no camera device at all.
  await page.goto(`${harnessUrl}?mode=scan`);
  await expectProblem(page, 'NoCamera', /No camera was found/);
});

test('a refused camera permission is explained in an alert', async () => {
  // A camera exists, but without --use-fake-ui-for-media-stream headless Chromium refuses the prompt.
  const browser = await launchChromium(['--use-fake-device-for-media-stream']);
  try {
    const { page } = await openScanner(browser);
    await expectProblem(page, 'PermissionDenied', /Camera access was refused/);
  } finally {
    await browser.close();
  }
});

test('a decoder that cannot be loaded is reported in an alert', async () => {
  const camera = await launchWithCamera(greyCameraFile(join(cameraDir, 'grey.y4m')));
  try {
    const page = await camera.newPage();
    await page.route('**/*.wasm', (route) => route.abort());
    await page.goto(`${harnessUrl}?mode=scan`);
    await expectProblem(page, 'NoDetector', /cannot read QR codes/);
  } finally {
    await camera.close();
  }
});
