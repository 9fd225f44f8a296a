#!/usr/bin/env bash
# Sets everything up, builds, and runs the main job on the bundled default scenarios: predicted
# NCCL AllReduce on one DGX H100 node and on a 128-node H100 cluster (analytical, then under
# the flow model on a 2:1 Clos with a failed uplink and another job on the links), and one
# training iteration of Llama 3 8B and of Mixtral 8x7B on 64 H100 (`myriad simulate`).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh -DMYRIAD_BUILD_TESTS=OFF -DMYRIAD_BUILD_BENCH=OFF
./build/myriad check scenarios/dgx-h100.toml
./build/myriad collective scenarios/dgx-h100.toml --op allreduce -b 8 -e 8G -f 2
./build/myriad collective scenarios/h100-x128.toml --op allreduce -b 8 -e 8G -f 2
./build/myriad collective scenarios/h100-x128-clos-2to1-flow.toml --op allreduce -b 64M -e 4G -f 8
./build/myriad simulate scenarios/llama3-8b-h100-x64.toml
./build/myriad simulate scenarios/mixtral-8x7b-h100-x64.toml
