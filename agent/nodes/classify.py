"""Stage 4e: classify the edit from the code itself and enforce what it may touch."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from agent.context import JobContext
from agent.edit_types import classify_edit, signature_of
from agent.state import JobState


def classify(state: JobState, runtime: Runtime[JobContext]) -> dict[str, Any]:
    """Set the edit type by AST; refuse (and record) an edit that breaks its type's rule."""
    ctx, files, best, pending = runtime.context, state["files"], state["best_files"], state["pending"]
    edit_type = classify_edit(best.source("triton"), files.source("triton"), files.op)
    problem = _rule_broken(edit_type, state)
    if problem is not None:
        refusal = f"round {pending.index} refused ({edit_type} edit): {problem}"
        ctx.report("classify", refusal)
        return {"pending": None, "files": best, "refusals": [*state.get("refusals", []), refusal]}
    ctx.report("classify", f"round {pending.index}: {edit_type} edit")
    return {"pending": pending.model_copy(update={"edit_type": edit_type})}


def _rule_broken(edit_type: str, state: JobState) -> str | None:
    files, best = state["files"], state["best_files"]
    others = ("baseline", "accuracy", "performance")
    if edit_type == "parameter":
        changed = [files.name_of(r) for r in others if files.source(r) != best.source(r)]
        return f"a parameter edit may change only _triton.py, but {changed} changed too" if changed else None
    unchanged = [files.name_of(r) for r in others if files.source(r) == best.source(r)]
    if edit_type == "interface" and unchanged:
        return f"an interface edit must regenerate all four files, but {unchanged} did not change"
    if signature_of(files.source("triton"), files.op) != signature_of(files.source("baseline"), files.op):
        return "the entry point's signature differs between _triton.py and _baseline.py"
    for role in ("accuracy", "performance"):
        source = files.source(role)
        if f"from {files.op}_triton import" not in source or f"from {files.op}_baseline import" not in source:
            return f"{files.name_of(role)} no longer imports both the kernel and the baseline"
    return None
