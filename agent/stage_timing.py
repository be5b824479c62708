"""Each stage's wall-clock seconds, kept in the job's state: report.json says where a job's time went."""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from typing import Any, TypeVar, cast

from langgraph.runtime import Runtime

from agent.context import JobContext
from agent.state import JobState

Node = TypeVar("Node", bound=Callable[[JobState, Runtime[JobContext]], dict[str, Any]])


def timed(node: Node) -> Node:
    """Wrap a node so its update also appends {stage, round, seconds} to the state's `stage_seconds`."""

    @functools.wraps(node)
    def run(state: JobState, runtime: Runtime[JobContext]) -> dict[str, Any]:
        started = time.monotonic()
        update = node(state, runtime)
        entry: dict[str, Any] = {"stage": node.__name__, "seconds": round(time.monotonic() - started, 3)}
        pending = update.get("pending", state.get("pending")) if update else state.get("pending")
        if pending is not None:  # the round the stage worked on (a log stage clears it: its round is the last)
            entry["round"] = pending.index
        elif node.__name__ == "log" and state.get("pending") is not None:
            entry["round"] = state["pending"].index
        return {**(update or {}), "stage_seconds": [entry]}

    return cast(Node, run)


def summarize(entries: list[dict[str, Any]]) -> dict[str, Any]:
    """Return total seconds per stage and per round, and the job's sum, for report.json."""
    stages: dict[str, float] = {}
    rounds: dict[str, float] = {}
    for entry in entries:
        stages[entry["stage"]] = round(stages.get(entry["stage"], 0.0) + entry["seconds"], 3)
        if "round" in entry:
            key = str(entry["round"])
            rounds[key] = round(rounds.get(key, 0.0) + entry["seconds"], 3)
    return {"total": round(sum(e["seconds"] for e in entries), 3), "stages": stages, "rounds": rounds,
            "timeline": entries}
