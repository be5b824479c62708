"""Time variants of one op in turns, in one process: differences of 1% become findings, not noise.

    python3 scripts/bench_turns.py DIR [--rounds N] [--no-compile] [--per-call]   (the accelerator)

DIR holds one folder per op (as `bench_rows.py generate` or `bench_matmul.py` write them), each with a `default`
variant and any others beside it. Every variant, torch.compile of the baseline and eager are timed by
`do_bench` one after another, N rounds (default 5), and the medians printed with the spread, % of the measured
copy bandwidth and the ratio to torch.compile (to eager with --no-compile). With --per-call, each also runs
1000 calls back to back, host time included: a kernel faster on the device can be slower per call.
"""

from __future__ import annotations

import importlib.util
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import torch
import triton.testing


def load(path: Path, name: str) -> ModuleType:
    """Import a generated file under a name of its own (every variant's file has the same name)."""
    sys.path.insert(0, str(path.parent))  # the performance file imports its kernel and baseline by name
    try:
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.pop(0)


def per_call_ms(fn: Callable[[], object], calls: int = 1000) -> float:
    """Return the wall time per call of `calls` back-to-back calls, host included."""
    for _ in range(20):
        fn()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - start) / calls * 1e3


def bench(fn: Callable[[], object]) -> float:
    """Return do_bench's median in ms."""
    return float(triton.testing.do_bench(fn, warmup=50, rep=200, return_mode="median"))


def time_group(group: Path, rounds: int, with_compile: bool, per_call: bool, copy_gbs: float) -> list[dict]:
    """Time one op's variants, torch.compile and eager in turns; return a row per contender."""
    op = json.loads((group / "default" / "meta.json").read_text())["op"]
    for name in (f"{op}_triton", f"{op}_baseline"):
        sys.modules.pop(name, None)  # another folder's op of the same name (sum over a dim, and over all)
    perf = load(group / "default" / f"{op}_performance.py", f"perf_{group.name}")
    inputs = perf.make_inputs(perf.SPEC_CASES[0], perf.DTYPE_CASES[0], seed=0, device=perf.DEVICE)
    params = perf.PARAMS
    want = perf.reference(*inputs, **params)
    contenders: dict[str, Callable] = {}
    for variant in sorted(p for p in group.iterdir() if (p / "meta.json").exists()):
        try:
            kernel = getattr(load(variant / f"{op}_triton.py", f"kernel_{group.name}_{variant.name}"), op)
            got = kernel(*inputs, **params)
            agrees = torch.allclose(got.float(), want.float(), rtol=2e-2, atol=2e-2)
        except Exception as error:  # one variant that fails to compile, launch or shape its output spares the rest
            print(f"{group.name}/{variant.name}: {type(error).__name__}: {str(error)[:200]}, not timed", flush=True)
            continue
        if not agrees:
            worst = (got.float() - want.float()).abs().max().item()
            print(f"{group.name}/{variant.name}: output differs from the baseline (max abs {worst:.3g}), not timed",
                  flush=True)
            continue
        contenders[variant.name] = kernel
    if with_compile:
        compiled = torch.compile(perf.reference, dynamic=False)
        compiled(*inputs, **params)
        contenders["~torch.compile"] = compiled
    contenders["~eager"] = perf.reference
    n_bytes = perf.bytes_moved(inputs, want)
    device: dict[str, list[float]] = {name: [] for name in contenders}
    host: dict[str, list[float]] = {name: [] for name in contenders}
    for _ in range(rounds):
        for name, fn in contenders.items():
            device[name].append(bench(lambda fn=fn: fn(*inputs, **params)))
            if per_call:
                host[name].append(per_call_ms(lambda fn=fn: fn(*inputs, **params)))
    peer = statistics.median(device["~torch.compile" if with_compile else "~eager"])
    rows = []
    for name, times in device.items():
        ms = statistics.median(times)
        row = {"op": group.name, "variant": name, "ms": round(ms, 5), "min": round(min(times), 5),
               "max": round(max(times), 5), "pct_of_copy": round(100 * n_bytes / (ms * 1e-3) / 1e9 / copy_gbs, 1),
               "x_peer": round(peer / ms, 3)}
        if per_call:
            row["per_call_ms"] = round(statistics.median(host[name]), 5)
        rows.append(row)
        print(json.dumps(row), flush=True)
    return rows


def main() -> None:
    """Time every op folder under DIR."""
    folder = Path(sys.argv[1])
    rounds = int(sys.argv[sys.argv.index("--rounds") + 1]) if "--rounds" in sys.argv else 5
    source = torch.randn(64 * 1024 * 1024, device="cuda" if torch.cuda.is_available() else "cpu")
    target = torch.empty_like(source)
    copy_gbs = 2 * source.numel() * 4 / (bench(lambda: target.copy_(source)) * 1e-3) / 1e9
    name = torch.cuda.get_device_name() if torch.cuda.is_available() else "cpu"
    print(f"{name}: copy {copy_gbs:.0f} GB/s", flush=True)
    for group in sorted(p for p in folder.iterdir() if (p / "default" / "meta.json").exists()):
        time_group(group, rounds, "--no-compile" not in sys.argv, "--per-call" in sys.argv, copy_gbs)


if __name__ == "__main__":
    main()
