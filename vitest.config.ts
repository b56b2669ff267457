import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    exclude: ['test/e2e/**', 'node_modules/**'],
    environment: 'node',
    testTimeout: 20_000,
    // Tests run in an order of their own (fixed, so a run repeats): a test that leans on the one
    // before it fails here, not only under mutation testing, which starts single tests alone.
    sequence: { shuffle: { files: false, tests: true }, seed: 7 },
  },
});
