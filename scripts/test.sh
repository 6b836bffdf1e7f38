#!/usr/bin/env bash
# The whole test suite from a fresh build directory: installs dependencies and checks the format
# (.clang-format); builds the Release type with GCC and warnings as errors (DS_WERROR) and runs the
# unit, integration, fault and deployment tests and the benchmark smoke run; builds again with
# AddressSanitizer + UndefinedBehaviorSanitizer and runs the unit and integration tests once more
# (not the two script end-to-end runs, demo and bench smoke, nor the simulator's own fidelity
# checks: that pass reuses the Release simulator, nor the web page's headless-browser test, which
# runs the page's script, not the controller's code); with ThreadSanitizer for the unit
# tests and the controller's integration test; then builds the parsers' fuzz
# targets and the controller with clang (warnings as errors) and fuzzes each parser for
# FUZZ_SECONDS (default 10) with libFuzzer.
#   scripts/test.sh            everything (what CI runs)
#   scripts/test.sh --fast     only the first pass
#   scripts/test.sh --long     everything, with the fault scenarios at full length (DS_LONG=1)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
jobs=$(nproc)

run() {  # build dir, ctest label filter, extra cmake args...
  local dir=$1 filter=$2; shift 2
  rm -rf "$dir"
  # Warnings are errors here, never for users (DS_WERROR is off by default).
  cmake -S . -B "$dir" -DDS_WERROR=ON "$@" >/dev/null
  local t0=$(date +%s)
  cmake --build "$dir" -j"$jobs"
  local t1=$(date +%s)
  # Four at once on two cores: the integration suites spend most of their time waiting on
  # real processes and clocks (about a quarter of a core each, measured).
  ctest --test-dir "$dir" --output-on-failure -j4 --timeout 900 $filter
  echo "$dir: built in $((t1 - t0)) s, tested in $(( $(date +%s) - t1 )) s"
}

if [ "${1:-}" = "--long" ]; then export DS_LONG=1; fi
# The sanitizer builds at -O1 with line tables only (the sanitizers' own recommendation): half
# the compile time of -O2 -g, and their reports still name every function and line.
sanitizer_flags="-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG"
start=$(date +%s)
scripts/check-format.sh
# The build type most users and packagers run.
run build-test "" -DCMAKE_BUILD_TYPE=Release
if [ "${1:-}" != "--fast" ]; then
  # GCC here: clang's UBSan also checks pointer arithmetic on null, which Debian's RapidJSON 1.1.0
  # does inside its own headers (internal/stack.h) on every parse.
  echo "=== again under ASan + UBSan ==="
  # The simulator is the Release pass's (test/CMakeLists.txt, DS_SIM_FROM): not built again here.
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    run build-asan "-LE slow|sim|browser" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$sanitizer_flags" -DDS_SANITIZE=ON \
    -DDS_SIM_FROM="$PWD/build-test/kube-sim"
  # Data races: the unit tests and the simulator-backed runs of the reconciler, cache and
  # elector (test_controller; the fault scenarios with two replicas stay in the passes above,
  # their timing bounds are not meant for a 5-15x slower binary).
  echo "=== again under ThreadSanitizer ==="
  TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$PWD/test/tsan.supp" \
    run build-tsan "-L unit|tsan" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$sanitizer_flags" -DDS_TSAN=ON \
    -DDS_SIM_FROM="$PWD/build-test/kube-sim"
  echo "=== clang: the controller with warnings as errors, and fuzzing ==="
  fuzz_start=$(date +%s)
  FUZZ_CMAKE_ARGS=-DDS_WERROR=ON FUZZ_ALSO_BUILD=dynamic-scheduler \
    FUZZ_SECONDS=${FUZZ_SECONDS:-10} scripts/fuzz.sh
  echo "clang build and fuzzing: $(( $(date +%s) - fuzz_start )) s"
fi
echo "all tests passed in $(( $(date +%s) - start )) s"
