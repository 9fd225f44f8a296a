#!/usr/bin/env bash
# Makes the project's PyTorch venv, .venv-torch/ (gitignored), with PyPI's default CUDA wheel of
# torch, the one users install. Idempotent. The nvidia-* wheels torch depends on are left out:
# Myriad's shims stand in for every NVIDIA library torch links (docs/pytorch.md), and they are
# ~3 GB. MYRIAD_TORCH_VERSION picks another torch (its triton pin must be given too).
set -euo pipefail
cd "$(dirname "$0")/.."

torch_version=${MYRIAD_TORCH_VERSION:-2.15.0}
triton_version=${MYRIAD_TRITON_VERSION:-3.9.0}  # torch 2.15.0's pin (its wheel metadata)
torchtitan_version=0.3.0
venv=.venv-torch

has() { [[ -d $(echo "$venv"/lib/python3*/site-packages/"$1".dist-info) ]]; }
installed() {  # without importing torch: it needs the CUDA libraries only `myriad run` provides
  [[ -x $venv/bin/python ]] && has "torch-$torch_version" && has "triton-$triton_version" &&
    has "torchtitan-$torchtitan_version"
}
installed && exit 0

echo "setup: installing torch $torch_version and torchtitan $torchtitan_version into $venv (PyPI's CUDA wheel, no nvidia-* wheels)"
[[ -x $venv/bin/python ]] || python3 -m venv "$venv"
pip=("$venv/bin/pip" install -q --disable-pip-version-check --no-warn-conflicts)
"${pip[@]}" --no-deps "torch==$torch_version" "triton==$triton_version"
# torch's own Python dependencies (setuptools>=77 for torch.compile's builds), and numpy,
# which torch uses when it is there.
"${pip[@]}" filelock typing-extensions sympy networkx jinja2 fsspec "setuptools>=77.0.3" numpy
# torchtitan (PyTorch's reference trainer, examples/torchtitan/) and its requirements, pinned:
# those that require torch without their dependencies (pip would fetch the nvidia-* wheels),
# the rest with theirs. wandb, which torchtitan imports only when a run logs to it, is left out.
"${pip[@]}" --no-deps "torchtitan==$torchtitan_version" torchdata==0.11.0 \
  torch_checkpointing==0.1.1 spmd_types==0.2.3
"${pip[@]}" datasets==4.7.0 tokenizers==0.23.3 safetensors==0.8.0 tyro==1.0.17 \
  tensorboard==2.21.0 einops==0.8.2 pillow requests urllib3
installed || { echo "setup: torch $torch_version did not install into $venv" >&2; exit 1; }
