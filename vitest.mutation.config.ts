import { defineConfig } from 'vitest/config';

/**
 * The tests that exercise src/core, for mutation testing (`npm run mutation`,
 * scripts/mutation.mjs): Stryker runs, per mutant, only the tests that cover it.
 * Relay, browser and CLI tests test other layers and are left out.
 */
export default defineConfig({
  test: {
    include: ['test/core/**/*.test.ts', 'test/mls/**/*.test.ts', 'test/storage/**/*.test.ts', 'test/app/**/*.test.ts'],
    exclude: ['test/e2e/**', 'node_modules/**'],
    environment: 'node',
    testTimeout: 60_000,
  },
});
