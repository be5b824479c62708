#!/usr/bin/env bash
# Part of the conformance suite in one device call, cut at a time limit; the report is written either way.
# Usage: bash scripts/device_conformance_part.sh OUT SUITE.jsonl SECONDS [JOBS]
set -uo pipefail
out=$1 suite=$2 seconds=$3 jobs=${4:-4}
. scripts/_device_env.sh "$out"
export KERNELGEN_SANDBOX_ALLOW_UNISOLATED=true KERNELGEN_DATABASE_URL="sqlite:///$out/conf.db"
timeout "$seconds" python3 -m kernelgen bench "$suite" --device cuda --rounds 1 -j "$jobs" --out "$out/conf" \
  > "$out/conf.log" 2>&1
python3 -m kernelgen.conformance "$out/conf" --suite "$suite" --device cuda >> "$out/conf.log" 2>&1
tail -3 "$out/conf.log"
