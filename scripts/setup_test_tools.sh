#!/usr/bin/env bash
# Installs what only the tests need, from Debian's packages, if missing: Chromium (the HTML
# reports are rendered in a real headless browser) and Slurm with munge (sweeps submitted to a
# real one-node Slurm). Idempotent. Without root or the packages, the tests that need them say
# so and are skipped; everything else runs.
set -euo pipefail
packages=(chromium fonts-dejavu-core slurm-wlm munge)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
((${#missing[@]} == 0)) && exit 0
if [[ $(id -u) -ne 0 ]] && ! command -v sudo >/dev/null; then
  echo "setup: cannot install ${missing[*]} without root; the tests that need them are skipped" >&2
  exit 0
fi
sudo=""
[[ $(id -u) -eq 0 ]] || sudo="sudo"
echo "setup: installing ${missing[*]} (for the tests)"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq || true
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" ||
  echo "setup: could not install ${missing[*]}; the tests that need them are skipped" >&2
