"""Measure host-side cost per call of a generated wrapper and its baseline (CUDA).

Usage: python scripts/launch_overhead.py JOB_DIR OP
Prints microseconds per call when the GPU is not the limit (tiny input).
"""

import sys
import time

import torch

sys.path.insert(0, sys.argv[1])
op = sys.argv[2]
kernel = getattr(__import__(f"{op}_triton"), op)
reference = getattr(__import__(f"{op}_baseline"), op)
spec_cases = __import__(f"{op}_accuracy").EDGE_CASES
make_inputs = __import__(f"{op}_accuracy").make_inputs
dtypes = __import__(f"{op}_accuracy").DTYPE_CASES[0]
inputs = make_inputs(spec_cases[0], dtypes, 0, "cuda")
for fn, name in ((kernel, "triton wrapper"), (reference, "eager baseline")):
    for _ in range(100):
        fn(*inputs)
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(2000):
        fn(*inputs)
    torch.cuda.synchronize()
    print(f"{op} {name}: {1e6 * (time.perf_counter() - start) / 2000:.1f} us per call (host-bound)")
