#!/usr/bin/env bash
# `myriad sweep --slurm` on a real Slurm: a one-node cluster on this machine
# (scripts/slurm_local.sh), the job array submitted and waited for, its results collected and
# compared with the same sweep run locally. Skipped (exit 77) only if Slurm cannot be installed.
set -euo pipefail
cd "$(dirname "$0")/../.."
myriad=${MYRIAD_BINARY:-$PWD/build/myriad}
sweep=tests/emulator/cli/data/sweep-small.toml
work=$(mktemp -d /tmp/myriad-sweep-slurm.XXXXXX)
export MYRIAD_SLURM_DIR=$work/slurm
cleanup() { scripts/slurm_local.sh stop || true; rm -rf "$work"; }
trap cleanup EXIT

status=0
started=$(scripts/slurm_local.sh start) || status=$?
if ((status == 3)); then
  echo "SKIP: Slurm (Debian's slurm-wlm and munge) cannot be installed on this machine"
  exit 77
fi
((status == 0)) || { echo "FAIL: the local Slurm did not start"; exit 1; }
export "${started?}"  # SLURM_CONF=...

"$myriad" sweep "$sweep" --out "$work/local" >"$work/local.txt"
"$myriad" sweep "$sweep" --slurm --jobs 2 --out "$work/slurm-run" >"$work/prepare.txt"
grep -q '^#SBATCH --array=0-17%2$' "$work/slurm-run/sweep.sbatch" ||
  { echo "FAIL: the job array does not cover the 18 points"; cat "$work/slurm-run/sweep.sbatch"; exit 1; }
# Submitted from elsewhere: the tasks must not depend on the submitting directory.
(cd / && timeout 300 sbatch --wait "$work/slurm-run/sweep.sbatch") >"$work/sbatch.txt" 2>&1 ||
  { echo "FAIL: the array did not complete"; cat "$work/sbatch.txt"; sacct 2>/dev/null || true; exit 1; }
tasks=$(ls "$work/slurm-run/points"/slurm-*.out | wc -l)
((tasks == 18)) || { echo "FAIL: $tasks task logs, expected 18"; exit 1; }
"$myriad" sweep collect "$work/slurm-run" >"$work/collect.txt"
if ! cmp -s "$work/local/results.json" "$work/slurm-run/results.json"; then
  echo "FAIL: Slurm's results differ from the local run's"
  diff "$work/local/results.json" "$work/slurm-run/results.json" | head -20
  exit 1
fi
grep -q '^best by highest tokens_per_second: point 7 ' "$work/collect.txt" ||
  { echo "FAIL: collect names another best point"; cat "$work/collect.txt"; exit 1; }
echo "sweep on Slurm: 1 passed, 0 failed"
