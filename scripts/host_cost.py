"""Split a generated kernel's time into host cost and device time (CUDA).

    python scripts/host_cost.py FOLDER OP "64,4096" "8192,4096"

Prints the wrapper's and the eager baseline's host cost per call on a tiny input (the first shape: the GPU is
never the limit), then on the large input (the second shape) the median time as a job measures it (do_bench)
and the device time alone (the same call captured in a CUDA graph and replayed). Single-input float32 ops.
"""

import importlib.util
import sys
import time

import torch
from triton.testing import do_bench


def load(folder: str, module: str, op: str):
    """Import one generated file and return its entry point."""
    sys.path.insert(0, folder)
    spec = importlib.util.spec_from_file_location(module, f"{folder}/{module}.py")
    loaded = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(loaded)
    return getattr(loaded, op)


def host_us(fn, x: torch.Tensor, calls: int = 2000) -> float:
    """Return microseconds per call when the host is the limit."""
    for _ in range(200):
        fn(x)
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(calls):
        fn(x)
    torch.cuda.synchronize()
    return 1e6 * (time.perf_counter() - start) / calls


def graphed_ms(fn, x: torch.Tensor) -> float:
    """Return the median device time of one call, replayed from a CUDA graph."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        fn(x)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn(x)
    return do_bench(graph.replay, warmup=25, rep=100, return_mode="median")


if __name__ == "__main__":
    folder, op = sys.argv[1], sys.argv[2]
    tiny, large = ([int(d) for d in s.split(",")] for s in sys.argv[3:5])
    kernel, baseline = load(folder, f"{op}_triton", op), load(folder, f"{op}_baseline", op)
    x_tiny, x_large = torch.randn(tiny, device="cuda"), torch.randn(large, device="cuda")
    for name, fn in (("triton wrapper", kernel), ("eager baseline", baseline)):
        timed = [do_bench(lambda fn=fn: fn(x_large), warmup=25, rep=100, return_mode="median") for _ in range(3)]
        print(f"{op} {name}: host {host_us(fn, x_tiny):.1f} us/call; {large}: do_bench "
              f"{', '.join(f'{t:.4f}' for t in timed)} ms; graphed {graphed_ms(fn, x_large):.4f} ms")
