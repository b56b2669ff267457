// Mutation testing of the protocol core (issue: tests that catch what matters). Run through
// `npm run mutation` (scripts/mutation.mjs), which also writes bench/results/mutation.json.
/** @type {import('@stryker-mutator/api/core').PartialStrykerOptions} */
export default {
  testRunner: 'vitest',
  vitest: { configFile: 'vitest.mutation.config.ts' },
  plugins: ['@stryker-mutator/vitest-runner'],
  mutate: ['src/core/**/*.ts'],
  coverageAnalysis: 'perTest',
  reporters: ['json', 'progress', 'clear-text'],
  jsonReporter: { fileName: '.reports/mutation/mutation.json' },
  clearTextReporter: { reportTests: false, reportMutants: false },
  concurrency: 2,
  timeoutMS: 20_000,
  tempDirName: '.stryker-tmp',
  incremental: true,
  incrementalFile: '.reports/mutation/incremental.json',
  ignoreStatic: true,
};
