#!/usr/bin/env bash
# Myriad gating its own predictions (docs/ci.md).
#
#   scripts/baselines.sh check [NAME]    run each bundled run and gate it against its committed
#                                        baseline in tests/baselines/: any change fails
#   scripts/baselines.sh update [NAME]   rewrite the baselines (after a deliberate model change;
#                                        commit them with it, so the diff shows what moved)
#   scripts/baselines.sh list            the names
#
# MYRIAD (default build/myriad) and DDP_TRAIN (default build/examples/ddp_train) locate the
# binaries; the run-* baseline is skipped when the example was not built (no CUDA toolkit).
set -euo pipefail
cd "$(dirname "$0")/.."
MYRIAD=${MYRIAD:-build/myriad}
DDP_TRAIN=${DDP_TRAIN:-build/examples/ddp_train}
BASELINES=tests/baselines

# name|how to produce its report into $OUT
RUNS=(
  "collective-dgx-h100-allreduce|\"$MYRIAD\" collective scenarios/dgx-h100.toml --op allreduce -b 8 -e 8G -f 4 --json > \"\$OUT\""
  "collective-h100-x128-alltoall|\"$MYRIAD\" collective scenarios/h100-x128.toml --op alltoall -b 1M -e 1G -f 32 --json > \"\$OUT\""
  "replay-two-rank-overlap|\"$MYRIAD\" replay traces/two-rank-overlap.jsonl --scenario scenarios/dgx-h100.toml --report \"\$OUT\" > /dev/null"
  "replay-flow-contention|\"$MYRIAD\" replay traces/flow-contention.jsonl --scenario scenarios/h100-x16.toml --fidelity flow --report \"\$OUT\" > /dev/null"
  "simulate-llama3-8b-h100-x64|\"$MYRIAD\" simulate scenarios/llama3-8b-h100-x64.toml --report \"\$OUT\" > /dev/null"
  "simulate-mixtral-8x7b-h100-x64|\"$MYRIAD\" simulate scenarios/mixtral-8x7b-h100-x64.toml --report \"\$OUT\" > /dev/null"
  "run-ddp-train-h100-x16|\"$MYRIAD\" run scenarios/h100-x16.toml --processes 8 --report \"\$OUT\" -- \"$DDP_TRAIN\" --steps 3 > /dev/null"
)

mode=${1:-check}
only=${2:-}
case "$mode" in
  check | update | list) ;;
  *) echo "usage: scripts/baselines.sh check|update|list [NAME]" >&2; exit 2 ;;
esac
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
found=0
status=0
for entry in "${RUNS[@]}"; do
  name=${entry%%|*}
  command=${entry#*|}
  [[ -n "$only" && "$name" != "$only" ]] && continue
  found=1
  if [[ "$mode" == list ]]; then echo "$name"; continue; fi
  if [[ "$name" == run-* && ! -x "$DDP_TRAIN" ]]; then
    echo "$name: skipped ($DDP_TRAIN not built)"
    continue
  fi
  OUT="$tmp/$name.json"
  if ! (export OUT; eval "$command"); then
    echo "$name: the run failed: $command" >&2
    status=1
    continue
  fi
  if [[ "$mode" == update ]]; then
    cp "$OUT" "$BASELINES/$name.json"
    echo "$name: baseline written"
  elif ! "$MYRIAD" gate --baseline "$BASELINES/$name.json" --current "$OUT" --metric '*' \
      --max-change 0%; then
    echo "$name: the prediction moved; if that is intended, run scripts/baselines.sh update $name and commit the baseline" >&2
    status=1
  fi
done
if [[ "$found" == 0 ]]; then echo "no baseline named '$only' (scripts/baselines.sh list)" >&2; exit 2; fi
exit "$status"
