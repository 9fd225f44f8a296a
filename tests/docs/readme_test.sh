#!/usr/bin/env bash
# The README stands alone: no path outside the repository, and every repository path it names
# exists (a newcomer follows them from a fresh clone).
set -euo pipefail
cd "$(dirname "$0")/../.."
failed=0
if grep -nE '\.\./|(^|[^a-z])shared/' README.md; then
  echo "FAIL: README.md points outside the repository (the lines above)"
  failed=1
fi
top='(docs|scripts|scenarios|examples|traces|profiles|tests|bench|netmodel|emulator|interpose)'
while read -r path; do
  path=${path%.}
  [[ -e $path ]] || { echo "FAIL: README.md names $path, which does not exist"; failed=1; }
done < <(grep -oE "(^|[ \`(])$top/[A-Za-z0-9_./-]*[A-Za-z0-9_/]" README.md | sed -E 's/^[ `(]//' | sort -u)
# A path that only exists once built (build/...) is not checked; the two commands are.
for script in scripts/demo.sh scripts/test.sh; do
  grep -q "$script" README.md || { echo "FAIL: README.md does not give $script"; failed=1; }
done
if ((failed)); then echo "readme: 0 passed, 1 failed"; exit 1; fi
echo "readme: 1 passed, 0 failed"
