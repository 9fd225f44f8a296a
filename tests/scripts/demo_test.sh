#!/usr/bin/env bash
# scripts/demo.sh on the built tree: it must run the main job first (an unmodified program
# under `myriad run`, printing its own step times), then the predictions, and exit 0.
set -euo pipefail
cd "$(dirname "$0")/../.."
out=$(scripts/demo.sh --no-setup 2>&1) || { echo "$out"; echo "FAIL: demo.sh exited $?"; exit 1; }
fail() { echo "$out" | tail -40; echo "FAIL: $*"; exit 1; }
first_section=$(echo "$out" | grep -m1 '^== ')
[[ $first_section == "== 1. An unmodified CUDA + NCCL trainer"* ]] ||
  fail "the demo's first step is not the unmodified program under myriad run: $first_section"
echo "$out" | grep -q '^ddp_train: 128 rank(s)' || fail "ddp_train did not run on 128 ranks"
echo "$out" | grep -q '^mean step time: [0-9.]* ms$' || fail "ddp_train printed no step time"
echo "$out" | grep -q '^myriad run: process ./build/examples/ddp_train on h100-x16' ||
  fail "no myriad run summary of ddp_train"
if [[ -x .venv-torch/bin/python ]]; then
  echo "$out" | grep -q '^mean step time: .* (cuda events)' || fail "the PyTorch script printed no step time"
fi
[[ $(echo "$out" | grep -c '^  tokens per second') == 2 ]] || fail "the two simulate runs did not finish"
echo "demo: 1 passed, 0 failed"
