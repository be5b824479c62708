"""Run in the sandbox by `kernelgen.conformance`: each verified kernel of a suite against the suite's own reference.

Standalone (torch only): `python conformance_check.py --json result.json` reads `plan.json` beside it, a list of
cases `{"name", "module", "entry", "family", "inputs": [[name, dtype, shape], ...], "reference": code}`, and writes one
verdict per case. Inputs are fresh (a seed no job uses); the reference is the suite's plain PyTorch, run once on
the inputs upcast to float64 (the truth) and once as they are (eager, whose own distance from the truth widens
the bound). A case passes when its output has the reference's shape and dtype, has NaN exactly where the truth
has, and every element lies within `rtol * |truth| + atol * rms(truth) + |eager - truth|`.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import sys
import time
import traceback
from pathlib import Path
from typing import Any

import torch

SEED = 20261202
DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16, "float64": torch.float64,
          "int64": torch.int64, "int32": torch.int32, "bool": torch.bool}
# (rtol, atol as a share of the truth's rms) per output dtype: a few units of the dtype's rounding.
TOLERANCE = {torch.float32: (1e-4, 1e-5), torch.float16: (2e-3, 1e-3), torch.bfloat16: (1.6e-2, 8e-3)}
# A float32 matrix product may run on tf32 units (Triton's default for a float32 dot, as torch.compile's).
PRODUCT_FP32 = (5e-3, 5e-3)
PRODUCT_FAMILIES = ("matmul", "attention", "conv")


def make_inputs(inputs: list[list[Any]], device: str, seed: int) -> list[torch.Tensor]:
    """Draw one case's inputs: normal floats (positive where the name says variance), indices below the class count."""
    generator = torch.Generator(device="cpu").manual_seed(seed)
    floats = [shape for _, dtype, shape in inputs if DTYPES[dtype].is_floating_point]
    tensors = []
    for name, dtype, shape in inputs:
        kind = DTYPES[dtype]
        if kind.is_floating_point:
            if "var" in name.lower():
                values = torch.rand(shape, generator=generator, dtype=torch.float64) * 3.75 + 0.25
            else:
                values = torch.randn(shape, generator=generator, dtype=torch.float64)
        elif kind == torch.bool:
            values = torch.rand(shape, generator=generator) < 0.5
        else:  # class indices: below the last dim of the first float input that has more dims than they do
            wider = [s for s in floats if len(s) > len(shape)]
            high = wider[0][-1] if wider and shape == wider[0][:len(shape)] else wider[0][1] if wider else 10
            values = torch.randint(0, max(1, high), shape, generator=generator)
        tensors.append(values.to(kind).to(device))
    return tensors


def compare(out: Any, truth: torch.Tensor, eager: torch.Tensor, family: str) -> dict[str, Any]:
    """Return the verdict of one output against the float64 truth, with eager's own distance beside it."""
    if not isinstance(out, torch.Tensor):
        return {"correct": False, "why": f"the kernel returned {type(out).__name__}, not a tensor"}
    if truth.dim() == 0 and out.numel() == 1:
        out = out.reshape(())
    if tuple(out.shape) != tuple(truth.shape):
        return {"correct": False, "why": f"shape {list(out.shape)}, the reference's is {list(truth.shape)}"}
    if out.dtype != eager.dtype:
        return {"correct": False, "why": f"dtype {out.dtype}, the reference's is {eager.dtype}"}
    if not out.dtype.is_floating_point:
        wrong = int((out.cpu() != eager.cpu()).sum())
        return {"correct": wrong == 0, "kernel_err": float(wrong), "eager_err": 0.0,
                "why": f"{wrong} of {out.numel()} values differ" if wrong else ""}
    got, want, ref = out.double(), truth.double(), eager.double()
    nan_want, nan_got = torch.isnan(want), torch.isnan(got)
    if bool((nan_want != nan_got).any()):
        return {"correct": False, "why": f"{int((nan_want != nan_got).sum())} NaN where the reference has none "
                                         "(or the reverse)"}
    keep = ~nan_want
    got, want, ref = got[keep], want[keep], ref[keep]
    if want.numel() == 0:
        return {"correct": True, "kernel_err": 0.0, "eager_err": 0.0, "worst": 0.0, "why": ""}
    rtol, atol = TOLERANCE.get(out.dtype, TOLERANCE[torch.float32])
    if out.dtype == torch.float32 and family in PRODUCT_FAMILIES:
        rtol, atol = PRODUCT_FP32
    finite = torch.isfinite(want)
    if bool((got[~finite] != want[~finite]).any()):
        return {"correct": False, "why": "an infinity where the reference has another value"}
    got, want, ref = got[finite], want[finite], ref[finite]
    scale = float(want.norm()) or 1.0
    rms = scale / math.sqrt(want.numel())
    bound = rtol * want.abs() + atol * rms + (ref - want).abs()
    excess = (got - want).abs() / bound
    worst = float(excess.max())
    return {"correct": worst <= 1.0, "kernel_err": float((got - want).norm()) / scale,
            "eager_err": float((ref - want).norm()) / scale, "worst": worst,
            "why": "" if worst <= 1.0 else f"{int((excess > 1).sum())} of {excess.numel()} values outside the bound "
                                           f"(worst {worst:.1f}x it)"}


def check(case: dict[str, Any], folder: Path, device: str) -> dict[str, Any]:
    """Import one case's kernel and compare it with the reference on fresh inputs."""
    spec = importlib.util.spec_from_file_location(f"case_{case['name']}", folder / case["module"])
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    kernel = getattr(module, case["entry"])
    namespace: dict[str, Any] = {"torch": torch, "F": torch.nn.functional}
    exec(case["reference"], namespace)  # noqa: S102 (the suite's own code: plain PyTorch)
    reference = namespace["reference"]
    inputs = make_inputs(case["inputs"], device, SEED)
    started = time.perf_counter()
    out = kernel(*inputs)
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    seconds = time.perf_counter() - started
    with torch.no_grad():
        truth = reference(*[t.double() if t.is_floating_point() else t for t in inputs])
        eager = reference(*inputs)
    return compare(out, truth, eager, case.get("family", "")) | {"first_call_s": round(seconds, 3)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--json", required=True)
    args = parser.parse_args()
    here = Path(__file__).resolve().parent
    plan = json.loads((here / "plan.json").read_text())
    device = plan["device"]
    verdicts = {}
    for case in plan["cases"]:
        try:
            verdicts[case["name"]] = check(case, here, device)
        except Exception as exc:  # one case's crash is its verdict, not the run's
            verdicts[case["name"]] = {"correct": False, "why": f"{type(exc).__name__}: {str(exc)[:300]}",
                                      "trace": traceback.format_exc()[-1500:]}
        Path(args.json).write_text(json.dumps({"status": "pass", "verdicts": verdicts}))  # each case as it ends
    Path(args.json).write_text(json.dumps({"status": "pass", "verdicts": verdicts}))
    sys.exit(0)


if __name__ == "__main__":
    main()
