"""Check that an IR reading computes what the user's code computes, on fresh random inputs.

Copied into the sandbox next to code_common.py and user_spec.py (the user's code, verbatim) and run there:

    python check_code.py --json result.json --plan plan.json

The plan gives the IR's PyTorch rendering (`expr`), the IR name of each forward argument (`arguments`), the
module tensor behind each other IR input (`tensors`: IR name -> attribute path), the declared inputs, the
entry, the seeds, integer ranges and positive inputs, the tolerance by dtype, and the run's time limit. For each
seed the module is built afresh (its float parameters moved off their init), inputs are drawn (get_inputs() when
the code has it), and both are evaluated; the result says whether they agree, with the largest absolute and
relative errors. Values that differ in the inputs' dtype are compared again in float64, where one function's
results agree whatever order each side reduces in (a GPU's float32 sum and the CPU's differ). Code too slow on
the CPU for every seed inside half the limit (a large fp16 matmul: PyTorch has no fast fp16 GEMM there) is
checked on the seeds that fit, at least one, and the result says so.
"""

import functools
import json
import math
import time
from typing import Any

import torch
import torch.nn.functional as F
from code_common import Refused, Setup, argument, dtype_name, one_line, prepare, write_result
from torch.fx import symbolic_trace

CHECK_BYTES = 256 * 2**20  # inputs past this are drawn smaller: the check needs values, not the published size
FLOAT64_TOLERANCE = [1e-7, 1e-9]  # rtol, atol: float64 rounding over long reductions stays far below


def main() -> int:
    """Run the plan and write the result file."""
    result_path, plan_path = argument("--json"), argument("--plan")
    assert result_path is not None and plan_path is not None
    try:
        with open(plan_path) as handle:
            plan = json.load(handle)
        result = check(plan)
    except Refused as exc:
        result = {"status": "error", "message": str(exc)}
    except Exception as exc:  # reported as data, in one line
        result = {"status": "error", "message": f"the check failed: {one_line(exc)}"}
    write_result(result_path, result)
    return 0


def check(plan: dict) -> dict:
    """Evaluate the code and the IR on every seed and compare."""
    code = compile(plan["expr"], "<ir>", "eval")
    seeds: list[dict] = []
    notes: list[str] = []
    budget, started = float(plan.get("budget_s") or 0.0), time.perf_counter()
    for seed in plan["seeds"]:
        each = (time.perf_counter() - started) / len(seeds) if seeds else 0.0
        if budget and seeds and each * (len(seeds) + 1) > budget / 2:
            notes.append(f"checked on {len(seeds)} of {len(plan['seeds'])} seeds: one took {each:.0f} s on the CPU")
            break
        setup = prepare(plan["declared"], plan["entry"], seed, perturb=True, ranges=plan.get("ranges"),
                        positive=tuple(plan.get("positive", ())), budget_bytes=CHECK_BYTES)
        notes.extend(n for n in setup.notes if n.startswith("checked with") and n not in notes)
        with torch.no_grad():
            env: dict[str, Any] = {plan["arguments"][n]: t for n, t in setup.tensors.items() if n in plan["arguments"]}
            env.update(_module_tensors(setup, plan["tensors"]))
            try:
                # The expression is the service's rendering of validated IR, not the user's text.
                got = eval(code, {"torch": torch, "F": F, "math": math}, env)  # noqa: S307
            except Exception as exc:
                raise Refused(f"the IR's PyTorch rendering raised {one_line(exc)}") from None
            try:
                expected = setup.call()
            except Exception as exc:
                raise Refused(f"the code raised {one_line(exc)} on seed {seed}'s inputs") from None
            if isinstance(expected, (tuple, list)) and len(expected) == 1:
                expected = expected[0]
        compared = _compare(got, expected, plan["tolerance"])
        if not compared["ok"] and compared["why"].startswith("values differ"):
            again = _in_float64(plan, code, setup)
            if again is not None and again["ok"]:  # one function, rounded differently in its dtype: not a misreading
                note = (f"in {dtype_name(expected.dtype)} the reading and the code differ by up to "
                        f"{compared['max_abs']:.3g} (each one's own rounding: another order of operations); "
                        f"in float64 they agree to {again['max_abs']:.3g}")
                if note.split(" (")[0] not in " ".join(notes):
                    notes.append(note)
                compared = compared | {"ok": True, "why": "", "float64_max_abs": again["max_abs"]}
        seeds.append({"seed": seed, **compared})
    failed = [s for s in seeds if not s["ok"]]
    result = {"status": "fail" if failed else "pass", "seeds": seeds, "notes": notes,
              "max_abs": max(s["max_abs"] for s in seeds), "max_rel": max(s["max_rel"] for s in seeds)}
    if failed:
        result["message"] = f"seed {failed[0]['seed']}: {failed[0]['why']}"
    return result


