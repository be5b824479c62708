"""Run one of the service's harnesses in the sandbox, next to a version's files, with a JSON plan."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agent.generators.base import KernelFiles
from agent.runtime.sandbox import SandboxResult, run_file
from agent.spec import OpSpec

HARNESS_DIR = Path(__file__).parent / "harness"
COMMON = HARNESS_DIR / "harness_common.py"
GUARD = HARNESS_DIR / "launch_guard.py"


def entry_plan(files: KernelFiles, spec: OpSpec, device: str) -> dict[str, Any]:
    """Return what a harness needs to call the entry point: op, device, inputs, params, dtypes and tolerances."""
    return {
        "op": files.op, "device": device, "inputs": [t.name for t in spec.inputs],
        "params": {p.name: p.value for p in spec.params}, "dtype_cases": spec.dtype_cases(),
        "tolerances": {d: [t.rtol, t.atol] for d, t in spec.tolerances.items()},
        "index_inputs": {n: [i.data, i.axis, i.ignored] for n, i in spec.index_inputs().items()},
    }


def run_harness(
    files: dict[str, str], harness: str, plan: dict[str, Any], workdir: Path, *, device: str, timeout_s: float,
    trusted: bool = False,
) -> SandboxResult:
    """Copy `harness/<harness>` and its shared helpers beside the files and run it on the plan."""
    script = HARNESS_DIR / harness
    sandbox_files = dict(files) | {script.name: script.read_text(), COMMON.name: COMMON.read_text(),
                                   GUARD.name: GUARD.read_text(), "plan.json": json.dumps(plan)}
    return run_file(sandbox_files, script.name, workdir, device=device, timeout_s=timeout_s,
                    args=("--plan", "plan.json"), trusted=trusted)
