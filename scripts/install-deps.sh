#!/usr/bin/env bash
# Installs the Debian packages the build, the tests and the demo need. Safe to re-run: it only
# calls apt-get when something is missing.
#   scripts/install-deps.sh          everything the test suite needs
#   scripts/install-deps.sh --demo   without the admission-policy test's Node.js evaluator
set -euo pipefail
PKGS=(build-essential cmake ninja-build pkg-config curl openssl libssl-dev procps
      libcurl4-openssl-dev rapidjson-dev libyaml-cpp-dev libgflags-dev libgoogle-glog-dev prometheus-cpp-dev
      libcivetweb-dev civetweb libgtest-dev libgmock-dev libbenchmark-dev clang clang-format libclang-rt-14-dev
      prometheus prometheus-pushgateway prometheus-alertmanager python3 python3-kubernetes python3-yaml
      tzdata)
# The web page's browser test (test/integration/test_web.py): a real headless Chromium driven by
# Selenium. The demo does not need them.
[ "${1:-}" = "--demo" ] || PKGS+=(chromium chromium-driver python3-selenium)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "installing: ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get -o DPkg::Lock::Timeout=600 update -q
  # --no-install-recommends: node-exporter's recommends would pull in smartmontools and more;
  # the packages' postinst scripts do not start any daemon (policy-rc.d), the tests start their own.
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q -o DPkg::Lock::Timeout=600 \
    --no-install-recommends "${missing[@]}"
fi
command -v kubectl >/dev/null || {
  echo "kubectl is not installed (it is not in Debian bookworm); the simulator tests need it" >&2
  exit 1
}
# The admission policy's CEL is executed by a CEL evaluator from the npm registry, with the
# machine's Node.js (Debian bookworm's nodejs 18 is too old for it); versions pinned in the lock file.
# Only that test needs it: the demo does not.
[ "${1:-}" = "--demo" ] && exit 0
command -v node >/dev/null && command -v npm >/dev/null || {
  echo "node and npm are not installed; the admission-policy test needs them (Node.js >= 20.19)" >&2
  exit 1
}
admission="$(cd "$(dirname "$0")/.." && pwd)/test/admission"
if [ ! -d "$admission/node_modules/@marcbachmann/cel-js" ]; then
  for attempt in 1 2 3; do
    (cd "$admission" && npm ci --no-audit --no-fund --loglevel=error) && break
    [ "$attempt" = 3 ] && { echo "npm ci in test/admission failed" >&2; exit 1; }
    sleep 5
  done
fi
