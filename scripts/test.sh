#!/usr/bin/env bash
# The whole test suite from fresh build directories: installs dependencies and checks the format
# (.clang-format); builds the Release type with GCC and warnings as errors (DS_WERROR) and runs the
# unit, integration, fault and deployment tests and the benchmark smoke run; then, with clang and
# warnings as errors, AddressSanitizer + UndefinedBehaviorSanitizer (one tree that also holds the
# parsers' libFuzzer targets) for the unit and integration tests once more (not the two script
# end-to-end runs, demo and bench smoke; nor the simulator's own fidelity checks: that pass reuses
# the Release simulator; nor the web page's headless-browser test, which runs the page's script);
# ThreadSanitizer for the unit tests and the controller's integration test; and fuzzes each parser
# for FUZZ_SECONDS (default 10) with libFuzzer.
# Each sanitizer tree is compiled while the tests of the stage before it run, at idle CPU priority
# (SCHED_IDLE: it only gets the cycles the tests leave, so their timing is not disturbed): the
# integration tests mostly wait on processes and clocks.
# Compile cost, fresh clone, no ccache, ninja -j2 (CPU s = user+sys; the machine was shared): the
# ASan+UBSan+fuzz tree took 915 s wall before unity builds (partly at idle priority beside tests),
# 638 CPU s / 377 s wall after (a unity Release tree: 692 CPU s / 377 s wall against 611 s wall, but
# users build file by file, so the Release tree stays so). Per file, clang with ASan: rebalancer_test.cc 49 -> 26 CPU s (test
# code at -O0), backoff_test.cc 6.9 -> 1.5 CPU s (-O0 and the precompiled header).
#   scripts/test.sh            everything (what CI runs)
#   scripts/test.sh --fast     only the first pass
#   scripts/test.sh --long     everything, with the fault scenarios at full length (DS_LONG=1)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
jobs=$(nproc)

configure() {  # build dir, cmake args...
  local dir=$1; shift
  rm -rf "$dir"
  # Warnings are errors here, never for users (DS_WERROR is off by default). Ninja: it keeps
  # both cores busy across targets with less overhead than make.
  cmake -S . -B "$dir" -G Ninja -DDS_WERROR=ON "$@" >/dev/null
}
# Compiles a build dir in the background at idle priority, in a process group of its own (killed
# if this script stops early), compiler output in <dir>/ds-build.log, exit code in <dir>/ds-built.
bg_group=""
trap '[ -z "$bg_group" ] || kill -- -"$bg_group" 2>/dev/null || true' EXIT
start_build() {
  local dir=$1
  setsid chrt --idle 0 bash -c 'cmake --build "$1" -j"$2" >"$1/ds-build.log" 2>&1; echo $? >"$1/ds-built"' \
    build "$dir" "$jobs" &
  bg_group=$!  # setsid did not fork (a background job is no group leader): its pid is the group
  bg_t0=$(date +%s)
}
# The background build's result. If it is still running, the tests it overlapped are done: the rest
# is built in the foreground at normal priority (an idle-priority build cannot raise its own
# priority, and on a busy machine it could starve); ninja resumes where it was stopped.
finish_build() {
  local dir=$1 rc
  if [ ! -s "$dir/ds-built" ]; then
    kill -- -"$bg_group" 2>/dev/null || true
    wait "$bg_group" 2>/dev/null || true
    echo "$dir: $(( $(date +%s) - bg_t0 )) s of building in the background; the rest in the foreground"
    rc=0
    cmake --build "$dir" -j"$jobs" >>"$dir/ds-build.log" 2>&1 || rc=$?
  else
    wait "$bg_group" 2>/dev/null || true
    rc=$(cat "$dir/ds-built")
  fi
  bg_group=""
  if [ "$rc" != 0 ]; then
    grep -E -B2 -A12 "error|warning:" "$dir/ds-build.log" | head -150 || true
    echo "$dir: BUILD FAILED (all of it in $dir/ds-build.log)"; exit 1
  fi
  echo "$dir: built in $(( $(date +%s) - bg_t0 )) s in all"
}
run_tests() {  # build dir, ctest label filter
  local dir=$1 filter=$2 t0=$(date +%s)
  # Four at once on two cores: the integration suites spend most of their time waiting on
  # real processes and clocks (about a quarter of a core each, measured).
  ctest --test-dir "$dir" --output-on-failure -j4 --timeout 900 $filter
  echo "$dir: tested in $(( $(date +%s) - t0 )) s"
  # A test that cannot run with the tools at hand (an old kubectl, say) skips with its reason: each
  # one is listed and counted here, not left in CTest's log.
  local skipped
  skipped=$(grep -hE "\.\.\. skipped |\[  SKIPPED \] [A-Za-z]" "$dir/Testing/Temporary/LastTest.log" 2>/dev/null \
            | sort -u || true)
  [ -z "$skipped" ] || { echo "$dir: SKIPPED $(wc -l <<<"$skipped"):"; sed 's/^/  /' <<<"$skipped"; }
}

