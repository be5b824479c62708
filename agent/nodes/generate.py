"""Stage 3: the first version of the four files."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from agent.context import JobContext
from agent.generators.base import LaunchConfig, parse_label
from agent.state import JobState, RoundRecord


def generate(state: JobState, runtime: Runtime[JobContext]) -> dict[str, Any]:
    """Render the four files at the asked-for, best-known (pattern store) or default configuration."""
    request, spec, ctx = state["request"], state["spec"], runtime.context
    config, reason = request.initial_config, "first version at the configuration the request asked for"
    if config is None:
        config, reason = _best_known(state, set(ctx.generator.schedules(spec)))
    if config is None:
        config = ctx.generator.default_config(spec, "flat", state["device"])
        reason = "first version from the offline generator at its default configuration"
    files = ctx.generator.generate(spec, config)
    ctx.report("generate", f"{', '.join(files.files)} ({config.label()}): {reason}")
    pending = RoundRecord(
        index=0, edit_type="initial", config=config, reason=reason,
        accuracy_status="not run", triton_source=files.source("triton"),
    )
    return {"files": files, "pending": pending}


def _best_known(state: JobState, schedules: set[str]) -> tuple[LaunchConfig | None, str]:
    """Start from the configuration that reached the highest speedup for this category on this device."""
    helped = [p for p in state.get("patterns", []) if p.times_helped and p.best_speedup]
    for pattern in sorted(helped, key=lambda p: -(p.best_speedup or 0.0)):
        config = parse_label(pattern.params_after)
        if config is not None and config.schedule in schedules:
            return config, (f"first version at the configuration the pattern store knows for this category and "
                            f"device (`{pattern.change}` reached x{pattern.best_speedup:.2f})")
    return None, ""
