#!/usr/bin/env bash
# Sets everything up, builds, and runs the main job on the bundled default scenarios: predicted
# NCCL AllReduce on one DGX H100 node and on a 128-node H100 cluster, and one training
# iteration of Llama 3 8B on 64 H100 (`myriad simulate`).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh -DMYRIAD_BUILD_TESTS=OFF -DMYRIAD_BUILD_BENCH=OFF
./build/myriad check scenarios/dgx-h100.toml
./build/myriad collective scenarios/dgx-h100.toml --op allreduce -b 8 -e 8G -f 2
./build/myriad collective scenarios/h100-x128.toml --op allreduce -b 8 -e 8G -f 2
./build/myriad simulate scenarios/llama3-8b-h100-x64.toml
