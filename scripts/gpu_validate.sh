#!/usr/bin/env bash
# Run `kernelgen run` on the GPU specs recorded in docs/results.md.
# On the lent device machine: wheels for what its image lacks travel in .whl/.
# Usage: scripts/gpu_validate.sh OUT_DIR [ROUNDS] [main | first | TASKBOOK_FILE]
set -uo pipefail
out=${1:?output folder}
rounds=${2:-3}
set_name=${3:-main}
mkdir -p "$out"
. scripts/_device_env.sh "$out"
export KERNELGEN_DATABASE_URL="sqlite:///$out/kernelgen.db"
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
