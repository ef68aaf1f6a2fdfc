#!/usr/bin/env bash
# Installs what the test suite needs beyond npm packages: Debian's chromium, which the browser test
# (test/e2e/docs.test.ts) drives through playwright-core. Idempotent: does nothing when it is there.
# Needs apt-get and root (or sudo).
set -euo pipefail

CHROMIUM=/usr/bin/chromium

if [ -x "$CHROMIUM" ]; then
  echo "== chromium present: $("$CHROMIUM" --version 2>/dev/null || echo "$CHROMIUM")"
  exit 0
fi

if ! command -v apt-get >/dev/null 2>&1; then
  echo "install-test-deps: $CHROMIUM is missing and apt-get is not available; install chromium by hand" >&2
  exit 1
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then
    SUDO="sudo"
  else
    echo "install-test-deps: installing chromium needs root (or sudo)" >&2
    exit 1
  fi
fi

echo "== installing chromium (apt-get)"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update
$SUDO apt-get install -y --no-install-recommends chromium
echo "== chromium installed: $("$CHROMIUM" --version 2>/dev/null || echo "$CHROMIUM")"
