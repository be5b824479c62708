"""Launch one case of a generated operator twice, so a profiler can capture the second (warm) launch.

Usage: python profile_case.py --op OP --case-index K [--dtype-index J] --json result.json

This file is fixed, not generated: it is copied into the sandbox next to `<op>_triton.py` and
`<op>_performance.py` and needs nothing but torch and those two modules.
"""

from __future__ import annotations

import argparse
import importlib
import json
import traceback
from typing import Any

SEED = 0


def main(argv: list[str] | None = None) -> int:
    """Run the requested case and write its outcome to the JSON path."""
    parser = argparse.ArgumentParser(description="Launch one operator case twice for a profiler.")
    parser.add_argument("--op", required=True)
    parser.add_argument("--case-index", type=int, required=True)
    parser.add_argument("--dtype-index", type=int, default=0)
    parser.add_argument("--json", required=True)
    args = parser.parse_args(argv)
    try:
        result = run_case(args.op, args.case_index, args.dtype_index)
    except Exception as exc:  # the generated modules may raise anything; it comes back as data
        traceback.print_exc()  # stderr is kept by the sandbox for diagnosis
        result = {"status": "error", "message": f"{type(exc).__name__}: {exc}"}
    with open(args.json, "w") as handle:
        json.dump(result, handle)
    return 0 if result["status"] == "pass" else 1


def run_case(op: str, case_index: int, dtype_index: int) -> dict[str, Any]:
    """Build the inputs of SPEC_CASES[case_index] x DTYPE_CASES[dtype_index] and call the wrapper twice."""
    import torch

    if not op.isidentifier():
        raise ValueError(f"operator name {op!r} is not a Python identifier")
    kernel_module = importlib.import_module(f"{op}_triton")
    perf_module = importlib.import_module(f"{op}_performance")
    shapes = _pick(perf_module.SPEC_CASES, case_index, "SPEC_CASES")
    dtypes = _pick(perf_module.DTYPE_CASES, dtype_index, "DTYPE_CASES")
    device = str(kernel_module.DEVICE)
    wrapper = getattr(kernel_module, op)
    params = dict(getattr(perf_module, "PARAMS", {}))
    inputs = perf_module.make_inputs(shapes, dtypes, SEED, device)

    # The first launch compiles and warms up; the profiler skips it and records the second one.
    wrapper(*inputs, **params)
    _synchronize(torch, device)
    wrapper(*inputs, **params)
    _synchronize(torch, device)
    return {"status": "pass", "op": op, "shapes": shapes, "dtypes": dtypes, "launches": 2}


def _pick(cases: list[dict[str, Any]], index: int, name: str) -> dict[str, Any]:
    if not 0 <= index < len(cases):
        raise IndexError(f"index {index} is out of range: {name} has {len(cases)} entries")
    return dict(cases[index])


def _synchronize(torch: Any, device: str) -> None:
    # Launches are asynchronous; waiting keeps each one inside its own call for the profiler.
    if device == "cpu":
        return
    backend = getattr(torch, device, None)  # torch.cuda, or torch.npu once torch_npu is imported
    if backend is None:
        raise RuntimeError(f"torch has no {device!r} backend to synchronize")
    backend.synchronize()


if __name__ == "__main__":
    raise SystemExit(main())
