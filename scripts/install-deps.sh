#!/usr/bin/env bash
# Installs the Debian packages the build, the tests and the demo need. Safe to re-run: it only
# calls apt-get when something is missing.
set -euo pipefail
PKGS=(build-essential cmake pkg-config curl openssl libssl-dev procps
      libcurl4-openssl-dev rapidjson-dev libyaml-cpp-dev libgflags-dev libgoogle-glog-dev
      libcivetweb-dev civetweb libgtest-dev libgmock-dev libbenchmark-dev clang libclang-rt-14-dev
      prometheus prometheus-pushgateway prometheus-alertmanager python3 python3-kubernetes)
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
