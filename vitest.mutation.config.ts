import { defineConfig } from 'vitest/config';

/**
 * The tests that exercise src/core, for mutation testing (`npm run mutation`,
 * scripts/mutation.mjs): Stryker runs, per mutant, only the tests that cover it.
 * Runtime and relay tests are in: frames, receipts and the mailbox contract are
 * checked there. Browser (e2e) and CLI tests are left out.
 */
// `npm run mutation -- --tests=FILE,…` narrows a batch to those test files.
const narrowed = process.env['SOV_MUTATION_TESTS']?.split(',').filter(Boolean);

export default defineConfig({
  test: {
    include: narrowed ?? [
      'test/core/**/*.test.ts',
      'test/mls/**/*.test.ts',
      'test/storage/**/*.test.ts',
      'test/app/**/*.test.ts',
      'test/runtime/**/*.test.ts',
      'test/relay/**/*.test.ts',
    ],
    exclude: ['test/e2e/**', 'node_modules/**'],
    environment: 'node',
    testTimeout: 60_000,
    // Each mutant reruns the tests that cover it: property tests run a tenth of their cases (test/helpers/runs.ts).
    env: { SOV_PROPERTY_SCALE: '0.1' },
  },
});
