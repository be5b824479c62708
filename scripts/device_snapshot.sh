#!/usr/bin/env bash
# Copy HEAD plus the named working-tree files into .snap/repo (ignored through .git/info/exclude), so a device call
# runs exactly those changes while other edits in this checkout are in progress. Carry ".snap" (and ".site").
# Usage: scripts/device_snapshot.sh FILE...
set -euo pipefail
grep -qx "/.snap/" .git/info/exclude 2>/dev/null || echo "/.snap/" >> .git/info/exclude
rm -rf .snap/repo && mkdir -p .snap/repo
git archive HEAD | tar -x -C .snap/repo
for file in "$@"; do mkdir -p ".snap/repo/$(dirname "$file")" && cp "$file" ".snap/repo/$file"; done
