"""Accuracy test for prefix_sum: the Triton kernel against the PyTorch reference in float64.

    python prefix_sum_accuracy.py [--json result.json]
"""

import contextlib
import json
import sys

import torch
from prefix_sum_baseline import prefix_sum as reference
from prefix_sum_triton import DEVICE, prefix_sum

SPEC_CASES = [{"x": [8, 1000]}, {"x": [3, 4096]}]
EDGE_CASES = [{"x": [1, 1]}, {"x": [5, 1023]}, {"x": [2, 3, 17]}]
DTYPE_CASES = [{"x": "float32"}, {"x": "float16"}]
SEEDS = [0, 1, 2]
TOLERANCES = {"float32": (1e-4, 1e-4), "float16": (1e-2, 1e-2)}


@contextlib.contextmanager
def poisoned_allocations():
    """Fill tensors from torch.empty* with NaN while the kernel runs."""
    originals = {name: getattr(torch, name) for name in ("empty", "empty_like")}

    def poisoning(original):
        def allocate(*args, **kwargs):
            tensor = original(*args, **kwargs)
            if tensor.is_floating_point():
                tensor.fill_(float("nan"))
            return tensor

        return allocate

    for name, original in originals.items():
        setattr(torch, name, poisoning(original))
    try:
        yield
    finally:
        for name, original in originals.items():
            setattr(torch, name, original)


def check_case(shapes, dtypes, seed):
    """Compare one case with the float64 reference."""
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(shapes["x"], generator=generator).to(getattr(torch, dtypes["x"])).to(DEVICE)
    with poisoned_allocations():
        out = prefix_sum(x)
    expected = reference(x.cpu().double())
    got = out.cpu().double()
    rtol, atol = TOLERANCES[dtypes["x"]]
    error = (got - expected).abs()
    bad = ~(error <= atol + rtol * expected.abs())
    return {"shapes": shapes, "dtypes": dtypes, "seed": seed, "status": "fail" if bool(bad.any()) else "pass",
            "max_abs_err": float(error.nan_to_num(float("inf")).max()),
            "max_rel_err": float((error / expected.abs().clamp_min(1e-12)).nan_to_num(float("inf")).max()),
            "message": f"{int(bad.sum())} mismatches" if bool(bad.any()) else ""}


def main():
    """Run every case and seed; write the JSON result when asked."""
    cases = []
    for shapes in SPEC_CASES + EDGE_CASES:
        for dtypes in DTYPE_CASES:
            for seed in SEEDS:
                try:
                    cases.append(check_case(shapes, dtypes, seed))
                except Exception as exc:
                    cases.append({"shapes": shapes, "dtypes": dtypes, "seed": seed, "status": "error",
                                  "message": f"{type(exc).__name__}: {exc}"})
    failed = [c for c in cases if c["status"] != "pass"]
    status = "pass" if not failed else ("error" if any(c["status"] == "error" for c in failed) else "fail")
    result = {"status": status, "cases_run": len(cases), "cases_failed": len(failed),
              "max_abs_err": max(c.get("max_abs_err", 0.0) for c in cases), "cases": cases}
    print(f"prefix_sum accuracy on {DEVICE}: {len(cases) - len(failed)}/{len(cases)} cases pass")
    if "--json" in sys.argv:
        with open(sys.argv[sys.argv.index("--json") + 1], "w") as handle:
            json.dump(result, handle, indent=1)
    return 0 if status == "pass" else 1


if __name__ == "__main__":
    sys.exit(main())
