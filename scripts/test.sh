#!/usr/bin/env bash
# The one test command (`npm test`): typecheck, lint, unit tests, then the
# Playwright browser tests against Debian Chromium. Every stage runs even when an
# earlier one fails; the last line is "N passed, N failed" summed from the
# runners' JSON reports, and the exit status is non-zero on any failure.
set -uo pipefail
cd "$(dirname "$0")/.."
export PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1
rm -rf .reports && mkdir -p .reports
failed_stages=()

stage() {
  local name="$1"
  shift
  echo "── $name"
  if ! "$@"; then failed_stages+=("$name"); fi
}

stage browsers bash scripts/ensure-browsers.sh
stage typecheck npm run --silent typecheck
stage lint npm run --silent lint
stage unit npx vitest run --reporter=default --reporter=json --outputFile.json=.reports/vitest.json
stage build npx vite build --logLevel warn
stage release npx tsx scripts/release-manifest.ts dist
if [[ ! " ${failed_stages[*]} " =~ " browsers " && ! " ${failed_stages[*]} " =~ " build " ]]; then
  stage e2e npx playwright test
else
  echo "── e2e not run: browsers or build failed (counted as a failure)"
  failed_stages+=("e2e")
fi

node scripts/summarize.mjs "${failed_stages[@]}"
