# Sourced by the GPU scripts: put the carried packages (.site/ or .whl/) on PYTHONPATH and print the machine.
# Usage: . scripts/_device_env.sh OUT_DIR
if [ -f /tmp/site/.unpacked ]; then  # a later call on the same warm machine
  export PYTHONPATH=/tmp/site:$PWD
elif [ -f .site/site.tar.xz ]; then  # scripts/build_device_site.sh: our dependencies and Ray, unpacked
  mkdir -p /tmp/site && tar xJf .site/site.tar.xz -C /tmp/site && touch /tmp/site/.unpacked \
    && export PYTHONPATH=/tmp/site:$PWD || exit 1
elif [ -d .whl ]; then
  python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site $(ls .whl/*.whl .whl/fallback/*.whl 2>/dev/null) \
    && export PYTHONPATH=/tmp/site:$PWD || exit 1
else
  export PYTHONPATH=$PWD
fi
# The image ships PyTorch and Triton without .pyc files and the sandbox does not write them: byte-compile once,
# or every sandboxed run spends ~6 s compiling modules (docs/results.md, 2026-11-25). The carried packages too:
# sympy, which torch imports for shapes, cost each run 3.4 s of compiling until 2026-12-02.
# Into a prefix of its own: the image's package folders may not take the files (a run on 2026-12-02 still compiled
# 564 modules, 2.7 s); sandboxed runs read it (PYTHONPYCACHEPREFIX is passed) and write nothing there.
export PYTHONPYCACHEPREFIX=/tmp/pycache
python3 -m compileall -q -j 0 $(python3 -c "import os, torch, triton; print(os.path.dirname(torch.__file__), os.path.dirname(triton.__file__))") /tmp/site >/dev/null 2>&1 || true
export PYTHONUNBUFFERED=1 KERNELGEN_WORK_DIR=/tmp/kg-work
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv | tee "$1/gpu.txt"
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)" | tee -a "$1/gpu.txt"
(command -v ncu && ncu --version | tail -1) | tee -a "$1/gpu.txt"
