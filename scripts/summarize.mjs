// Sums the vitest and Playwright JSON reports into the one closing line CI reads:
// "N passed, N failed". Failed stages without a report (typecheck, lint, build,
// chromium) count as one failure each. Exits 1 if anything failed.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';

const failedStages = process.argv.slice(2);
let passed = 0;
let failed = 0;
let skipped = 0;

function read(path) {
  return existsSync(path) ? JSON.parse(readFileSync(path, 'utf8')) : undefined;
}

const vitest = read('.reports/vitest.json');
if (vitest) {
  passed += vitest.numPassedTests;
  failed += vitest.numFailedTests;
  skipped += vitest.numPendingTests + (vitest.numTodoTests ?? 0);
  // A file that failed to load has no test results but still failed.
  failed += vitest.testResults.filter((f) => f.status === 'failed' && f.assertionResults.length === 0).length;
}

const playwright = read('.reports/playwright.json');
if (playwright) {
  passed += playwright.stats.expected + playwright.stats.flaky;
  failed += playwright.stats.unexpected;
  skipped += playwright.stats.skipped;
  if (playwright.errors?.length) failed += playwright.errors.length;
}

for (const stage of failedStages) {
  const hasReport = (stage === 'unit' && vitest) || (stage === 'e2e' && playwright);
  if (!hasReport) failed += 1;
}
if (failedStages.length > 0) console.log(`failed stages: ${failedStages.join(', ')}`);
const line = `${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}`;
writeFileSync('.reports/summary.txt', `${line}\n`);
console.log(line);
process.exit(failed > 0 || failedStages.length > 0 ? 1 : 0);
