#!/usr/bin/env bash
# Where a job's time goes on a GPU (issue 50, item 2): torch's import, one 1-round job with and without the job's
# compile cache, a 5-round job, and a profile of the first job's accuracy and performance files.
# Usage (on the device machine, from the repository root): bash scripts/device_job_timing.sh "$OUT"
set -uo pipefail
out=$1
. scripts/_device_env.sh "$out"
export KERNELGEN_SANDBOX_ALLOW_UNISOLATED=true KERNELGEN_KEEP_WORK_DIRS=1 KERNELGEN_DATABASE_URL="sqlite:///$out/jobs.db"
python3 - <<'PY' | tee "$out/import.txt"
import subprocess, sys, time
for what in ("import torch", "import torch, triton", "import torch, triton, triton.language"):
    t = time.monotonic(); subprocess.run([sys.executable, "-c", what], check=True)
    print(f"{what}: {time.monotonic() - t:.2f} s")
PY
job() {  # name, warm start on/off, rounds, spec
  local name=$1 warm=$2 rounds=$3 spec=$4
  local t0=$(date +%s.%N)
  KERNELGEN_SANDBOX_WARM_START=$warm KERNELGEN_WORK_DIR="/tmp/kgw-$name" python3 -c "
import logging, sys
logging.basicConfig(level=logging.INFO, format='%(asctime)s %(name)s %(message)s', filename='$out/$name.runs.log')
sys.argv = ['kernelgen', 'run', sys.argv[1], '--device', 'cuda', '--rounds', '$rounds', '--out', '$out/$name', '--force']
from kernelgen.cli import app
app()" "$spec" > "$out/$name.log" 2>&1
  local t1=$(date +%s.%N)
  python3 - "$out/$name/report.json" "$name" "$t0" "$t1" <<'PY' | tee -a "$out/summary.txt"
import json, sys
r = json.load(open(sys.argv[1])); s = r.get("stage_seconds", {})
print(f"{sys.argv[2]}: {r['status']} wall {float(sys.argv[4]) - float(sys.argv[3]):.1f} s; stages {s.get('stages')}; rounds {s.get('rounds')}")
PY
  grep -h "ran " "$out/$name.runs.log" | sed 's/^.*ran /  ran /' | tee -a "$out/summary.txt"
}
for spec in ${JOBS:-relu_cold:off:1 relu_warm:on:1 softmax5:on:5 layernorm1:on:1}; do
  IFS=: read -r name warm rounds <<<"$spec"
  case $name in
    relu*) text="ReLU on a float16 tensor x of shape [4096, 4096]" ;;
    softmax*) text="Row softmax over the last dim of x [4096, 4096] float32" ;;
    layernorm*) text="LayerNorm over the last dim of x [2048, 3000] bf16 with weight and bias [3000], eps 1e-5" ;;
  esac
  job "$name" "$warm" "$rounds" "$text"
done
# The first job's accuracy and performance files, profiled where they ran.
for stage in accuracy performance; do
  dir=$(ls -d /tmp/kgw-relu_warm/job-*/round-0-$stage | head -1)
  (cd "$dir" && TRITON_CACHE_DIR=/tmp/tc-$stage python3 -m cProfile -s cumtime relu_$stage.py --json /tmp/p.json 2>&1 | head -45) > "$out/profile_$stage.txt"
done
du -sh /tmp/kgw-relu_warm/job-*/.compile-cache 2>&1 | tee -a "$out/summary.txt"
