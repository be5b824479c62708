"""Stage 3: the first version of the four files."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from agent.context import JobContext
from agent.state import JobState, RoundRecord


def generate(state: JobState, runtime: Runtime[JobContext]) -> dict[str, Any]:
    """Render the four files at the initial launch configuration."""
    request, spec, ctx = state["request"], state["spec"], runtime.context
    config = request.initial_config or ctx.generator.candidate_configs(spec)[0]
    files = ctx.generator.generate(spec, config)
    ctx.report("generate", f"{', '.join(files.files)} ({config.label()})")
    pending = RoundRecord(
        index=0, edit_type="initial", config=config, reason="first version from the offline generator",
        accuracy_status="not run", triton_source=files.source("triton"),
    )
    return {"files": files, "pending": pending, "tried": [config.label()]}
