"""Measure one kernel under several launch configurations in a single process (a parameter search).

Copied next to the four generated files (with harness_common.py) and run in the sandbox:

    python tune_configs.py --plan plan.json --json result.json

The plan names the op, the configurations (values of `<op>_triton.py`'s module
constants, which the wrapper reads at call time), the (shape, dtype) cases and the
tolerances. Each configuration is checked against the PyTorch reference on the
timed inputs, with the accuracy test's own bound (its tolerance() and eager's own
error from float64), then timed with triton.testing.do_bench (median after warm-up) on an
accelerator, or with a wall clock in the CPU interpreter (not a performance figure).
"""

import importlib
import math
import statistics
import sys
import time
from typing import Any

from harness_common import float64_reference, main_with_plan, poisoned_allocations


def main() -> int:
    """Run the plan and write every configuration's outcome."""
    return main_with_plan(run_plan)


def run_plan(plan: dict) -> dict:
    """Check and time every configuration of the plan."""
    op = plan["op"]
    kernel = importlib.import_module(f"{op}_triton")
    performance = importlib.import_module(f"{op}_performance")
    reference = importlib.import_module(f"{op}_baseline")
    import torch

    device = kernel.DEVICE
    entry, ref = getattr(kernel, op), getattr(reference, op)
    timer = "do_bench median" if device != "cpu" else "wall clock median (CPU interpreter: not a performance figure)"
    cases: list[dict] = []
    for shape_index, dtype_index in plan["cases"]:
        shapes, dtypes = performance.SPEC_CASES[shape_index], performance.DTYPE_CASES[dtype_index]
        inputs = performance.make_inputs(shapes, dtypes, seed=100 + len(cases), device=device)
        want = float64_reference(ref, inputs, performance.PARAMS)
        rtol, atol, slack = accuracy_bound(op, ref(*inputs, **performance.PARAMS), want, shapes,
                                           plan["tolerances"][next(iter(dtypes.values()))])
        cases.append({"shapes": shapes, "dtypes": dtypes, "inputs": inputs, "want": want, "rtol": rtol, "atol": atol,
                      "slack": slack})
    original = {name: getattr(kernel, name) for name in plan["configs"][0]}
    trials = []
    for constants in plan["configs"]:
        for name, value in constants.items():
            setattr(kernel, name, value)
        trials.append(trial(entry, constants, cases, performance.PARAMS, device, torch))
    for name, value in original.items():
        setattr(kernel, name, value)
    return {"status": "pass", "device": device, "timer": timer, "trials": trials,
            "cases": [{"shapes": c["shapes"], "dtypes": c["dtypes"]} for c in cases]}


def accuracy_bound(op: str, eager: Any, want: Any, shapes: dict, spec_tolerance: list) -> tuple[float, float, float]:
    """Return (rtol, atol, slack): the accuracy test's own bound for this case, so a search never rejects a version
    that test passes (its atol scaled for sums and products, and eager PyTorch's own distance from float64 as slack).
    """
    import torch

    rtol, atol = spec_tolerance
    try:  # the generated accuracy test's tolerance(); a model-written one may have none
        accuracy = importlib.import_module(f"{op}_accuracy")
        rtol, atol = accuracy.tolerance(eager.dtype, shapes)
    except Exception:  # noqa: BLE001, S110 (the spec's tolerances stand)
        pass
    eager = eager.detach().to(want.device).double()
    finite = torch.isfinite(eager) & torch.isfinite(want)
    slack = float((eager - want)[finite].abs().max()) if bool(finite.any()) else 0.0
    return rtol, atol, slack


def trial(entry: Any, constants: dict, cases: list, params: dict, device: str, torch: Any) -> dict:
    """Check one configuration on every case, then time it."""
    case_ms: list[float] = []
    outcome: dict[str, Any] = {"constants": constants, "status": "ok", "case_ms": case_ms}
    try:
        for case in cases:
            with poisoned_allocations(torch):  # an element the kernel never writes reads as NaN, not stale data
                got = entry(*case["inputs"], **params)
            error = (got.to(case["want"].device).double() - case["want"]).abs()
            allowed = case["atol"] + case.get("slack", 0.0) + case["rtol"] * case["want"].abs()
            if not bool(torch.isfinite(got).all()) or bool((error > allowed).any()):
                outcome.update(status="wrong", message=f"mismatch on {case['shapes']} {case['dtypes']}: max error "
                               f"{error.max():.3e}, over the accuracy test's bound |got - ref| <= "
                               f"{case['atol']:.1e} + {case.get('slack', 0.0):.1e} (eager's own error) + "
                               f"{case['rtol']:.1e} * |ref|")
                return outcome
        for case in cases:
            case_ms.append(bench(lambda c=case: entry(*c["inputs"], **params), device, torch))
    except Exception as exc:  # a configuration may not compile or may not fit: record it and go on
        outcome.update(status="error", message=f"{type(exc).__name__}: {str(exc)[:300]}")
        return outcome
    outcome["ms"] = math.exp(sum(math.log(ms) for ms in case_ms) / len(case_ms))
    return outcome


def bench(fn: Any, device: str, torch: Any) -> float:
    """Time fn in milliseconds: device-event median on an accelerator, wall clock in the interpreter."""
    if device != "cpu":
        import triton.testing

        return float(triton.testing.do_bench(fn, warmup=25, rep=100, return_mode="median"))
    fn()
    samples = []
    for _ in range(3):
        started = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - started) * 1e3)
    return statistics.median(samples)


if __name__ == "__main__":
    sys.exit(main())
