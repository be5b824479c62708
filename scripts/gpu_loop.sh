#!/usr/bin/env bash
# The optimization loop and the pattern store on a GPU (commands and figures in docs/optimization.md).
# Usage: scripts/gpu_loop.sh OUT TARGET "SPEC A" "SPEC B"
#   A:  SPEC A from a deliberately poor configuration, database 1 (empty at the start)
#   B:  SPEC B from the default start, database 1 (holds what job A taught the pattern store)
#   C:  SPEC B from the default start, database 2 (empty: the control for B)
set -uo pipefail
out=${1:?output folder}; target=${2:?target speedup}; spec_a=${3:?spec A}; spec_b=${4:?spec B}
mkdir -p "$out"
. scripts/_device_env.sh "$out"

job() {  # job NAME DATABASE SPEC [kernelgen run options...]
  local name=$1 db=$2 spec=$3; shift 3
  local start; start=$(date +%s)
  KERNELGEN_DATABASE_URL="sqlite:///$out/$db.db" timeout 240 python3 -m kernelgen run "$spec" --device cuda \
    --rounds 5 --target-speedup "$target" --out "$out/$name" "$@" 2>&1 | tee "$out/$name.txt"
  echo "job $name took $(( $(date +%s) - start )) s" | tee -a "$out/$name.txt"
}
job A db1 "$spec_a" --initial-config "flat: BLOCK_SIZE=256, NUM_WARPS=8"
job B db1 "$spec_b"
job C db2 "$spec_b"
KERNELGEN_DATABASE_URL="sqlite:///$out/db1.db" python3 -m kernelgen patterns 2>&1 | tee "$out/patterns.txt"
