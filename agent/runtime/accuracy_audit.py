"""Hold a model-written accuracy test to the contract: it runs every spec case, and it fails a wrong kernel."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from agent.generators.base import KernelFiles
from agent.ir.edges import CPU_MAX_ELEMENTS
from agent.runtime.sandbox import run_file
from agent.spec import OpSpec

AUDITED = "kernel_under_audit"  # the real kernel's module name while the wrong one stands in for it

# Stands in for `<op>_triton.py`: the reference's output, changed everywhere (and NaN at the end). A test that
# compares anything fails it.
_WRONG_KERNEL = '''"""A deliberately wrong kernel: the service checks that the accuracy test fails it."""

import torch
from {audited} import *  # noqa: F403 (DEVICE and whatever else the test imports from the kernel file)
from {op}_baseline import {op} as _reference


def _wrong(value):
    if isinstance(value, torch.Tensor):
        if value.dtype == torch.bool:
            return ~value
        if not value.is_floating_point():
            return value + 1
        wrong = (value * -2 + 1).contiguous()
        if wrong.numel():
            wrong.view(-1)[-1] = float("nan")
        return wrong
    if isinstance(value, tuple | list):
        return type(value)(_wrong(v) for v in value)
    return value


def {op}(*args, **kwargs):
    return _wrong(_reference(*args, **kwargs))
'''


def missing_cases(result: dict[str, Any], spec: OpSpec, device: str) -> str | None:
    """Say which of the spec's cases (each shape in each dtype) the test's JSON does not show it ran, or None."""
    ran = {_key(c.get("shapes"), c.get("dtypes")) for c in result.get("cases", []) if c.get("status") is not None}
    wanted = [(shapes, dtypes) for shapes in spec.shape_cases() for dtypes in spec.dtype_cases()
              if not (device == "cpu" and _largest(shapes) > CPU_MAX_ELEMENTS)]  # the interpreter skips these
    missing = [(s, d) for s, d in wanted if _key(s, d) not in ran]
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
    if run.status != "pass":
        return None
    return (f"{files.name_of('accuracy')} passed a deliberately wrong kernel (the reference's output times -2 plus "
            "1, NaN in its last element): it compares nothing. It must compare every output element with the "
            "reference and fail on any mismatch or NaN")


def _key(shapes: Any, dtypes: Any) -> str:
    try:
        return json.dumps([shapes, dtypes], sort_keys=True)
    except (TypeError, ValueError):  # whatever a model's JSON held: it matches no case
        return repr([shapes, dtypes])


def _largest(shapes: dict[str, list[int]]) -> int:
    return max((math.prod(s) for s in shapes.values()), default=0)
