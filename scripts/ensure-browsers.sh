#!/usr/bin/env bash
# Browser tests run in three engines, all from Debian packages (browsers are never
# downloaded): Chromium (Playwright), Firefox ESR (WebDriver BiDi) and WebKitGTK
# (WebKitWebDriver driving MiniBrowser under Xvfb). Install whatever is missing with
# apt-get when running as root; otherwise stop with a clear message.
set -euo pipefail
chromium="${SOV_CHROMIUM:-/usr/bin/chromium}"
firefox="${SOV_FIREFOX:-/usr/bin/firefox-esr}"
webkit_driver="${SOV_WEBKIT_DRIVER:-/usr/bin/WebKitWebDriver}"
xvfb=/usr/bin/Xvfb

missing=()
[ -x "$chromium" ] || missing+=(chromium)
[ -x "$firefox" ] || missing+=(firefox-esr)
[ -x "$webkit_driver" ] || missing+=(webkit2gtk-driver)
[ -x "$xvfb" ] || missing+=(xvfb)
if [ ${#missing[@]} -eq 0 ]; then exit 0; fi

if [ "$(id -u)" = "0" ]; then
  echo "ensure-browsers: installing Debian ${missing[*]} (apt-get)…"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  if [ -x "$chromium" ] && [ -x "$firefox" ] && [ -x "$webkit_driver" ] && [ -x "$xvfb" ]; then exit 0; fi
fi
echo "ensure-browsers: missing ${missing[*]}. Install them with 'sudo apt-get install ${missing[*]}'" >&2
echo "(or point SOV_CHROMIUM, SOV_FIREFOX, SOV_WEBKIT_DRIVER at the binaries). Browser tests are never skipped." >&2
exit 1
