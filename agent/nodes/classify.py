"""Stage 4e: classify the edit from the code itself and enforce what it may touch."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from agent.context import JobContext
from agent.edit_rules import check_edit_rule
from agent.edit_types import classify_edit
from agent.state import JobState


def classify(state: JobState, runtime: Runtime[JobContext]) -> dict[str, Any]:
    """Set the edit type by AST; refuse (and record) an edit that breaks its type's rule."""
    ctx, files, best, pending = runtime.context, state["files"], state["best_files"], state["pending"]
    edit_type = classify_edit(best.source("triton"), files.source("triton"), files.op)
    problem = check_edit_rule(edit_type, best.files, files.files, files.op)
    if problem is not None:
        refusal = f"round {pending.index} refused ({edit_type} edit): {problem}"
        ctx.report("classify", refusal)
        return {"pending": None, "files": best, "refusals": [*state.get("refusals", []), refusal]}
    ctx.report("classify", f"round {pending.index}: {edit_type} edit")
    return {"pending": pending.model_copy(update={"edit_type": edit_type})}
