"""Check a model-written kernel against its reference independently of the model's own accuracy test.

Copied next to the four files (with harness_common.py) and run in the sandbox:

    python cross_check.py --plan plan.json --json result.json

Inputs are fresh standard-normal tensors made here (not by the generated files), for every spec and edge
shape, every dtype and several seeds. Outputs the kernel allocates are filled with NaN first, so an
unwritten element fails. The entry point runs under the launch guard (launch_guard.py): a result torch computed
beside its Triton kernels fails. The reference runs in float64 (on a CUDA GPU with room, else the CPU); a
case passes when |out - ref| <= atol + rtol * |ref| everywhere and the shape and dtype match eager PyTorch.
"""

import importlib
import math
import sys

from harness_common import float64_reference, import_entries, main_with_plan, poisoned_allocations, random_inputs
from launch_guard import launch_guard, launch_refusal


def main() -> int:
    """Run the plan and write every case's outcome."""
    return main_with_plan(run_plan)


def run_plan(plan: dict) -> dict:
    """Compare the kernel with the float64 reference on every case of the plan."""
    entry, ref = import_entries(plan)
    import torch

    device = plan["device"]
    previous = None
    if plan.get("previous_reference"):
        previous = getattr(importlib.import_module(plan["previous_reference"]), plan["op"])
    spec_ref = getattr(importlib.import_module(plan["spec_reference"]), plan["op"]) if plan.get("spec_reference") \
        else None
    params = plan["params"]
    cases, skipped = [], []
    for case in plan["cases"]:
        shapes = case["shapes"]
        size = max(math.prod(s) for s in shapes.values())
        if device == "cpu" and size > plan["cpu_max_elements"]:
            skipped.append({"kind": case["kind"], "shapes": shapes, "reason": "too large for the CPU interpreter"})
            continue
        if case["kind"] == "probe" and not takes(torch, ref, plan["inputs"], shapes, plan["dtype_cases"][0], device,
                                                 params):
            skipped.append({"kind": "probe", "shapes": shapes, "reason": "the reference does not take these shapes"})
            continue
        for dtypes in plan["dtype_cases"]:
            for seed in plan["seeds"]:
                row = {"kind": case["kind"], "shapes": shapes, "dtypes": dtypes, "seed": seed}
                try:
                    row.update(check(torch, entry, ref, plan["inputs"], shapes, dtypes, seed, device, params,
                                     plan["tolerances"], previous, spec_ref, plan.get("index_inputs")))
                except Exception as exc:  # a crash on one case is that case's result
                    row.update(status="error", message=clip(f"{type(exc).__name__}: {exc}", 500))
                cases.append(row)
    failed = [c for c in cases if c["status"] != "pass"]
    return {"status": "pass" if cases and not failed else "fail", "cases_run": len(cases),
            "cases_failed": len(failed), "cases": cases, "skipped": skipped,
            "message": "" if cases else "no case could run"}


def takes(torch, ref, names, shapes, dtypes, device, params) -> bool:
    """Tell whether the reference accepts a probe's shapes (the dims' relations are guessed for a spec in words)."""
    try:
        ref(*random_inputs(torch, names, shapes, dtypes, 0, device), **params)
    except Exception:  # the reference's refusal, whatever it raises: the probe does not apply
        return False
    return True


def clip(text: str, limit: int) -> str:
    """Shorten a message to its two ends: a compiler error says its cause on its last line."""
    return text if len(text) <= limit else f"{text[:limit // 3]} ... {text[-(limit - limit // 3 - 5):]}"


def check(torch, entry, ref, names, shapes, dtypes, seed, device, params, tolerances, previous=None,
          spec_ref=None, indices=None) -> dict:
    """Run one case and compare it with the reference (the spec's own when given, which the file's must match)."""
    inputs = random_inputs(torch, names, shapes, dtypes, seed, device, indices)
    with poisoned_allocations(torch), launch_guard(torch) as launches:
        out = entry(*inputs, **params)
    if device != "cpu":
        getattr(torch, device).synchronize()
    refusal = launch_refusal(launches, out, torch)
    if refusal is not None:
        return {"status": "fail", "message": refusal}
    eager = ref(*inputs, **params)
    expected = float64_reference(ref, inputs, params)
    if tuple(out.shape) != tuple(eager.shape) or out.dtype != eager.dtype:
        return {"status": "fail", "message": f"got {tuple(out.shape)} {out.dtype}, expected "
                                             f"{tuple(eager.shape)} {eager.dtype}"}
    got = out.detach().to(expected.device).double()
    rtol, atol = tolerances[str(out.dtype).replace("torch.", "")]
    if previous is not None:
        before = float64_reference(previous, inputs, params).to(expected.device)
        if tuple(before.shape) != tuple(expected.shape) or not bool(torch.allclose(
                before, expected, rtol=1e-6, atol=1e-9, equal_nan=True)):
            return {"status": "fail", "message": "the rewritten reference disagrees with the previous one: an "
                                                 "interface edit may not change what the operator computes"}
    if spec_ref is not None:
        ours = float64_reference(spec_ref, inputs, params).to(expected.device)
        if tuple(ours.shape) != tuple(expected.shape) or not bool(torch.allclose(
                ours.double(), expected.double(), rtol=1e-6, atol=1e-9, equal_nan=True)):
            return {"status": "fail", "message": "the reference file computes something other than the spec's "
                                                 "reading (checked against the service's own reference)"}
        expected = ours.double()
    error = (got - expected).abs()
    finite = torch.isfinite(expected)
    bad = ~(error <= atol + rtol * expected.abs()) & finite  # where the reference itself is not finite: skip
    bad |= finite & ~torch.isfinite(got)
    relative = error / expected.abs().clamp_min(1e-12)
    row: dict = {"status": "fail" if bool(bad.any()) else "pass",
           "max_abs_err": float(error[finite].nan_to_num(float("inf")).max()) if bool(finite.any()) else 0.0,
           "max_rel_err": float(relative[finite].nan_to_num(float("inf")).max()) if bool(finite.any()) else 0.0,
           "mismatches": int(bad.sum())}
    if bad.any():
        index = int(bad.flatten().nonzero()[0])
        row["first_mismatch"] = {"index": index, "got": float(got.flatten()[index]),
                                 "expected": float(expected.flatten()[index])}
    return row


if __name__ == "__main__":
    sys.exit(main())
