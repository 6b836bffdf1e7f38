#!/usr/bin/env bash
# The demo on a fresh Debian machine: installs what it needs, builds, and runs the controller
# against local real Prometheus + pushgateway and the Kubernetes API simulator, with nodes
# turning hot and cold. Ctrl-C stops it and everything it started.
set -euo pipefail
cd "$(dirname "$0")/.."
[ "${DEMO_NO_INSTALL:-0}" = 1 ] || scripts/install-deps.sh --demo

# The build's progress, one line: redrawn in place on a terminal, every 25th step elsewhere.
progress() {
  if [ -t 1 ]; then
    local cols
    cols=$(tput cols 2>/dev/null || echo 80)
    while IFS= read -r line; do
      case "$line" in
        \[*\]*) printf '\r\033[K  %s' "${line:0:$((cols - 3))}" ;;
      esac
    done
    printf '\r\033[K'
  else
    local n=0
    while IFS= read -r line; do
      case "$line" in
        \[*\]*) n=$((n + 1)); [ $((n % 25)) = 1 ] && echo "  $line" ;;
      esac
    done
  fi
}

mkdir -p build
log=build/demo-build.log
: >"$log"
echo "demo: building dynamic-scheduler and the API simulator in build/ (the first run takes a" \
  "few minutes; the full output is in $log)"
(cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo &&
  cmake --build build -j"$(nproc)" --target dynamic-scheduler kube-sim) >"$log" 2>&1 </dev/null &
build_pid=$!
# Ctrl-C stops the build too: a background job ignores SIGINT, not the TERM sent to the group.
trap 'trap - INT TERM; kill 0' INT TERM
tail -n +1 --pid="$build_pid" -f "$log" 2>/dev/null | progress || true  # ends with the build
if ! wait "$build_pid"; then
  echo "demo: the build failed; the end of $log:" >&2
  tail -n 30 "$log" >&2
  exit 1
fi
trap - INT TERM
echo "demo: built"
export DS_BUILD_DIR="$PWD/build"
exec /usr/bin/python3 scripts/demo.py "$@"
