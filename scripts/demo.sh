#!/usr/bin/env bash
# Sets everything up, builds, and runs the main job on the bundled default scenarios: first an
# unmodified PyTorch training script (examples/pytorch/gpt2.py: a GPT-2-style model with DDP,
# PyPI's stock CUDA wheel of torch in the project's venv) under `myriad run` on 128 virtual
# H100, printing its own step times, which are the virtual cluster's; then an unmodified
# CUDA + NCCL data-parallel trainer the same way; then predicted NCCL AllReduce on one DGX
# H100 node and on 128 H100 nodes (analytical, then under the flow model with a failed uplink
# and another job on the links), and one training iteration of Llama 3 8B and of Mixtral 8x7B
# on 64 H100 (`myriad simulate`).
# --no-setup: use build/ and .venv-torch/ as they are (the test suite runs the demo that way).
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ ${1:-} != --no-setup ]]; then
  scripts/setup.sh
  scripts/setup_torch.sh
  scripts/build.sh -DMYRIAD_BUILD_TESTS=OFF -DMYRIAD_BUILD_BENCH=OFF
fi

step() { printf '\n== %s\n\n' "$*"; }

if [[ -x .venv-torch/bin/python ]]; then
  step "1. An unmodified PyTorch training script (examples/pytorch/gpt2.py: GPT-2-style, DDP," \
    "bf16 autocast, fused AdamW; PyPI's torch) on 128 virtual H100 (16 nodes of 8): its own" \
    "CUDA-event timers print the virtual cluster's step times; one data-parallel replica runs" \
    "as a process, the other 127 ranks replay it (--fold dp)"
  ./build/myriad run scenarios/h100-x16.toml --fold dp \
    --iteration-marker "Train step" -- .venv-torch/bin/python examples/pytorch/gpt2.py
else
  step "1. (skipped: no PyTorch venv; scripts/setup_torch.sh makes one, and the demo runs it" \
    "unless --no-setup is given)"
fi
if [[ -x build/examples/ddp_train ]]; then
  step "1b. An unmodified CUDA + NCCL trainer (examples/ddp_train) on the same 128 virtual H100"
  ./build/myriad run scenarios/h100-x16.toml --fold dp -- ./build/examples/ddp_train
else
  step "1b. (skipped: the examples need the CUDA toolkit at /usr/local/cuda to build)"
fi

step "2. The scenario behind a prediction: every figure and where it came from"
./build/myriad check scenarios/dgx-h100.toml
step "3. NCCL AllReduce predicted like nccl-tests prints it: one DGX H100, then 128 nodes"
./build/myriad collective scenarios/dgx-h100.toml --op allreduce -b 8 -e 8G -f 2
./build/myriad collective scenarios/h100-x128.toml --op allreduce -b 8 -e 8G -f 2
step "4. The flow model: a failed uplink, a half-rate NIC and another job on a 2:1 Clos"
./build/myriad collective scenarios/h100-x128-clos-2to1-flow.toml --op allreduce -b 64M -e 4G -f 8
step "5. Megatron-style training iterations predicted from the scenario's [workload]"
./build/myriad simulate scenarios/llama3-8b-h100-x64.toml
./build/myriad simulate scenarios/mixtral-8x7b-h100-x64.toml
