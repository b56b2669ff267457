/**
 * One page of one browser engine, as the cross-engine tests drive it: Chromium through
 * Playwright, Firefox ESR through WebDriver BiDi (puppeteer-core), WebKitGTK through
 * classic WebDriver (WebKitWebDriver, selenium-webdriver). Clicks and typing go through
 * each driver's own input path, as a person's would; reads and waits go through a script
 * in the page, so all three engines are asked the very same questions.
 */
import { setTimeout as delay } from 'node:timers/promises';

export type EngineName = 'chromium' | 'firefox' | 'webkit';

/** A function run in the page with one serialisable argument; may return a promise. */
export type PageFunction<A, R> = (arg: A) => R | Promise<R>;

export interface EnginePage {
  readonly engine: EngineName;
  goto(url: string): Promise<void>;
  reload(): Promise<void>;
  click(selector: string): Promise<void>;
  /** Replaces the text of an input or textarea by typing `value`. */
  fill(selector: string, value: string): Promise<void>;
  evaluate<A, R>(fn: PageFunction<A, R>, arg: A): Promise<R>;
  /** Ends this page's browser session (and its browser, where the page owns one). */
  close(): Promise<void>;
}

/** `[data-testid="…"]`, the app's stable hooks. */
export const tid = (id: string): string => `[data-testid="${id}"]`;

/** How long `waitFor` pauses between two probes: a poll interval, never what a test waits for. */
const POLL_MS = 100;
export const WAIT_MS = 30_000;

/**
 * Polls `probe` until `done` holds for its value; throws with `what` and the last value
 * seen (not a bare timeout) when it does not within `timeout`.
 */
export async function waitFor<T>(
  what: string,
  probe: () => Promise<T>,
  done: (value: T) => boolean,
  timeout = WAIT_MS,
): Promise<T> {
  const deadline = Date.now() + timeout;
  let last: T | undefined;
  let error: unknown;
  for (;;) {
    try {
      last = await probe();
      if (done(last)) return last;
      error = undefined;
    } catch (e) {
      // A navigation in progress answers with an error; the next poll asks again.
      error = e;
    }
    if (Date.now() > deadline) {
      const seen = error instanceof Error ? `error ${error.message}` : JSON.stringify(last);
      throw new Error(`waited ${timeout} ms for ${what}; last seen: ${seen}`);
    }
    await delay(POLL_MS);
  }
}

type ElementState = { readonly count: number; readonly text: string | null; readonly value: string | null };

/** What the page shows at `selector`: how many match, and the first one's text and value. */
export function inspect(page: EnginePage, selector: string): Promise<ElementState> {
  return page.evaluate((sel) => {
    const all = document.querySelectorAll(sel);
    const first = all[0] as (HTMLElement & { value?: unknown }) | undefined;
    return {
      count: all.length,
      text: first ? first.textContent.trim() : null,
      value: first && typeof first.value === 'string' ? first.value : null,
    };
  }, selector);
}

const matches = (actual: string | null, expected: string | RegExp): boolean =>
  actual !== null && (typeof expected === 'string' ? actual === expected : expected.test(actual));

/** Waits until the first element at `selector` shows `expected` as its trimmed text or its input value. */
async function expectShown(
  page: EnginePage,
  selector: string,
  field: 'text' | 'value',
  expected: string | RegExp,
  timeout: number,
): Promise<string> {
  const state = await waitFor(
    `${page.engine}: ${field} ${String(expected)} at ${selector}`,
    () => inspect(page, selector),
    (s) => matches(s[field], expected),
    timeout,
  );
  return state[field]!;
}

/** Waits until the first element at `selector` has the text `expected` (trimmed). */
export const expectText = (page: EnginePage, selector: string, expected: string | RegExp, timeout = WAIT_MS) =>
  expectShown(page, selector, 'text', expected, timeout);

/** Waits until the input at `selector` holds `expected`. */
export const expectValue = (page: EnginePage, selector: string, expected: string | RegExp, timeout = WAIT_MS) =>
  expectShown(page, selector, 'value', expected, timeout);

/** Waits until exactly `count` elements match `selector`. */
export async function expectCount(page: EnginePage, selector: string, count: number, timeout = WAIT_MS): Promise<void> {
  await waitFor(
    `${page.engine}: ${count} × ${selector}`,
    () => inspect(page, selector),
    (s) => s.count === count,
    timeout,
  );
}

/** Chooses `value` in the <select> at `selector`, as picking it would (a change event). */
export async function selectOption(page: EnginePage, selector: string, value: string): Promise<void> {
  await expectCount(page, `${selector} option[value="${value}"]`, 1);
  await page.evaluate(
    ({ sel, value }) => {
      const select = document.querySelector<HTMLSelectElement>(sel)!;
      select.value = value;
      select.dispatchEvent(new Event('change', { bubbles: true }));
    },
    { sel: selector, value },
  );
}
