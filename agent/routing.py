"""Pure routers: read the state, name the next node."""

from __future__ import annotations

from typing import Literal

from agent.state import JobState

# Round outcomes that are not a version failing to run or to pass accuracy (nothing to repair).
_NOT_FAILURES = ("pass", "unchanged", "search failed")


def after_requirements(state: JobState) -> Literal["definition", "finalize"]:
    """Go on only with a spec that parsed."""
    return "definition" if state.get("status") not in ("rejected", "failed") and "spec" in state else "finalize"


def after_definition(state: JobState) -> Literal["generate", "finalize"]:
    """Go on only when the device was found, the spec fits it (and the model wrote the analysis, for a custom op)."""
    return "finalize" if state.get("status") in ("failed", "rejected") else "generate"


def after_generate(state: JobState) -> Literal["accuracy", "finalize"]:
    """Test the first version; end the job when nobody could write it."""
    return "finalize" if state.get("status") in ("failed", "rejected") else "accuracy"


def after_accuracy(state: JobState) -> Literal["performance", "log"]:
    """Measure speed only for a version that passed accuracy."""
    pending = state.get("pending")
    return "performance" if pending is not None and pending.accuracy_status == "pass" else "log"


def after_log(state: JobState) -> Literal["repair", "diagnose"]:
    """Repair a version that failed to run or failed accuracy while the LLM has attempts left."""
    rounds = state.get("rounds", [])
    if not rounds or rounds[-1].accuracy_status in _NOT_FAILURES or state.get("llm_error"):
        return "diagnose"
    if state.get("generator", "offline") == "offline":
        return "diagnose"
    return "repair" if state.get("repair_attempts", 0) < state.get("max_repairs", 0) else "diagnose"


def after_repair(state: JobState) -> Literal["accuracy", "log", "diagnose"]:
    """Test the fix; log a refused one (it counts as an attempt); stop when the model is gone."""
    pending = state.get("pending")
    if pending is None:
        return "diagnose"
    return "log" if pending.accuracy_status == "refused" else "accuracy"


def after_diagnosis(state: JobState) -> Literal["edit", "llm_edit", "finalize"]:
    """Edit when diagnosis (rules or model) proposed an action, else finish."""
    if state.get("llm_proposal"):
        return "llm_edit"
    proposal = state.get("proposal")
    return "edit" if proposal is not None and proposal.action is not None else "finalize"


def after_llm_edit(state: JobState) -> Literal["accuracy", "log", "diagnose"]:
    """Test the model's change; log a refused one; stop when the model is gone."""
    return after_repair(state)


def after_search(state: JobState) -> Literal["classify", "log"]:
    """Classify a changed candidate; a search that changed nothing or found nothing correct is only logged."""
    pending = state.get("pending")
    return "log" if pending is None or pending.accuracy_status in ("unchanged", "search failed") else "classify"


def after_classify(state: JobState) -> Literal["accuracy", "diagnose"]:
    """Test an accepted edit; a refused one goes back to diagnosis."""
    return "accuracy" if state.get("pending") is not None else "diagnose"
