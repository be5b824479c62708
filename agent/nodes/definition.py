"""Stage 2: the operator definition document, with figures computed from the spec."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from agent.analysis import analyse
from agent.context import JobContext
from agent.diagnosis import PatternHint
from agent.documents import render
from agent.output import write_artifact
from agent.runtime.devices import detect
from agent.state import JobState
from storage import crud


def definition(state: JobState, runtime: Runtime[JobContext]) -> dict[str, Any]:
    """Detect the device, compute bytes/FLOPs/roofline and write definition.md."""
    request, spec, ctx = state["request"], state["spec"], runtime.context
    try:
        device = detect(request.device)
    except RuntimeError as exc:
        ctx.report("definition", str(exc))
        return {"status": "failed", "message": str(exc)}
    analysis = analyse(spec, device)
    config = request.initial_config or ctx.generator.default_config(spec, "flat", device)
    text = render(
        "definition.md.j2", spec=spec, device=device, analysis=analysis,
        request_text=request.spec_text.strip(), config=config,
        out_shapes=", ".join(dict.fromkeys(str(c.out_shape) for c in analysis.cases)),
    )
    write_artifact(ctx.engine, state["job_id"], state["out_dir"], "definition.md", text)
    bound = min(c.bound_ms for c in analysis.cases)
    ctx.report("definition", f"{device.kind} ({device.name}); memory-bound, best case bound {bound:.4f} ms")
    category = ctx.generator.category(spec)
    patterns = [
        PatternHint.model_validate(p, from_attributes=True)
        for p in crud.list_patterns(ctx.engine, device=device.name, category=category)
    ]
    if patterns:
        helped = sum(1 for p in patterns if p.times_helped)
        ctx.report("definition", f"{len(patterns)} optimization patterns known for {category} on {device.name} "
                   f"({helped} helped before): they order this job's search")
    return {"device": device, "definition": text, "category": category, "patterns": patterns}
