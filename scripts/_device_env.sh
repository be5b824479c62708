# Sourced by the GPU scripts: put the carried wheels (.whl/) on PYTHONPATH and print the machine.
# Usage: . scripts/_device_env.sh OUT_DIR
if [ -d .whl ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl .whl/fallback/*.whl \
    && export PYTHONPATH=/tmp/site:$PWD || exit 1
else
  export PYTHONPATH=$PWD
fi
export PYTHONUNBUFFERED=1 KERNELGEN_WORK_DIR=/tmp/kg-work
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv | tee "$1/gpu.txt"
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)" | tee -a "$1/gpu.txt"
(command -v ncu && ncu --version | tail -1) | tee -a "$1/gpu.txt"
