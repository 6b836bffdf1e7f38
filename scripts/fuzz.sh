#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (+ASan/UBSan) and runs each for FUZZ_SECONDS
# (default 60) from the seed corpora in test/testdata/fuzz/<target>/ plus the project's own sample
# files (rule files, recorded Prometheus answers), gathered at run time so that no sample is kept
# twice in the repository. New inputs that reach new
# code are kept in <build dir>/corpus/<target>/ (not committed); crashes land in the build
# directory and fail the run.
#   scripts/fuzz.sh                 every target, 60 s each, built in build-fuzz/
#   FUZZ_SECONDS=10 scripts/fuzz.sh prom_decoder
#   FUZZ_BUILD_DIR=build-asan FUZZ_PREBUILT=1 scripts/fuzz.sh
#                                   fuzz targets already built there (test.sh: its clang
#                                   ASan/UBSan tree is configured with -DDS_FUZZ=ON)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${FUZZ_SECONDS:-60}
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(prom_decoder watch_stream node_list rule_config kubeconfig lease ownership pod_list http_request_head)
command -v clang++ >/dev/null || { echo "fuzz.sh: clang++ is needed (Debian package clang)" >&2; exit 1; }
dir=${FUZZ_BUILD_DIR:-build-fuzz}
# Undefined behaviour is a finding like a crash, except inside RapidJSON's headers (test/ubsan.supp).
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1:suppressions=$PWD/test/ubsan.supp}
if [ -z "${FUZZ_PREBUILT:-}" ]; then
  CC=clang CXX=clang++ cmake -S . -B "$dir" -DDS_FUZZ=ON -DDS_BUILD_TESTS=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    >/dev/null
  cmake --build "$dir" -j"$(nproc)" --target $(printf 'fuzz_%s ' "${targets[@]}") >/dev/null
fi
# Seeds that live elsewhere in the tree, by target.
declare -A shared_seeds=(
  [prom_decoder]="test/testdata/prom_*.json"
  [rule_config]="examples/rule-*.yaml deploy/base/rule.yaml"
)
fuzz_one() {  # target: fuzzes it, prints one line; fails (with the log's tail) on a crash
  local t=$1 log="$dir/fuzz_$1.log"
  if ! (cd "$dir" && ./fuzz_"$t" -max_total_time="$seconds" -max_len=65536 -rss_limit_mb=2048 \
        -print_final_stats=1 "corpus/$t" "seeds/$t" >"fuzz_$t.log" 2>&1); then
    echo "fuzz_$t: FAILED (see $log)"; tail -40 "$log"; return 1
  fi
  echo "fuzz_$t: $(grep -E '^stat::number_of_executed_units' "$log" | awk '{print $2}') executions in ${seconds} s, no crash"
}
for t in "${targets[@]}"; do
  mkdir -p "$dir/corpus/$t"
  seeds="$dir/seeds/$t"
  rm -rf "$seeds"; mkdir -p "$seeds"
  [ -d "test/testdata/fuzz/$t" ] && cp test/testdata/fuzz/"$t"/* "$seeds"/
  for f in ${shared_seeds[$t]:-}; do cp "$f" "$seeds"/; done
done
# One target per core at a time: each fuzzer is single-threaded.
failed=0 running=0
for t in "${targets[@]}"; do
  if [ "$running" -ge "$(nproc)" ]; then wait -n || failed=1; running=$((running - 1)); fi
  fuzz_one "$t" &
  running=$((running + 1))
done
while [ "$running" -gt 0 ]; do wait -n || failed=1; running=$((running - 1)); done
exit "$failed"
