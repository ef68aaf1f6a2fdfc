#!/usr/bin/env bash
# Installs what the test suite needs beyond npm packages: Debian's chromium, which the browser test
# (test/e2e/docs.test.ts) drives through playwright-core; bubblewrap (`bwrap`), the local sandbox
# driver's isolation tool (test/e2e/sandbox-runtime.test.ts); skopeo and umoci, the sandbox image store's
# tools, and busybox-static, from which test/e2e/sandbox-images.test.ts builds an image.
# Idempotent: installs only what is missing.
# Needs apt-get and root (or sudo).
set -euo pipefail

CHROMIUM=/usr/bin/chromium
missing=()
[ -x "$CHROMIUM" ] || missing+=(chromium)
command -v bwrap >/dev/null 2>&1 || missing+=(bubblewrap)
command -v skopeo >/dev/null 2>&1 || missing+=(skopeo)
command -v umoci >/dev/null 2>&1 || missing+=(umoci)
[ -x /bin/busybox ] || missing+=(busybox-static)

if [ ${#missing[@]} -eq 0 ]; then
  echo "== chromium present: $("$CHROMIUM" --version 2>/dev/null || echo "$CHROMIUM")"
  echo "== bubblewrap present: $(bwrap --version)"
  echo "== image tools present: $(skopeo --version), $(umoci --version)"
  exit 0
fi

if ! command -v apt-get >/dev/null 2>&1; then
  echo "install-test-deps: ${missing[*]} missing and apt-get is not available; install them by hand" >&2
  exit 1
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then
    SUDO="sudo"
  else
    echo "install-test-deps: installing ${missing[*]} needs root (or sudo)" >&2
    exit 1
  fi
fi

echo "== installing ${missing[*]} (apt-get)"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update
$SUDO apt-get install -y --no-install-recommends "${missing[@]}"
echo "== chromium: $("$CHROMIUM" --version 2>/dev/null || echo "$CHROMIUM")"
echo "== bubblewrap: $(bwrap --version)"
echo "== image tools: $(skopeo --version), $(umoci --version)"
