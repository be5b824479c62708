"""Pure routers: read the state, name the next node."""

from __future__ import annotations

from typing import Literal

from agent.state import JobState


def after_requirements(state: JobState) -> Literal["definition", "finalize"]:
    """Go on only with a spec that parsed."""
    return "definition" if state.get("status") != "rejected" and "spec" in state else "finalize"


def after_definition(state: JobState) -> Literal["generate", "finalize"]:
    """Go on only when the device was found."""
    return "finalize" if state.get("status") == "failed" else "generate"


def after_accuracy(state: JobState) -> Literal["performance", "log"]:
    """Measure speed only for a version that passed accuracy."""
    pending = state.get("pending")
    return "performance" if pending is not None and pending.accuracy_status == "pass" else "log"


def after_diagnosis(state: JobState) -> Literal["edit", "finalize"]:
    """Edit when diagnosis proposed an action, else finish."""
    proposal = state.get("proposal")
    return "edit" if proposal is not None and proposal.action is not None else "finalize"


def after_search(state: JobState) -> Literal["classify", "log"]:
    """Classify a changed candidate; a search that changed nothing or found nothing correct is only logged."""
    pending = state.get("pending")
    return "log" if pending is None or pending.accuracy_status in ("unchanged", "search failed") else "classify"


def after_classify(state: JobState) -> Literal["accuracy", "diagnose"]:
    """Test an accepted edit; a refused one goes back to diagnosis."""
    return "accuracy" if state.get("pending") is not None else "diagnose"
