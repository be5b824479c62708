"""Stage 4d (LLM): carry out the model's proposed change on the best version; the code decides the edit type."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from agent.context import JobContext
from agent.llm.authoring import edit as ask_edit
from agent.llm.changes import apply_changes
from agent.llm.client import LlmError
from agent.llm.replies import DiagnosisReply
from agent.state import JobState, RoundRecord


def llm_edit(state: JobState, runtime: Runtime[JobContext]) -> dict[str, Any]:
    """Ask the model for the change, merge it, classify it by AST and enforce its rule."""
    ctx, spec, rounds = runtime.context, state["spec"], state["rounds"]
    assert ctx.llm is not None and state.get("llm_proposal") is not None and state["best_round"] is not None
    proposal = DiagnosisReply.model_validate(state["llm_proposal"])
    best_record, best = rounds[state["best_round"]], state["best_files"]
    key = f"llm: {proposal.change[:80]}"
    try:
        changed = ask_edit(ctx.llm, spec, state["device"], best, proposal, definition=state.get("definition", ""))
        change = apply_changes(ctx.llm, spec, state["device"], best, changed)
    except LlmError as exc:
        message = f"the LLM could not carry out the change ({proposal.change[:120]}): {exc}"
        ctx.report("edit", message)
        return {"llm_error": message, "message": message, "llm_proposal": None, "pending": None}
    index = len(rounds)
    declared = "" if proposal.edit_type == change.edit_type else f" (the model called it {proposal.edit_type})"
    notes = "; ".join(change.notes)
    pending = RoundRecord(
        index=index, edit_type=change.edit_type, config=change.files.config, origin="llm",
        reason=proposal.change + declared + (f"; {notes}" if notes else ""), accuracy_status="not run",
        action=key, base_index=best_record.index,
        diagnosis={"bottleneck": proposal.bottleneck, "evidence": {"model": proposal.evidence},
                   "change": proposal.change, "predicted_gain": proposal.predicted_gain},
        triton_source=change.files.source("triton"), diff=change.diff(best, f"v{best_record.index}", f"v{index}"),
    )
    if change.problem is not None:
        pending = pending.model_copy(update={"accuracy_status": "refused", "verdict": change.problem})
        ctx.report("edit", f"round {index} refused ({change.edit_type} edit): {change.problem}")
    else:
        ctx.report("edit", f"round {index}: {change.edit_type} edit{declared}: {proposal.change[:160]}")
    return {"files": change.files, "pending": pending, "llm_proposal": None,
            "done": [*state.get("done", []), key]}
