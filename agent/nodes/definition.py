"""Stage 2: the operator definition document, with figures computed from the spec."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from agent.analysis import Analysis, analyse
from agent.context import JobContext
from agent.coverage import memory_refusal, planned
from agent.definition_figures import change_options, data_reuse, known_patterns, launch_geometry, limits, sizes
from agent.diagnosis import PatternHint
from agent.documents import render
from agent.generators.base import SCHEDULE_NOTES
from agent.llm.authoring import write_definition
from agent.llm.client import LlmError
from agent.output import write_artifact
from agent.runtime.devices import detect
from agent.state import JobState
from storage import crud


def definition(state: JobState, runtime: Runtime[JobContext]) -> dict[str, Any]:
    """Detect the device, compute bytes/FLOPs/roofline and write definition.md (the model adds the strategy)."""
    request, spec, ctx = state["request"], state["spec"], runtime.context
    try:
        device = detect(request.device)
    except RuntimeError as exc:
        ctx.report("definition", str(exc))
        return {"status": "failed", "message": str(exc)}
    analysis = analyse(spec, device)
    too_big = memory_refusal(analysis, device)
    if too_big is not None:  # refused before anything is written or run, with the figure
        ctx.report("definition", too_big)
        return {"status": "rejected", "message": too_big, "device": device}
    out_shapes = ", ".join(dict.fromkeys(str(c.out_shape) for c in analysis.cases))
    refusal = ctx.generator.refusal(spec)
    coverage = planned(analysis, device) if refusal is not None else planned(
        analysis, device, ctx.generator.interpreter_max_elements(spec))
    category = f"{spec.category}/{spec.name}" if refusal is not None else ctx.generator.category(spec)
    patterns = [
        PatternHint.model_validate(p, from_attributes=True)
        for p in crud.list_patterns(ctx.engine, device=device.name, category=category)
    ]
    config = request.initial_config or (
        ctx.generator.default_config(spec, ctx.generator.schedules(spec)[0], device) if refusal is None else None)
    reuse, more = data_reuse(spec, analysis, config)
    figures = {"sizes": sizes(analysis), "reuse": reuse, "reuse_more": more, "limits": limits(),
               "patterns": known_patterns(patterns)}
    if refusal is not None and ctx.llm is not None:
        try:
            reply = write_definition(ctx.llm, spec, device, _figures(analysis))
        except LlmError as exc:
            message = f"the LLM could not write the definition: {exc}"
            ctx.report("definition", message)
            return {"status": "failed", "message": message, "device": device}
        text = render("definition_custom.md.j2", spec=spec, device=device, analysis=analysis, reply=reply,
                      request_text=request.spec_text.strip(), out_shapes=out_shapes, model=ctx.llm.config.model,
                      coverage=coverage, options=[], **figures)
    else:
        options = change_options(ctx.generator, spec, config, device) if config is not None else []
        launch = launch_geometry(spec, config, device) if config is not None else None
        text = render("definition.md.j2", spec=spec, device=device, analysis=analysis, refusal=refusal,
                      request_text=request.spec_text.strip(), config=config, out_shapes=out_shapes,
                      coverage=coverage, schedule_notes=SCHEDULE_NOTES, launch=launch, options=options, **figures)
    write_artifact(ctx.engine, state["job_id"], state["out_dir"], "definition.md", text)
    worst = max(analysis.cases, key=lambda c: c.bound_ms)
    ctx.report("definition", f"{device.kind} ({device.name}); {worst.bound}-bound, largest case bound "
               f"{worst.bound_ms:.4f} ms")
    if device.kind == "cpu":  # said before anything runs: a CPU job is checked, never timed
        asked = spec.reading.device if spec.reading is not None else "auto"
        wanted = f"the spec asks for {asked}, but none is here: " if asked in ("cuda", "npu") else ""
        ctx.report("definition", f"{wanted}this job runs on the CPU through the Triton interpreter: accuracy only, "
                                 "nothing is timed and no optimization round runs")
    if patterns:
        helped = sum(1 for p in patterns if p.times_helped)
        ctx.report("definition", f"{len(patterns)} optimization patterns known for {category} on {device.name} "
                   f"({helped} helped before): they order this job's search")
    return {"device": device, "definition": text, "category": category, "patterns": patterns}


def _figures(analysis: Analysis) -> str:
    return "; ".join(f"{c.shapes} {'/'.join(dict.fromkeys(c.dtypes.values()))}: {c.bytes_read + c.bytes_written:,} "
                     f"bytes, {c.flops:,} FLOPs, {c.intensity:.3f} FLOP/byte, {c.bound}-bound at "
                     f"{analysis.device_name}" for c in analysis.cases)
