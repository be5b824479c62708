"""Time a model-written kernel and its reference with inputs and timers the service controls.

Copied next to the four files (with harness_common.py) and run in the sandbox:

    python time_entry.py --plan plan.json --json result.json

For every spec shape and dtype: fresh standard-normal inputs, one checked call, then
triton.testing.do_bench (median after warm-up, L2 flushed between runs) of the kernel and of the
PyTorch reference, in turns, ROUNDS times each; each time is the median of its rounds, as in the
offline performance test. Bytes are each input read once plus the output written once. The result has the
fields of the offline performance test, so the roofline and the diagnosis read it the same way.
"""

import math
import statistics
import sys

from harness_common import float64_reference, import_entries, main_with_plan, random_inputs

SUSPECT_SHARE_OF_COPY = 1.10
# Kernel and reference take turns, ROUNDS of ROUND_MS each: a drift of the clocks falls on both alike.
ROUNDS = 3
ROUND_MS = 70


def main() -> int:
    """Run the plan and write the figures."""
    return main_with_plan(measure, passing=("pass", "skipped"))


def measure(plan: dict) -> dict:
    """Time every spec case on the accelerator; report skipped on the CPU."""
    entry, ref = import_entries(plan)
    device = plan["device"]
    if device == "cpu":
        return {"status": "skipped", "reason": "not measured: no accelerator (CPU interpreter)", "timer": "service"}
    import torch
    import triton.testing

    params = plan["params"]

    def bench(fn, rep: int = 200) -> float:
        return float(triton.testing.do_bench(fn, warmup=50, rep=rep, return_mode="median"))

    source = torch.randn(64 * 1024 * 1024, device=device)
    target = torch.empty_like(source)
    copy_gbs = 2 * source.numel() * 4 / (bench(lambda: target.copy_(source)) * 1e-3) / 1e9
    cases: list = []
    for shapes in plan["shape_cases"]:
        for dtypes in plan["dtype_cases"]:
            inputs = random_inputs(torch, plan["inputs"], shapes, dtypes, len(cases), device, plan.get("index_inputs"))
            out = entry(*inputs, **params)
            # The timed call must compute the right thing: checked against the float64 reference, not against
            # eager PyTorch in low precision (its own rounding differs from a float32-accumulating kernel).
            expected = float64_reference(ref, inputs, params)
            rtol, atol = plan["tolerances"][str(out.dtype).replace("torch.", "")]
            got = out.detach().to(expected.device).double()
            finite = torch.isfinite(expected)
            if not bool(((got - expected).abs() <= atol + rtol * expected.abs())[finite].all()):
                return {"status": "fail", "message": f"the kernel disagrees with the reference on {shapes} {dtypes}"}
            n_bytes = sum(t.numel() * t.element_size() for t in inputs) + out.numel() * out.element_size()
            rounds: tuple[list[float], list[float]] = ([], [])
            for _ in range(ROUNDS):
                rounds[0].append(bench(lambda args=inputs: entry(*args, **params), ROUND_MS))
                rounds[1].append(bench(lambda args=inputs: ref(*args, **params), ROUND_MS))
            triton_ms, eager_ms = (statistics.median(times) for times in rounds)
            gbs = n_bytes / (triton_ms * 1e-3) / 1e9
            case = {"shapes": shapes, "dtypes": dtypes, "bytes": n_bytes, "triton_ms": triton_ms,
                    "eager_ms": eager_ms, "speedup": eager_ms / triton_ms, "gbs": gbs,
                    "tflops": plan["flops_per_output"] * out.numel() / (triton_ms * 1e-3) / 1e12,
                    "pct_of_copy": 100.0 * gbs / copy_gbs, "bound_ms": n_bytes / copy_gbs / 1e6}
            if gbs > SUSPECT_SHARE_OF_COPY * copy_gbs:
                case["suspect"] = "faster than the measured copy bandwidth allows: check the timing"
            cases.append(case)
    speedups = [c["speedup"] for c in cases]
    return {"status": "pass", "timer": "service", "device_name": torch.cuda.get_device_name() if device == "cuda"
            else str(getattr(torch, device).get_device_name()), "copy_gbs": copy_gbs, "cases": cases,
            "speedup_geomean": math.exp(sum(math.log(s) for s in speedups) / len(speedups)),
            "pct_of_copy_min": min(c["pct_of_copy"] for c in cases)}


if __name__ == "__main__":
    sys.exit(main())
