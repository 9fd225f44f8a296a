#!/usr/bin/env bash
# Builds the emulator, its tests and the fuzz targets with clang under AddressSanitizer and
# UndefinedBehaviorSanitizer into build-asan/ (no CUDA shims: they run inside the programs
# under test), then runs those tests there. Extra arguments go to CMake's configure.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ \
  -DMYRIAD_SANITIZE=address,undefined -DMYRIAD_BUILD_FUZZERS=ON -DMYRIAD_WITH_CUDA=OFF \
  -DMYRIAD_BUILD_BENCH=OFF -DMYRIAD_BUILD_TESTS=ON -DMYRIAD_WERROR=ON "$@" >/dev/null
cmake --build build-asan -j "$(nproc)"
# A test program that crashes on purpose must die of its signal, not of ASan's report.
export ASAN_OPTIONS=handle_segv=0
export UBSAN_OPTIONS=print_stacktrace=1
ctest --test-dir build-asan --output-on-failure -j "$(nproc)"
