#!/usr/bin/env bash
# Sets everything up, builds with warnings as errors, and runs the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/setup_torch.sh
scripts/build.sh -DMYRIAD_WERROR=ON -DMYRIAD_BUILD_TESTS=ON -DMYRIAD_BUILD_BENCH=ON
ctest --test-dir build --output-on-failure -j "$(nproc)"