if [ "${1:-}" = "--long" ]; then export DS_LONG=1; fi
# The sanitizer builds at -O1 with line tables only (the sanitizers' own recommendation): half
# the compile time of -O2 -g, and their reports still name every function and line.
sanitizer_flags="-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG"
start=$(date +%s)
scripts/check-format.sh
# The build type most users and packagers run, with the compiler they use.
# The unit tests' one precompiled header (DS_TEST_PCH) here too: it is test code, compiled at -O0
# (test/CMakeLists.txt), and took 14 % off its compile with GCC (fresh tree, 58 test files: 403 CPU s
# at -O1, 329 at -O0, 284 at -O0 with the header); the product's files stay one by one.
configure build-test -DCMAKE_BUILD_TYPE=Release -DDS_TEST_PCH=ON
t0=$(date +%s)
cmake --build build-test -j"$jobs"
echo "build-test: built in $(( $(date +%s) - t0 )) s"
if [ "${1:-}" = "--fast" ]; then
  run_tests build-test ""
  echo "all tests passed in $(( $(date +%s) - start )) s"
  exit 0
fi
# clang for both sanitizer trees: it compiles every production and test file with warnings as
# errors there, so no third build is needed for that. The simulator is the Release pass's
# (test/CMakeLists.txt, DS_SIM_FROM): test infrastructure, not built again.
# The precompiled header in the clang trees as well: it halves a small test's compile there (ASan:
# 6.9 s -> 3.2 s for backoff_test.cc).
# Unity builds there too (each library's files compiled in batches: the headers parsed once per
# batch, not once per file): fresh trees with no ccache spent much of their time re-parsing the same
# headers. Not in the Release tree: it is the build users run, file by file, and there a file that
# forgets an #include must fail as it would for them (in a batch, an earlier file's include hides it).
export CC=clang CXX=clang++
unity="-DCMAKE_UNITY_BUILD=ON -DDS_TEST_PCH=ON"
configure build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo "$sanitizer_flags" -DDS_FUZZ=ON $unity \
  -DDS_SIM_FROM="$PWD/build-test/kube-sim"
configure build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo "$sanitizer_flags" -DDS_TSAN=ON $unity \
  -DDS_SIM_FROM="$PWD/build-test/kube-sim"
start_build build-asan
run_tests build-test ""
finish_build build-asan
start_build build-tsan
echo "=== again under ASan + UBSan (clang) ==="
# UBSAN_OPTIONS (fatal, test/ubsan.supp) come from CTest: test/CMakeLists.txt.
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 run_tests build-asan "-LE slow|sim|browser"
finish_build build-tsan
# Data races: the unit tests and the simulator-backed runs of the reconciler, cache and elector
# (test_controller; the fault scenarios with two replicas stay in the passes above, their timing
# bounds are not meant for a 5-15x slower binary).
echo "=== again under ThreadSanitizer (clang) ==="
TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$PWD/test/tsan.supp" \
  run_tests build-tsan "-L unit|tsan"
echo "=== fuzzing the parsers ==="
t0=$(date +%s)
FUZZ_BUILD_DIR=build-asan FUZZ_PREBUILT=1 FUZZ_SECONDS=${FUZZ_SECONDS:-10} scripts/fuzz.sh
echo "fuzzing: $(( $(date +%s) - t0 )) s"
echo "all tests passed in $(( $(date +%s) - start )) s"
