#!/usr/bin/env bash
# The HTML reports in a real headless Chromium (Debian's chromium): each page renders without a
# console error, and its screenshot shows the charts (pixels of their fixed colours, counted).
# A control page with a deliberate console error must be caught, so the check can fail.
# Skipped (exit 77) only if chromium cannot be installed.
set -euo pipefail
cd "$(dirname "$0")/../.."
myriad=${MYRIAD_BINARY:-$PWD/build/myriad}
work=$(mktemp -d /tmp/myriad-html.XXXXXX)
trap 'rm -rf "$work"' EXIT

if ! command -v chromium >/dev/null; then
  if [[ $(id -u) -eq 0 ]]; then
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
        --no-install-recommends chromium fonts-dejavu-core; } >"$work/install.log" 2>&1 || true
  fi
  command -v chromium >/dev/null ||
    { echo "SKIP: Debian's chromium cannot be installed on this machine"; exit 77; }
fi

# Renders $1 (a file) to $2.png; its console messages (errors included) to $2.log. The window
# is tall enough for the whole simulate page: its last chart (the links) sat at the bottom edge
# of a 2600-pixel window, where a line more text above it cut it off.
render() {
  timeout 120 chromium --headless=new --no-sandbox --disable-gpu --hide-scrollbars \
    --user-data-dir="$work/profile" --enable-logging=stderr --v=0 \
    --window-size=1200,"${3:-4000}" --screenshot="$2.png" "file://$1" 2>"$2.log" >/dev/null
}
console_errors() { grep -E 'CONSOLE|Uncaught' "$1.log" || true; }

fail() { echo "FAIL: $*"; exit 1; }

# The control: a console error the check must see.
printf '<!DOCTYPE html><html><body><p>x</p><script>console.error("deliberate");undefinedCall();</script></body></html>\n' >"$work/control.html"
render "$work/control.html" "$work/control" 600
[[ -n $(console_errors "$work/control") ]] || fail "a deliberate console error went unnoticed"

"$myriad" simulate scenarios/llama3-8b-h100-x64.toml --fidelity flow --html "$work/simulate.html" >/dev/null
"$myriad" replay tests/emulator/cli/data/overlap.jsonl --scenario scenarios/dgx-h100.toml \
  --html "$work/replay.html" >/dev/null
"$myriad" sweep tests/emulator/cli/data/sweep-small.toml --out "$work/sweep" >/dev/null
# A live program's page too, where the examples were built (they need the CUDA toolkit).
ddp_train=$(dirname "$myriad")/examples/ddp_train
if [[ -x $ddp_train ]]; then
  "$myriad" run scenarios/h100-x16.toml --fold dp --html "$work/run.html" -- "$ddp_train" \
    --steps 3 >/dev/null 2>&1
fi
grep -q 'http' <(grep -v 'xmlns="http://www.w3.org/2000/svg"' "$work/simulate.html") &&
  fail "the simulate page refers to a network address"

check() {  # page, then pairs of colour and the fewest pixels of it the screenshot must have
  local page=$1 shot=$work/$(basename "$1" .html)
  shift
  render "$page" "$shot"
  [[ -s $shot.png ]] || fail "$page: no screenshot"
  local errors
  errors=$(console_errors "$shot")
  [[ -z $errors ]] || fail "$page: console errors: $errors"
  local colours=() minimums=()
  while (($#)); do colours+=("$1"); minimums+=("$2"); shift 2; done
  local counts
  counts=$(python3 tests/scripts/png_colours.py "$shot.png" "${colours[@]}")
  for i in "${!colours[@]}"; do
    local n
    n=$(python3 -c "import json,sys; print(json.loads(sys.argv[1])[sys.argv[2]])" "$counts" "${colours[$i]}")
    ((n >= minimums[i])) || fail "$page: ${colours[$i]} on $n pixels, expected at least ${minimums[$i]} ($counts)"
  done
  echo "$page: $counts"
}
# Compute (green) in the breakdown and timeline, TP communication (orange), the links (yellow).
check "$work/simulate.html" 1b9e77 20000 d95f02 5000 e6ab02 5000
check "$work/replay.html" 1b9e77 5000
[[ -f $work/run.html ]] && check "$work/run.html" 1b9e77 5000
# The sweep page: bars (green), the best point (orange).
check "$work/sweep/results.html" 1b9e77 2000 d95f02 200
echo "html in chromium: 1 passed, 0 failed"
