"""Stage 1: turn the request text into a validated OpSpec."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from langgraph.runtime import Runtime

from agent.context import JobContext
from agent.parsing import parse_requirements
from agent.spec import SpecError
from agent.state import JobState
from storage import crud


def requirements(state: JobState, runtime: Runtime[JobContext]) -> dict[str, Any]:
    """Parse the spec text; a spec that cannot be read ends the job with the reason."""
    request, ctx = state["request"], runtime.context
    try:
        spec = parse_requirements(request.spec_text)
        updates: dict[str, Any] = {}
        if request.rounds is not None:
            updates["max_rounds"] = max(1, min(request.rounds, 5))
        if request.target_speedup is not None:
            updates["target_speedup"] = request.target_speedup
        if updates:
            spec = spec.model_validate(spec.model_dump() | updates)
    except (SpecError, ValueError) as exc:
        ctx.report("requirements", f"cannot build a kernel from this spec:\n{exc}")
        crud.update_job(ctx.engine, state["job_id"], status="rejected", message=str(exc))
        return {"status": "rejected", "message": str(exc)}
    inputs = ", ".join(f"{t.name} {t.shapes} {'/'.join(t.dtypes)}" for t in spec.inputs)
    ctx.report("requirements", f"{spec.name}: {spec.output} = {spec.formula}; {inputs}")
    out_dir = request.out_dir or str(Path(request.out_root) / spec.name)
    crud.update_job(ctx.engine, state["job_id"], op_name=spec.name, spec_json=spec.model_dump_json(), out_dir=out_dir)
    return {
        "spec": spec, "out_dir": out_dir, "status": "running",
        "rounds": [], "done": [], "refusals": [], "best_round": None,
    }
