#!/usr/bin/env bash
# Sets everything up, builds with warnings as errors, runs the whole test suite, then the
# sanitizer build's tests and the fuzzers.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/setup_torch.sh
scripts/setup_test_tools.sh
scripts/build.sh -DMYRIAD_WERROR=ON -DMYRIAD_BUILD_TESTS=ON -DMYRIAD_BUILD_BENCH=ON
ctest --test-dir build --output-on-failure -j "$(nproc)"
# The emulator's tests again under AddressSanitizer and UndefinedBehaviorSanitizer, then each
# input reader's fuzzer for a minute (docs/testing.md).
scripts/sanitize.sh
scripts/fuzz.sh
