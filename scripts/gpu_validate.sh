#!/usr/bin/env bash
# Run `kernelgen run` on the GPU specs recorded in docs/results.md.
# On the lent device machine: wheels for what its image lacks travel in .whl/.
# Usage: scripts/gpu_validate.sh OUT_DIR [ROUNDS] [main | first | TASKBOOK_FILE]
set -uo pipefail
out=${1:?output folder}
rounds=${2:-3}
set_name=${3:-main}
mkdir -p "$out"
if [ -d .whl ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl .whl/fallback/*.whl \
    && export PYTHONPATH=/tmp/site:$PWD || exit 1
else
  export PYTHONPATH=$PWD
fi
export PYTHONUNBUFFERED=1 KERNELGEN_DATABASE_URL="sqlite:///$out/kernelgen.db" KERNELGEN_WORK_DIR=/tmp/kg-work
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv | tee "$out/gpu.txt"
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)" | tee -a "$out/gpu.txt"
if [ "$set_name" = main ] || [ "$set_name" = first ]; then
  specs=(
    "fused bias-add + GELU, x [8192, 4096] fp16, bias [4096]"
    "ReLU on a float32 tensor x of shape [8192, 8192]"
    "SwiGLU: out = silu(gate) * up, gate and up [4096, 11008] bf16"
    "y = residual + alpha * y_in with alpha = 0.5, residual and y_in float16 [8192, 4096]"
    "x * scale[c] + shift[c] for x NCHW [32, 256, 56, 56] fp32, scale and shift [256]"
  )
  [ "$set_name" = first ] && specs=("${specs[0]}")
  for i in "${!specs[@]}"; do
    timeout 300 python3 -m kernelgen run "${specs[$i]}" --device cuda --rounds "$rounds" --out "$out/jobs/spec$i" 2>&1 \
      | tee -a "$out/log.txt"
  done
else
  timeout 500 python3 -m kernelgen run --file "$set_name" --device cuda --rounds "$rounds" --out "$out/jobs" 2>&1 | tee -a "$out/log.txt"
fi
