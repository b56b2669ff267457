/**
 * Launches Firefox ESR and WebKitGTK from Debian's packages as EnginePages, each in a
 * fresh profile (a machine of its own) and under LANG=C.UTF-8, the locale the issue was
 * found under (WebKit then reports `navigator.language` as a tag `Intl` rejects).
 *
 * - Firefox: puppeteer-core over WebDriver BiDi (Firefox's own remote agent, no
 *   geckodriver), headless. Prefs and env keep it from reaching any network but the
 *   loopback, grant the camera and persistent storage without prompts.
 * - WebKitGTK: WebKitWebDriver (one session per driver process) starting MiniBrowser in
 *   automation mode on an Xvfb display shared by the test process; selenium-webdriver
 *   talks to the running driver (`usingServer`, so Selenium Manager never runs).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { setTimeout as delay } from 'node:timers/promises';
import puppeteer, { type Browser as PuppeteerBrowser, type Page as PuppeteerPage } from 'puppeteer-core';
import { Builder, By, until, type WebDriver, type WebElement } from 'selenium-webdriver';
import { freePort } from '../relay-process.ts';
import { WAIT_MS, type EngineName, type EnginePage, type PageFunction } from './engine-page.ts';

const FIREFOX = process.env['SOV_FIREFOX'] ?? '/usr/bin/firefox-esr';
const WEBKIT_DRIVER = process.env['SOV_WEBKIT_DRIVER'] ?? '/usr/bin/WebKitWebDriver';
const MINIBROWSER = process.env['SOV_MINIBROWSER'] ?? '/usr/lib/x86_64-linux-gnu/webkit2gtk-4.1/MiniBrowser';
const XVFB = '/usr/bin/Xvfb';

/** The locale every engine runs under. */
const LOCALE_ENV = { LANG: 'C.UTF-8', LC_ALL: 'C.UTF-8' };
const START_MS = 30_000;
/** Pause between two readiness probes of a starting driver: a poll interval, not a barrier. */
const START_POLL_MS = 100;

/** `firefoxPrefs`: preferences added to the defaults below (Firefox only). */
export function launchEngine(
  engine: Exclude<EngineName, 'chromium'>,
  firefoxPrefs: Readonly<Record<string, string | number | boolean>> = {},
): Promise<EnginePage> {
  return engine === 'firefox' ? launchFirefox(firefoxPrefs) : launchWebKit();
}

// ── Firefox ──────────────────────────────────────────────────────────────────

const FIREFOX_PREFS = {
  // The QR test replaces getUserMedia with a canvas stream; no permission prompt either way.
  'media.navigator.permission.disabled': true,
  'permissions.default.camera': 1,
  // navigator.storage.persist() would otherwise wait on a permission prompt nobody answers.
  'dom.storageManager.prompt.testing': true,
  'dom.storageManager.prompt.testing.allow': true,
  // Nothing but the loopback: no push, captive-portal, update, telemetry or settings fetches.
  'dom.push.connection.enabled': false,
  'network.captive-portal-service.enabled': false,
  'network.connectivity-service.enabled': false,
  'network.dns.disablePrefetch': true,
  'network.prefetch-next': false,
  'network.predictor.enabled': false,
  'browser.safebrowsing.update.enabled': false,
  'browser.region.update.enabled': false,
  'browser.region.network.url': '',
  'extensions.blocklist.enabled': false,
  'extensions.systemAddon.update.enabled': false,
  'app.update.auto': false,
  'toolkit.telemetry.enabled': false,
  'toolkit.telemetry.server': '',
  'datareporting.policy.dataSubmissionEnabled': false,
  'security.OCSP.enabled': 0,
  'services.settings.server': 'data:,#remote-settings-dummy/v1',
  'identity.fxaccounts.enabled': false,
};

const FIREFOX_ENV = {
  // Release builds honour services.settings.server only with this set.
  MOZ_REMOTE_SETTINGS_DEVTOOLS: '1',
  // Refuse every non-loopback connection (and DNS lookup).
  MOZ_DISABLE_NONLOCAL_CONNECTIONS: '1',
  MOZ_CRASHREPORTER_DISABLE: '1',
};

async function launchFirefox(prefs: Readonly<Record<string, string | number | boolean>>): Promise<EnginePage> {
  const browser = await puppeteer.launch({
    browser: 'firefox',
    executablePath: FIREFOX,
    headless: true,
    extraPrefsFirefox: { ...FIREFOX_PREFS, ...prefs },
    timeout: START_MS,
    protocolTimeout: 60_000,
    env: { ...process.env, ...FIREFOX_ENV, ...LOCALE_ENV },
  });
  try {
    const page = (await browser.pages())[0] ?? (await browser.newPage());
    return puppeteerPage(browser, page);
  } catch (e) {
    await browser.close();
    throw e;
  }
}

