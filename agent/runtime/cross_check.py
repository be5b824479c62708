"""Check a model-written kernel against its reference with inputs and cases the service chooses."""

from __future__ import annotations

from pathlib import Path

from agent.generators.base import KernelFiles
from agent.ir.edges import CPU_MAX_ELEMENTS, odd_sizes
from agent.runtime.harnesses import entry_plan, run_harness
from agent.runtime.sandbox import SandboxResult
from agent.runtime.spec_reference import MODULE, spec_reference_module
from agent.spec import OpSpec

SEEDS = [11, 12, 13]  # not the seeds the model's own test uses
PREVIOUS = "previous_reference"  # module name of the reference before an interface edit


def cross_check(
    files: KernelFiles, spec: OpSpec, workdir: Path, *, device: str, timeout_s: float,
    previous_reference: str | None = None,
) -> SandboxResult:
    """Run the independent check in the sandbox: every spec and edge shape, every dtype, three seeds.

    After an interface edit the reference was rewritten too: with the previous one given, the new reference must
    agree with it on every case, so the edit cannot change what the operator computes.
    """
    cases = [{"kind": "spec", "shapes": c} for c in spec.shape_cases()]
    cases += [{"kind": "edge", "shapes": c} for c in spec.edge_cases]
    sources = dict(files.files)
    plan = entry_plan(files, spec, device) | {"cases": cases, "seeds": SEEDS, "cpu_max_elements": CPU_MAX_ELEMENTS}
    if spec.category != "custom":
        # The spec's own reading is the reference; the service adds its own odd shapes, whatever the model lists.
        cases += [{"kind": "edge", "shapes": c} for c in spec.odd_shape_cases() if c not in spec.edge_cases]
        sources[f"{MODULE}.py"] = spec_reference_module(spec)
        plan["spec_reference"] = MODULE
    else:
        # Read in words only: no IR says how the dims relate, so the probes change each size the spec's first case
        # uses, everywhere it appears; a probe the (model's) reference itself refuses is skipped, not failed.
        cases += [{"kind": "probe", "shapes": c} for c in odd_sizes(spec.shape_cases()[0])
                  if c not in spec.edge_cases]
    if previous_reference is not None:
        sources[f"{PREVIOUS}.py"] = previous_reference
        plan["previous_reference"] = PREVIOUS
    return run_harness(sources, "cross_check.py", plan, workdir, device=device, timeout_s=timeout_s)

