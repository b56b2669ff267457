#!/usr/bin/env bash
# Browser tests need Debian's Chromium (browsers are never downloaded). Install it
# with apt-get when running as root; otherwise stop with a clear message.
set -euo pipefail
chromium="${SOV_CHROMIUM:-/usr/bin/chromium}"
if [ -x "$chromium" ]; then exit 0; fi
if [ "$(id -u)" = "0" ]; then
  echo "ensure-chromium: installing Debian chromium (apt-get)…"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  [ -x "$chromium" ] && exit 0
fi
echo "ensure-chromium: $chromium is missing. Install it with 'sudo apt-get install chromium'" >&2
echo "(or point SOV_CHROMIUM at a Chromium binary). Browser tests are never skipped." >&2
exit 1
