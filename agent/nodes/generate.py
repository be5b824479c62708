"""Stage 3: the first version of the four files (offline templates, or the LLM for other operators)."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from agent.context import JobContext
from agent.generators.base import LaunchConfig, parse_label
from agent.llm.authoring import hints_of, write_files
from agent.llm.client import LlmError
from agent.state import JobState, RoundRecord
from storage import crud


def generate(state: JobState, runtime: Runtime[JobContext]) -> dict[str, Any]:
    """Render the four files offline when the generator lowers the IR; else the LLM writes them, or the job ends."""
    request, spec, ctx = state["request"], state["spec"], runtime.context
    refusal = ctx.generator.refusal(spec)
    if refusal is not None:
        if ctx.llm is not None:
            return _from_llm(state, ctx)
        message = (f"read as {spec.formula}, but {refusal}. Configure an OpenAI-compatible endpoint "
                   "(KERNELGEN_LLM_BASE_URL and KERNELGEN_LLM_MODEL) to have a model write it.")
        ctx.report("generate", message)
        crud.update_job(ctx.engine, state["job_id"], status="rejected", message=message)
        return {"status": "rejected", "message": message}
    config, reason = request.initial_config, "first version at the configuration the request asked for"
    offered = ctx.generator.schedules(spec)
    if config is not None and config.schedule not in offered:
        message = (f"read as {spec.formula}; the requested configuration's {config.schedule} schedule is not one "
                   f"the offline generator writes for it (it offers {', '.join(offered)}): start from one of those")
        ctx.report("generate", message)
        crud.update_job(ctx.engine, state["job_id"], status="rejected", message=message)
        return {"status": "rejected", "message": message}
    if config is None:
        config, reason = _best_known(state, set(offered))
    if config is None:
        config = ctx.generator.default_config(spec, offered[0], state["device"])
        reason = "first version from the offline generator at its default configuration"
    if ctx.llm is not None:
        reason += "; the offline kernel is the LLM's starting point for later rounds"
    files = ctx.generator.generate(spec, config)
    ctx.report("generate", f"{', '.join(files.files)} ({config.label()}): {reason}")
    pending = RoundRecord(
        index=0, edit_type="initial", config=config, reason=reason,
        accuracy_status="not run", triton_source=files.source("triton"),
    )
    return {"files": files, "pending": pending}


def _from_llm(state: JobState, ctx: JobContext) -> dict[str, Any]:
    assert ctx.llm is not None
    spec = state["spec"]
    try:
        files = write_files(ctx.llm, spec, state["device"], state["definition"], hints_of(state.get("patterns", [])))
    except LlmError as exc:
        message = f"the LLM could not write the kernel files: {exc}"
        ctx.report("generate", message)
        return {"status": "failed", "message": message}
    reason = f"first version written by {ctx.llm.config.model}"
    ctx.report("generate", f"{', '.join(files.files)}: {reason}")
    pending = RoundRecord(index=0, edit_type="initial", config=files.config, reason=reason, origin="llm",
                          accuracy_status="not run", triton_source=files.source("triton"))
    return {"files": files, "pending": pending}


def _best_known(state: JobState, schedules: set[str]) -> tuple[LaunchConfig | None, str]:
    """Start from the configuration that reached the highest speedup for this category on this device."""
    # A model's change ("llm: ...") was measured on the model's kernel, not on the offline templates.
    helped = [p for p in state.get("patterns", [])
              if p.times_helped and p.best_speedup and not p.change.startswith("llm:")]
    for pattern in sorted(helped, key=lambda p: -(p.best_speedup or 0.0)):
        config = parse_label(pattern.params_after)
        if config is not None and config.schedule in schedules:
            return config, (f"first version at the configuration the pattern store knows for this category and "
                            f"device (`{pattern.change}` reached x{pattern.best_speedup:.2f})")
    return None, ""
