#!/usr/bin/env bash
# Runs each libFuzzer target that scripts/sanitize.sh built in build-asan/ for SECONDS
# (default 60; MYRIAD_FUZZ_SECONDS), two at a time, seeded with the bundled inputs, the
# malformed corpora and tests/fuzz/regressions/ (past findings, run first). Fails on any
# finding: the input is kept under build-asan/fuzz/findings/ (docs/testing.md, "Fuzzing").
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-${MYRIAD_FUZZ_SECONDS:-60}}"
work=build-asan/fuzz
rm -rf "$work"
mkdir -p "$work/findings" "$work/binary-seeds"
build-asan/myriad trace convert tests/emulator/cli/data/overlap.jsonl \
  "$work/binary-seeds/overlap.mtrace"
declare -A seeds=(
  [scenario]="scenarios tests/emulator/scenario/malformed"
  [trace]="tests/emulator/cli/data tests/emulator/trace/data $work/binary-seeds"
  [report]="tests/emulator/cli/golden tests/baselines"
  [wire]=""
)

# One target: its own corpus first (where libFuzzer adds inputs), then the read-only seeds.
fuzz() {
  local target=$1
  mkdir -p "$work/$target"
  # shellcheck disable=SC2086  # the seed list splits into directories on purpose
  build-asan/tests/fuzz/"$target"_fuzzer -max_total_time="$seconds" -timeout=10 \
    -rss_limit_mb=4096 -artifact_prefix="$work/findings/$target-" "$work/$target" \
    "tests/fuzz/regressions/$target" ${seeds[$target]} >"$work/$target.log" 2>&1
}

failed=0
run_pair() {
  local pids=() targets=("$@")
  for t in "${targets[@]}"; do
    fuzz "$t" &
    pids+=($!)
  done
  for i in "${!pids[@]}"; do
    if wait "${pids[$i]}"; then
      echo "fuzz: ${targets[$i]}: $(grep -o 'Done [0-9]* runs in [0-9]* second(s)' \
        "$work/${targets[$i]}.log" | tail -n 1), no finding"
    else
      echo "fuzz: ${targets[$i]}: FINDING (log: $work/${targets[$i]}.log)" >&2
      grep -E "ERROR|SUMMARY|Test unit written" "$work/${targets[$i]}.log" >&2 || true
      failed=1
    fi
  done
}
run_pair scenario trace
run_pair report wire
exit "$failed"
