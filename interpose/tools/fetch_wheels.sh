#!/usr/bin/env bash
# Downloads and unpacks the nvidia-* wheels a torch release depends on, for generate_exports.py
# --wheels: the shims' export lists for cuFile, cuSPARSELt, NVSHMEM and NCCL come from them.
#   interpose/tools/fetch_wheels.sh DIR [TORCH_VERSION]      (default torch 2.15.0)
#   python3 interpose/tools/generate_exports.py --wheels DIR
set -euo pipefail
dir=${1:?usage: fetch_wheels.sh DIR [TORCH_VERSION]}
torch_version=${2:-2.15.0}
mkdir -p "$dir/downloads"
# torch's own requirements name the exact nvidia-* releases it was built against.
requirements=$(pip download -q --no-deps "torch==$torch_version" -d "$dir/downloads" >/dev/null &&
  unzip -p "$dir"/downloads/torch-"$torch_version"-*.whl "torch-$torch_version.dist-info/METADATA" |
  sed -n 's/^Requires-Dist: \(nvidia-[a-z0-9-]*==[0-9.]*\).*/\1/p')
pip download -q --no-deps -d "$dir/downloads" $requirements
for wheel in "$dir"/downloads/nvidia_*.whl; do unzip -q -o "$wheel" -d "$dir"; done
echo "unpacked into $dir: $(echo $requirements)"
