"""Hold a model-written accuracy test to the contract: it runs every spec case, and it fails a wrong kernel."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from agent.generators.base import KernelFiles
from agent.ir.edges import CPU_MAX_ELEMENTS
from agent.runtime.sandbox import run_file
from agent.spec import OpSpec

AUDITED = "kernel_under_audit"  # the real kernel's module name while the wrong one stands in for it

# Stands in for `<op>_triton.py`: every name of the real kernel module (underscored ones too), with the entry point
# replaced by the reference's output changed everywhere (and NaN at the end). A test that compares anything fails it.
_WRONG_KERNEL = '''"""A deliberately wrong kernel: the service checks that the accuracy test fails it."""

import torch
import {audited} as _audited
from {op}_baseline import {op} as _reference

globals().update({{name: value for name, value in vars(_audited).items() if not name.startswith("__")}})


def _wrong(value):
    if isinstance(value, torch.Tensor):
        if not value.is_floating_point() and not value.is_complex():
            return ~value  # booleans flipped, integers to -value - 1: beyond any tolerance
        wrong = (value * -2 + 1).contiguous()
        if wrong.numel():
            wrong.view(-1)[-1] = float("nan")
        return wrong
    if isinstance(value, tuple | list):
        items = [_wrong(v) for v in value]
        return type(value)(*items) if hasattr(value, "_fields") else type(value)(items)
    return value


def {op}(*args, **kwargs):
    return _wrong(_reference(*args, **kwargs))
'''


def missing_cases(result: dict[str, Any], spec: OpSpec, device: str) -> str | None:
    """Say which of the spec's cases (each shape in each dtype) the test's JSON does not show it ran, or None."""
    ran = [c for c in result.get("cases", []) if c.get("status") in ("pass", "fail", "error")]
    wanted = [(shapes, dtypes) for shapes in spec.shape_cases() for dtypes in spec.dtype_cases()
              if not (device == "cpu" and _largest(shapes) > CPU_MAX_ELEMENTS)]  # the interpreter skips these
    missing = [(s, d) for s, d in wanted if not any(_covers(c, s, d) for c in ran)]
    if not missing:
        return None
    shown = "; ".join(", ".join(f"{n} {s[n]} {d.get(n, '')}".strip() for n in s) for s, d in missing[:4])
    return (f"the accuracy test ran {len(wanted) - len(missing)} of the {len(wanted)} cases the spec lists (each "
            f"spec shape in each dtype); missing: {shown}{' ...' if len(missing) > 4 else ''}. It must run every "
            "one and list each case's shapes and dtypes in its JSON")


def passes_a_wrong_kernel(files: KernelFiles, workdir: Path, *, device: str, timeout_s: float) -> str | None:
    """Run the accuracy test against a deliberately wrong kernel; say so when it still passes, else None."""
    op = files.op
    sources = dict(files.files) | {f"{AUDITED}.py": files.source("triton"),
                                   files.name_of("triton"): _WRONG_KERNEL.format(op=op, audited=AUDITED)}
    run = run_file(sources, files.name_of("accuracy"), workdir, device=device, timeout_s=timeout_s)
    name = files.name_of("accuracy")
    if run.status in ("fail", "error"):  # it said so in its JSON: it can fail
        return None
    if run.status == "pass":
        return (f"{name} passed a deliberately wrong kernel (the reference's output times -2 plus 1, NaN in its last "
                "element): it compares nothing. It must compare every output element with the reference and fail "
                "on any mismatch or NaN")
    return (f"{name} did not report a deliberately wrong kernel's failure in its JSON ({run.status}: "
            f"{(run.stderr_tail or str(run.result.get('message', '')))[-300:]}): it must write its result, failing "
            "cases included, whatever the kernel does")


def _covers(case: dict[str, Any], shapes: dict[str, list[int]], dtypes: dict[str, str]) -> bool:
    """Tell whether a reported case is this spec case: every input's shape, and each dtype it names, match."""
    got_shapes, got_dtypes = case.get("shapes"), case.get("dtypes")
    if not isinstance(got_shapes, dict) or not isinstance(got_dtypes, dict):
        return False
    try:
        same_shapes = all(name in got_shapes and [int(d) for d in got_shapes[name]] == list(shape)
                          for name, shape in shapes.items())
    except (TypeError, ValueError):
        return False
    named = [name for name in dtypes if name in got_dtypes]
    same_dtypes = all(str(got_dtypes[name]).removeprefix("torch.") == dtypes[name] for name in named)
    return same_shapes and same_dtypes and bool(named)


def _largest(shapes: dict[str, list[int]]) -> int:
    """Return the element count of a case's largest input."""
    return max((math.prod(s) for s in shapes.values()), default=0)
