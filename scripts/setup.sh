#!/usr/bin/env bash
# Installs what Myriad needs from Debian's packages, if missing. Idempotent, non-interactive.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config
  libboost-fiber-dev libboost-context-dev libboost-dev
  libtomlplusplus-dev libspdlog-dev libfmt-dev nlohmann-json3-dev zlib1g-dev libzstd-dev libsqlite3-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libopenmpi-dev openmpi-bin
  clang libclang-rt-14-dev
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
  exit 0
fi

echo "setup: installing ${missing[*]}"
sudo=""
if [[ $(id -u) -ne 0 ]]; then
  command -v sudo >/dev/null || { echo "setup: need root (or sudo) to install: ${missing[*]}" >&2; exit 1; }
  sudo="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
