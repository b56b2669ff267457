import { defineConfig } from '@playwright/test';

/** Browser tests run against Debian's Chromium; browsers are never downloaded. */
export default defineConfig({
  testDir: 'test/e2e',
  timeout: 180_000,
  expect: { timeout: 20_000 },
  workers: 1,
  retries: 0,
  reporter: [['list'], ['json', { outputFile: '.reports/playwright.json' }]],
  use: {
    browserName: 'chromium',
    launchOptions: {
      executablePath: process.env['SOV_CHROMIUM'] ?? '/usr/bin/chromium',
      // Every engine runs under the C locale, where WebKit reports `C` as its language (test/e2e/engines.spec.ts).
      env: { ...process.env, LANG: 'C.UTF-8', LC_ALL: 'C.UTF-8' },
      args: [
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
    },
    trace: 'retain-on-failure',
    // A read or click that cannot happen fails on its own line, not as a test timeout.
    actionTimeout: 60_000,
  },
});
