#!/usr/bin/env bash
# Installs what the build, the tests and the demo need, from Debian's archive (and, for the test
# suite only, one npm package). Safe to re-run: it only calls apt-get when something is missing.
#   scripts/install-deps.sh          everything the test suite needs
#   scripts/install-deps.sh --demo   only what the demo uses: no kubectl, no browser, no Node.js
# On a fresh Debian 12 (scripts/fresh-debian.sh checks it there) this installs:
#   - the packages in PKGS below, from Debian's archive;
#   - for the tests only, from Debian's archive: Chromium, ChromeDriver and Selenium (the web
#     page's browser test); llvm and libc6-dbg (symbols for the sanitizer passes' suppressions);
#     victoria-metrics (a long-term store the replay is checked against);
#     kubernetes-client (kubectl 1.20) when no kubectl is on the PATH, and nodejs (18) and npm when
#     no Node.js is -- a newer kubectl or Node.js on the PATH is used as it is, the suite passes
#     with both;
#   - for the tests only, from the npm registry: the admission-policy test's CEL evaluator,
#     `npm ci` in test/admission (the version pinned in its package-lock.json).
set -euo pipefail
demo=false
[ "${1:-}" = "--demo" ] && demo=true
PKGS=(build-essential cmake ninja-build pkg-config curl openssl libssl-dev procps
      libcurl4-openssl-dev rapidjson-dev libyaml-cpp-dev libgflags-dev libgoogle-glog-dev prometheus-cpp-dev
      libcivetweb-dev civetweb libgtest-dev libgmock-dev libbenchmark-dev clang clang-format libclang-rt-14-dev
      prometheus prometheus-pushgateway prometheus-alertmanager python3 python3-kubernetes python3-yaml
      tzdata)
if ! $demo; then
  PKGS+=(chromium chromium-driver python3-selenium)
  # A long-term store the replay and the controller are checked against (test_replay_victoria).
  PKGS+=(victoria-metrics)
  # llvm-symbolizer and libc's symbols: the sanitizer passes name functions with them, and
  # test/tsan.supp matches function names -- its one entry is inside libc (tzset_internal, which
  # glog calls from several threads), so without both that known report fails the TSan pass.
  PKGS+=(llvm libc6-dbg)
  # Real clients the simulator and the admission policy are checked with; the demo runs neither.
  command -v kubectl >/dev/null || PKGS+=(kubernetes-client)
  { command -v node >/dev/null && command -v npm >/dev/null; } || PKGS+=(nodejs npm)
fi
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
$demo && exit 0
# The admission policy's CEL is executed by a real CEL evaluator from the npm registry. It declares
# Node.js >= 20.19, yet installs and evaluates the policy correctly on Debian bookworm's Node.js 18
# (test_deploy's AdmissionPolicyTest runs there): npm's EBADENGINE warning is expected on 18.
admission="$(cd "$(dirname "$0")/.." && pwd)/test/admission"
if [ ! -d "$admission/node_modules/@marcbachmann/cel-js" ]; then
  for attempt in 1 2 3; do
    (cd "$admission" && npm ci --no-audit --no-fund --loglevel=error) && break
    [ "$attempt" = 3 ] && { echo "npm ci in test/admission failed" >&2; exit 1; }
    sleep 5
  done
fi
