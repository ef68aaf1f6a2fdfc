#!/usr/bin/env bash
# Installs what the test suite needs beyond the project's npm packages: the release fixtures' packages; Debian's chromium, which the browser test
# (test/e2e/docs.test.ts) drives through playwright-core; the sandbox engines: bubblewrap (`bwrap`),
# gVisor (`runsc`) and runc, with tini as the OCI runtimes' sandboxes' init (test/e2e/sandbox-runtime*.test.ts), and e2fsprogs
# for the sandboxes' size-limited file systems; skopeo and umoci, the sandbox image store's
# tools, and busybox-static, from which test/e2e/sandbox-images*.test.ts build an image; mmdebstrap, with
# which `hangar images build` makes one from Debian packages (test/e2e/sandbox-image-build.test.ts).
# Idempotent: installs only what is missing.
# Needs apt-get and root (or sudo).
set -euo pipefail

# The release fixtures (test/e2e/fixtures/releases/*): projects pinned to other LangGraph.js and LangChain
# releases, each installed from its own lockfile (npm's registry; its cache makes it offline-capable).
# Skipped while its node_modules was installed from the lockfile as it is.
for project in "$(dirname "$0")"/../test/e2e/fixtures/releases/*/package-lock.json; do
  dir="$(dirname "$project")"
  if [ "$dir/node_modules/.package-lock.json" -nt "$project" ]; then continue; fi
  echo "== npm ci in ${dir#*/../}"
  (cd "$dir" && npm ci --prefer-offline --no-audit --no-fund --loglevel=error)
done

CHROMIUM=/usr/bin/chromium
# gVisor releases before 2023 refuse the statx flags glibc's ls and stat pass (EINVAL), so Debian 12's
# own runsc (2022-12) cannot run a Debian userland; bookworm-backports has a 2024 release.
RUNSC_SINCE=20230101
runsc_release() { runsc --version 2>/dev/null | grep -o '20[0-9]\{6\}' | head -1; }
missing=()
[ -x "$CHROMIUM" ] || missing+=(chromium)
command -v bwrap >/dev/null 2>&1 || missing+=(bubblewrap)
[ "$(runsc_release || true)" -ge "$RUNSC_SINCE" ] 2>/dev/null || missing+=(runsc)
command -v runc >/dev/null 2>&1 || missing+=(runc)
command -v tini-static >/dev/null 2>&1 || missing+=(tini)
command -v mkfs.ext4 >/dev/null 2>&1 || missing+=(e2fsprogs)
command -v skopeo >/dev/null 2>&1 || missing+=(skopeo)
command -v umoci >/dev/null 2>&1 || missing+=(umoci)
command -v mmdebstrap >/dev/null 2>&1 || missing+=(mmdebstrap)
[ -x /bin/busybox ] || missing+=(busybox-static)

if [ ${#missing[@]} -eq 0 ]; then
  echo "== chromium present: $("$CHROMIUM" --version 2>/dev/null || echo "$CHROMIUM")"
  echo "== bubblewrap present: $(bwrap --version)"
  echo "== gVisor present: $(runsc --version | head -1)"
  echo "== runc present: $(runc --version | head -1)"
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
from_backports=()
if [[ " ${missing[*]} " == *" runsc "* ]] && grep -q '^12' /etc/debian_version 2>/dev/null; then
  rest=()
  for package in "${missing[@]}"; do [ "$package" = runsc ] || rest+=("$package"); done
  missing=(${rest[@]+"${rest[@]}"})
  from_backports=(runsc)
  echo "Types: deb
URIs: http://deb.debian.org/debian
Suites: bookworm-backports
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg" | $SUDO tee /etc/apt/sources.list.d/bookworm-backports.sources >/dev/null
fi
$SUDO apt-get update
[ ${#missing[@]} -eq 0 ] || $SUDO apt-get install -y --no-install-recommends "${missing[@]}"
[ ${#from_backports[@]} -eq 0 ] || $SUDO apt-get install -y --no-install-recommends -t bookworm-backports "${from_backports[@]}"
echo "== chromium: $("$CHROMIUM" --version 2>/dev/null || echo "$CHROMIUM")"
echo "== bubblewrap: $(bwrap --version)"
echo "== gVisor: $(runsc --version | head -1)"
echo "== image tools: $(skopeo --version), $(umoci --version)"
echo "== runc: $(runc --version | head -1)"
