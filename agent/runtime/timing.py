"""Time a model-written kernel with the service's own harness (the model's timing file is not trusted)."""

from __future__ import annotations

from pathlib import Path

from agent.generators.base import KernelFiles
from agent.runtime.harnesses import entry_plan, run_harness
from agent.runtime.sandbox import SandboxResult
from agent.spec import OpSpec

# The model's own performance file may report a speedup this far from the service's before it is flagged.
DISAGREEMENT = 0.25


def time_entry(files: KernelFiles, spec: OpSpec, workdir: Path, *, device: str, timeout_s: float) -> SandboxResult:
    """Time every spec case of the kernel and its reference with do_bench, in the sandbox."""
    plan = entry_plan(files, spec, device) | {"shape_cases": spec.shape_cases(),
                                              "flops_per_output": spec.flops_per_output}
    return run_harness(files.files, "time_entry.py", plan, workdir, device=device, timeout_s=timeout_s)


def disagreement(service: float | None, model: float | None) -> str | None:
    """Say when the model's file reports a speedup far from the service's measurement."""
    if service is None or model is None or service <= 0:
        return None
    if abs(model / service - 1) > DISAGREEMENT:
        return (f"the model's performance file reports x{model:.2f} but the service measured x{service:.2f}; "
                "the service's figure is used")
    return None