function puppeteerPage(browser: PuppeteerBrowser, page: PuppeteerPage): EnginePage {
  return {
    engine: 'firefox',
    goto: async (url) => {
      await page.goto(url, { waitUntil: 'load' });
    },
    reload: async () => {
      await page.reload({ waitUntil: 'load' });
    },
    click: async (selector) => {
      await page.locator(selector).click();
    },
    fill: async (selector, value) => {
      await page.locator(selector).fill(value);
    },
    evaluate: <A, R>(fn: PageFunction<A, R>, arg: A) =>
      page.evaluate(fn as (arg: unknown) => R | Promise<R>, arg) as Promise<R>,
    close: () => browser.close(),
  };
}

// ── WebKitGTK ────────────────────────────────────────────────────────────────

let display: Promise<{ name: string; child: ChildProcess }> | undefined;

/** One Xvfb for the test process (it picks a free display itself and listens on no TCP port). */
function xvfbDisplay(): Promise<{ name: string; child: ChildProcess }> {
  return (display ??= new Promise((resolve, reject) => {
    const child = spawn(XVFB, ['-displayfd', '3', '-screen', '0', '1280x1024x24', '-nolisten', 'tcp', '-noreset'], {
      stdio: ['ignore', 'ignore', 'pipe', 'pipe'],
    });
    let said = '';
    let errors = '';
    const timer = setTimeout(() => reject(new Error(`Xvfb did not start: ${errors}`)), START_MS);
    child.stderr!.on('data', (d: Buffer) => (errors += d.toString()));
    child.stdio[3]!.on('data', (d: Buffer) => {
      said += d.toString();
      if (!said.includes('\n')) return;
      clearTimeout(timer);
      resolve({ name: `:${said.trim()}`, child });
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      display = undefined;
      reject(new Error(`Xvfb exited with ${code}: ${errors}`));
    });
    // The display lives as long as the test process.
    process.once('exit', () => child.kill('SIGKILL'));
  }));
}

/** A WebKitWebDriver process on the loopback, ready for its one session. */
async function startWebKitDriver(displayName: string): Promise<{ url: string; child: ChildProcess }> {
  const port = await freePort();
  const child = spawn(WEBKIT_DRIVER, [`--port=${port}`, '--host=127.0.0.1'], {
    env: { ...process.env, ...LOCALE_ENV, DISPLAY: displayName },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr.on('data', (d: Buffer) => (output += d.toString()));
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + START_MS;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`WebKitWebDriver exited with ${child.exitCode}: ${output}`);
    const status = await fetch(`${url}/status`)
      .then((r) => r.json() as Promise<{ value?: { ready?: boolean } }>)
      .catch(() => undefined);
    if (status?.value?.ready) return { url, child };
    await delay(START_POLL_MS);
  }
  child.kill('SIGKILL');
  throw new Error(`WebKitWebDriver was not ready in ${START_MS} ms: ${output}`);
}

async function launchWebKit(): Promise<EnginePage> {
  const { name } = await xvfbDisplay();
  const server = await startWebKitDriver(name);
  try {
    const driver = await new Builder()
      .usingServer(server.url)
      .withCapabilities({
        browserName: 'MiniBrowser',
        'webkitgtk:browserOptions': { binary: MINIBROWSER, args: ['--automation'] },
      })
      .build();
    await driver.manage().setTimeouts({ script: 60_000, pageLoad: 60_000 });
    return webDriverPage(driver, server.child);
  } catch (e) {
    server.child.kill('SIGKILL');
    throw e;
  }
}

/** The element at `selector` once it is on the page, visible and enabled (as Playwright's locators wait). */
async function ready(driver: WebDriver, selector: string): Promise<WebElement> {
  const element = await driver.wait(until.elementLocated(By.css(selector)), WAIT_MS, `no ${selector} on the page`);
  await driver.wait(until.elementIsVisible(element), WAIT_MS, `${selector} is not visible`);
  await driver.wait(until.elementIsEnabled(element), WAIT_MS, `${selector} is not enabled`);
  return element;
}

function webDriverPage(driver: WebDriver, server: ChildProcess): EnginePage {
  return {
    engine: 'webkit',
    goto: (url) => driver.get(url),
    reload: () => driver.navigate().refresh(),
    click: async (selector) => {
      await (await ready(driver, selector)).click();
    },
    fill: async (selector, value) => {
      const element = await ready(driver, selector);
      await element.clear();
      await element.sendKeys(value);
    },
    // Execute Script awaits a returned promise (WebDriver §13.2.1).
    evaluate: <A, R>(fn: PageFunction<A, R>, arg: A) =>
      driver.executeScript<R>(`return (${fn.toString()})(arguments[0]);`, arg),
    close: async () => {
      await driver.quit().catch(() => undefined);
      server.kill('SIGTERM');
    },
  };
}
