#!/usr/bin/env bash
# The demo on a fresh Debian machine: installs what it needs, builds, and runs the controller
# against local real Prometheus + pushgateway and the Kubernetes API simulator, with nodes
# turning hot and cold. Ctrl-C stops it and everything it started.
set -euo pipefail
cd "$(dirname "$0")/.."
[ "${DEMO_NO_INSTALL:-0}" = 1 ] || scripts/install-deps.sh --demo
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)" --target dynamic-scheduler kube-sim >/dev/null
export DS_BUILD_DIR="$PWD/build"
exec /usr/bin/python3 scripts/demo.py "$@"
