#!/usr/bin/env bash
# The whole test suite from a fresh build directory: installs dependencies, builds with
# -Wall -Wextra -Werror, runs the unit and integration tests, then builds again with
# AddressSanitizer + UndefinedBehaviorSanitizer and runs everything once more.
#   scripts/test.sh            everything (what CI runs)
#   scripts/test.sh --fast     skip the sanitizer pass
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
jobs=$(nproc)

run() {  # build dir, extra cmake args...
  local dir=$1; shift
  rm -rf "$dir"
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
  cmake --build "$dir" -j"$jobs"
  ctest --test-dir "$dir" --output-on-failure -j2 --timeout 900
}

start=$(date +%s)
run build-test
if [ "${1:-}" != "--fast" ]; then
  echo "=== again under ASan + UBSan ==="
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    run build-asan -DDS_SANITIZE=ON
fi
echo "all tests passed in $(( $(date +%s) - start )) s"
