#!/usr/bin/env bash
# Makes the project's PyTorch venv, .venv-torch/ (gitignored), with PyPI's default CUDA wheel of
# torch, the one users install. Idempotent. The nvidia-* wheels torch depends on are left out:
# Myriad's shims stand in for every NVIDIA library torch links (docs/pytorch.md), and they are
# ~3 GB. MYRIAD_TORCH_VERSION picks another torch (its triton pin must be given too).
set -euo pipefail
cd "$(dirname "$0")/.."

torch_version=${MYRIAD_TORCH_VERSION:-2.15.0}
triton_version=${MYRIAD_TRITON_VERSION:-3.9.0}  # torch 2.15.0's pin (its wheel metadata)
venv=.venv-torch

installed() {  # without importing torch: it needs the CUDA libraries only `myriad run` provides
  [[ -x $venv/bin/python ]] &&
    [[ -d $(echo "$venv"/lib/python3*/site-packages/torch-"$torch_version".dist-info) ]] &&
    [[ -d $(echo "$venv"/lib/python3*/site-packages/triton-"$triton_version".dist-info) ]]
}
installed && exit 0

echo "setup: installing torch $torch_version into $venv (PyPI's CUDA wheel, no nvidia-* wheels)"
[[ -x $venv/bin/python ]] || python3 -m venv "$venv"
pip=("$venv/bin/pip" install -q --disable-pip-version-check --no-warn-conflicts)
"${pip[@]}" --no-deps "torch==$torch_version" "triton==$triton_version"
# torch's own Python dependencies (setuptools>=77 for torch.compile's builds), and numpy,
# which torch uses when it is there.
"${pip[@]}" filelock typing-extensions sympy networkx jinja2 fsspec "setuptools>=77.0.3" numpy
installed || { echo "setup: torch $torch_version did not install into $venv" >&2; exit 1; }
