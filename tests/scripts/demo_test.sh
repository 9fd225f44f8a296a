#!/usr/bin/env bash
# scripts/demo.sh on the built tree: it must run the main job first (an unmodified PyTorch
# training script under `myriad run`, printing its own step times), then the CUDA trainer and
# the predictions, and exit 0.
set -euo pipefail
cd "$(dirname "$0")/../.."
out=$(scripts/demo.sh --no-setup 2>&1) || { echo "$out"; echo "FAIL: demo.sh exited $?"; exit 1; }
fail() { echo "$out" | tail -40; echo "FAIL: $*"; exit 1; }
first_section=$(echo "$out" | grep -m1 '^== ')
# The first run a newcomer sees is PyTorch: an unmodified training script under myriad run
# (said to be skipped only where the venv is missing, which the demo's setup makes).
if [[ -x .venv-torch/bin/python ]]; then
  [[ $first_section == "== 1. An unmodified PyTorch training script"* ]] ||
    fail "the demo's first step is not the PyTorch script under myriad run: $first_section"
  echo "$out" | grep -q '^mean step time: [0-9.]* ms (cuda events)' ||
    fail "the PyTorch script printed no step time"
  echo "$out" | grep -q '^myriad run: process .venv-torch/bin/python on h100-x16' ||
    fail "no myriad run summary of the PyTorch script"
else
  [[ $first_section == "== 1. (skipped: no PyTorch venv"* ]] || fail "first step: $first_section"
fi
echo "$out" | grep -q '^ddp_train: 128 rank(s)' || fail "ddp_train did not run on 128 ranks"
echo "$out" | grep -q '^mean step time: [0-9.]* ms$' || fail "ddp_train printed no step time"
echo "$out" | grep -q '^myriad run: process ./build/examples/ddp_train on h100-x16' ||
  fail "no myriad run summary of ddp_train"
[[ $(echo "$out" | grep -c '^  tokens per second') == 2 ]] || fail "the two simulate runs did not finish"
echo "demo: 1 passed, 0 failed"