def _in_float64(plan: dict, code: Any, setup: Setup) -> dict | None:
    """Evaluate the code and the IR again on the same inputs in float64, and compare there (None: it cannot run)."""
    # Float32 results of one function differ with the order of a reduction (a GPU's, a library's): relative 1e-4 over
    # a long row. In float64 that noise is ~1e-12, far below what any misreading (an eps, a dim, a sign) changes.
    try:
        if setup.model is not None:
            setup.model.double()
        setup.values = [v.double() if isinstance(v, torch.Tensor) and v.is_floating_point() else v
                        for v in setup.values]
        with torch.no_grad():
            env: dict[str, Any] = {plan["arguments"][n]: t for n, t in setup.tensors.items() if n in plan["arguments"]}
            env.update(_module_tensors(setup, plan["tensors"]))
            got = eval(code, {"torch": torch, "F": F, "math": math}, env)  # noqa: S307
            expected = setup.call()
    except Exception:
        return None
    if isinstance(expected, (tuple, list)) and len(expected) == 1:
        expected = expected[0]
    return _compare(got, expected, {"float64": FLOAT64_TOLERANCE})


def _module_tensors(setup: Setup, paths: dict[str, str]) -> dict[str, torch.Tensor]:
    """Fetch each module tensor by path: from the module, or from a fresh trace for constants made in forward."""
    found: dict[str, torch.Tensor] = {}
    traced: Any = None
    for name, path in paths.items():
        holder: Any = setup.model
        try:
            found[name] = functools.reduce(getattr, path.split("."), holder)
            continue
        except AttributeError:
            pass
        if traced is None:
            traced = symbolic_trace(setup.target, concrete_args=setup.fixed or None)
        found[name] = functools.reduce(getattr, path.split("."), traced)
    return found


def _compare(got: Any, expected: Any, tolerance: dict[str, list[float]]) -> dict:
    """Compare shapes, dtypes and values: NaN where the code has NaN, |got - expected| <= atol + rtol * |expected|."""
    if not isinstance(expected, torch.Tensor):
        return {"ok": False, "why": f"the code returns {type(expected).__name__}, not a tensor", "max_abs": math.inf,
                "max_rel": math.inf}
    got = torch.as_tensor(got)
    if got.shape != expected.shape or got.dtype != expected.dtype:
        return {"ok": False, "max_abs": math.inf, "max_rel": math.inf,
                "why": f"the IR gives {dtype_name(got.dtype)}{list(got.shape)}, the code "
                       f"{dtype_name(expected.dtype)}{list(expected.shape)}"}
    if not expected.is_floating_point():
        equal = bool(torch.equal(got, expected))
        return {"ok": equal, "why": "" if equal else "integer or boolean values differ",
                "max_abs": 0.0 if equal else math.inf, "max_rel": 0.0 if equal else math.inf}
    if torch.equal(got, expected):  # the usual case, in one pass
        return {"ok": True, "why": "", "max_abs": 0.0, "max_rel": 0.0}
    rtol, atol = tolerance.get(dtype_name(expected.dtype), [1e-5, 1e-6])
    wide = torch.float64 if expected.dtype == torch.float64 else torch.float32
    g, e = got.to(wide), expected.to(wide)
    if not torch.equal(torch.isnan(g), torch.isnan(e)):
        return {"ok": False, "why": "NaN in different places", "max_abs": math.inf, "max_rel": math.inf}
    infinite = torch.isinf(g) | torch.isinf(e)
    if not torch.equal(torch.where(infinite, g, 0.0), torch.where(infinite, e, 0.0)):
        return {"ok": False, "why": "infinities in different places", "max_abs": math.inf, "max_rel": math.inf}
    finite = torch.isfinite(g) & torch.isfinite(e)
    diff = torch.where(finite, g - e, 0.0).abs_()
    scale = torch.where(finite, e, 0.0).abs_()
    max_abs = float(diff.max()) if diff.numel() else 0.0
    max_rel = float((diff / scale.clamp_min(atol)).max()) if diff.numel() else 0.0
    ok = bool((diff <= atol + rtol * scale).all())
    return {"ok": ok, "why": "" if ok else f"values differ (max abs error {max_abs:.3g}, rtol {rtol}, atol {atol})",
            "max_abs": max_abs, "max_rel": max_rel}


if __name__ == "__main__":
    raise SystemExit(main())
