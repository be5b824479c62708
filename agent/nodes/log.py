"""Stage 5: record the measured round, keep the best version, append to the log."""

from __future__ import annotations

import json
from typing import Any

from langgraph.runtime import Runtime

from agent.context import JobContext
from agent.documents import render
from agent.output import write_artifact
from agent.state import JobState, RoundRecord
from storage import crud
from storage.models import Round

# A later round must beat the best by more than timing noise to replace it.
MIN_GAIN = 0.01


def log(state: JobState, runtime: Runtime[JobContext]) -> dict[str, Any]:
    """Decide whether the round is kept, then write it to the folder and the database."""
    ctx, spec, pending = runtime.context, state["spec"], state["pending"]
    rounds = list(state.get("rounds", []))
    best_index = state.get("best_round")
    best = rounds[best_index] if best_index is not None else None
    accepted, verdict = _judge(pending, best)
    record = pending.model_copy(update={"accepted": accepted, "verdict": verdict})
    rounds.append(record)
    out_dir, job_id = state["out_dir"], state["job_id"]
    files = state["files"]
    write_artifact(ctx.engine, job_id, out_dir, f"rounds/round_{record.index}/{files.name_of('triton')}",
                   files.source("triton"), record.index)
    section = render(
        "round.md.j2", r=record, best=best, target=spec.target_speedup, device=state["device"].name,
        shapes=", ".join(str(c) for c in spec.shape_cases()), fmt=_fmt,
    )
    previous = "" if not rounds[:-1] else _read_log(ctx, job_id)
    header = f"# Optimization log: `{spec.name}`\n\n" if not previous else ""
    write_artifact(ctx.engine, job_id, out_dir, "optimization_log.md", previous + header + section)
    crud.add_round(ctx.engine, job_id, Round(
        job_id=job_id, index=record.index, edit_type=record.edit_type, config=record.config.label(),
        reason=record.reason, accuracy_status=record.accuracy_status,
        performance_status=record.performance_status, speedup=record.speedup, pct_of_copy=record.pct_of_copy,
        accepted=accepted, verdict=verdict,
        figures_json=json.dumps({"accuracy": record.accuracy, "performance": record.performance}, default=str),
    ))
    ctx.report("log", f"round {record.index}: {verdict}")
    updates: dict[str, Any] = {"rounds": rounds, "pending": None}
    if accepted:
        updates |= {"best_round": len(rounds) - 1, "best_files": files}
    return updates


def _judge(pending: RoundRecord, best: RoundRecord | None) -> tuple[bool, str]:
    if pending.accuracy_status != "pass":
        return False, f"failed accuracy ({pending.accuracy_status}): reverted, the best version stays"
    if best is None:
        return True, "first verified version: kept"
    if pending.speedup is None or best.speedup is None:
        return False, "not measured, so it cannot beat the best version: reverted"
    gain = pending.speedup / best.speedup - 1
    if gain > MIN_GAIN:
        return True, f"{100 * gain:+.1f}% over v{best.index}: kept as the new best"
    return False, f"{100 * gain:+.1f}% against v{best.index} (not above {100 * MIN_GAIN:.0f}% noise): reverted"


def _read_log(ctx: JobContext, job_id: int) -> str:
    for artifact in crud.list_artifacts(ctx.engine, job_id):
        if artifact.name == "optimization_log.md":
            return artifact.content
    return ""


def _fmt(value: float | None, pattern: str) -> str:
    return "not measured" if value is None else pattern.format(value)
